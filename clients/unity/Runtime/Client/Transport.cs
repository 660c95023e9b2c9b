// Transport.cs — how CrowdClient reaches a server. Two wire forms of crowd.v1:
//   TCP        every message preceded by its length as a varint (the listener, --listen, 7777);
//   WebSocket  subprotocol crowd.v1, one binary message per protobuf message, at the
//              HTTP listener's /ws (--http, ws://HOST:8080/ws).
// Desktop and editor builds run either on the client's background thread
// (System.Net.Sockets, System.Net.WebSockets.ClientWebSocket). WebGL builds have
// no threads and no sockets: there the browser's WebSocket is reached through
// Plugins/WebGL/CrowdWebSocket.jslib and polled from CrowdClient.Poll.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Net;
using System.Net.Sockets;
using System.Net.WebSockets;
using System.Threading;
using System.Threading.Tasks;
using Crowd.V1;
#if UNITY_WEBGL && !UNITY_EDITOR
using System.Runtime.InteropServices;
#endif

// The polled (WebGL) path is internal; the package's tests and this repository's harness drive it
// over a ClientWebSocket under Mono.
[assembly: System.Runtime.CompilerServices.InternalsVisibleTo("Crowd.Client.Tests")]
[assembly: System.Runtime.CompilerServices.InternalsVisibleTo("crowd-unity-harness")]

namespace Crowd.Client
{
    /// <summary>Which wire a CrowdClient speaks (CrowdClientOptions.Transport).</summary>
    public enum CrowdTransport
    {
        /// <summary>From the address: ws:// or wss:// is WebSocket, tcp://HOST:PORT or HOST:PORT is TCP
        /// (in a WebGL build every address is WebSocket: HOST:PORT means ws://HOST:PORT/ws).</summary>
        Auto,
        Tcp,
        /// <summary>HOST:PORT is then the HTTP listener: ws://HOST:PORT/ws.</summary>
        WebSocket,
    }

    /// <summary>A parsed server address: TCP host and port, or a WebSocket URL.</summary>
    public sealed class CrowdAddress
    {
        /// <summary>The path the server serves its WebSocket on.</summary>
        public const string DefaultWebSocketPath = "/ws";
        /// <summary>The WebSocket subprotocol the server speaks.</summary>
        public const string SubProtocol = "crowd.v1";

        public CrowdTransport Transport { get; private set; }
        public string Host { get; private set; }
        public int Port { get; private set; }
        /// <summary>The WebSocket URL (null for TCP).</summary>
        public Uri Uri { get; private set; }

        CrowdAddress() { }

        public static CrowdAddress Tcp(string host, int port)
        {
            if (string.IsNullOrEmpty(host)) throw new ArgumentNullException("host");
            if (port <= 0 || port > 65535) throw new ArgumentOutOfRangeException("port");
            return new CrowdAddress { Transport = CrowdTransport.Tcp, Host = host, Port = port };
        }

        /// <summary>ws://HOST:PORT/PATH or wss://…; a URL with no path (or just /) gets /ws.</summary>
        public static CrowdAddress WebSocket(Uri uri)
        {
            if (uri == null) throw new ArgumentNullException("uri");
            if (!uri.IsAbsoluteUri || (uri.Scheme != "ws" && uri.Scheme != "wss"))
                throw new ArgumentException("crowd: '" + uri + "' is not a ws:// or wss:// URL");
            if (uri.AbsolutePath == "/") uri = new UriBuilder(uri) { Path = DefaultWebSocketPath }.Uri;
            return new CrowdAddress { Transport = CrowdTransport.WebSocket, Host = uri.Host, Port = uri.Port, Uri = uri };
        }

        /// <summary>Parses "ws://HOST:PORT/ws", "wss://…", "tcp://HOST:PORT" or "HOST:PORT" ("[::1]:PORT" for IPv6).
        /// transport: Tcp or WebSocket insist on that wire (HOST:PORT with WebSocket means ws://HOST:PORT/ws);
        /// Auto follows the address (HOST:PORT is TCP, except in WebGL builds, which only have WebSocket).</summary>
        public static CrowdAddress Parse(string address, CrowdTransport transport = CrowdTransport.Auto)
        {
            if (string.IsNullOrEmpty(address)) throw new ArgumentNullException("address");
            string a = address.Trim();
            if (a.StartsWith("ws://", StringComparison.OrdinalIgnoreCase) || a.StartsWith("wss://", StringComparison.OrdinalIgnoreCase))
            {
                if (transport == CrowdTransport.Tcp)
                    throw new ArgumentException("crowd: '" + address + "' is a WebSocket URL but the transport asked for is Tcp");
                Uri uri;
                if (!Uri.TryCreate(a, UriKind.Absolute, out uri)) throw new ArgumentException("crowd: '" + address + "' is not a valid URL");
                return WebSocket(uri);
            }
            if (a.StartsWith("tcp://", StringComparison.OrdinalIgnoreCase))
            {
                if (transport == CrowdTransport.WebSocket)
                    throw new ArgumentException("crowd: '" + address + "' is a tcp:// address but the transport asked for is WebSocket");
                a = a.Substring(6).TrimEnd('/');
                transport = CrowdTransport.Tcp;
            }
            string host;
            int port;
            if (!SplitHostPort(a, out host, out port))
                throw new ArgumentException("crowd: address '" + address + "' is not HOST:PORT, tcp://HOST:PORT, ws://HOST:PORT/ws or wss://…");
            if (transport == CrowdTransport.Auto) transport = WebGL ? CrowdTransport.WebSocket : CrowdTransport.Tcp;
            if (transport == CrowdTransport.Tcp) return Tcp(host, port);
            bool v6 = host.IndexOf(':') >= 0;
            return WebSocket(new Uri("ws://" + (v6 ? "[" + host + "]" : host) + ":" + port + DefaultWebSocketPath));
        }

        static bool SplitHostPort(string a, out string host, out int port)
        {
            host = null;
            port = 0;
            int colon;
            if (a.StartsWith("[", StringComparison.Ordinal))
            {
                int close = a.IndexOf(']');
                if (close < 0 || close + 1 >= a.Length || a[close + 1] != ':') return false;
                host = a.Substring(1, close - 1);
                colon = close + 1;
            }
            else
            {
                colon = a.LastIndexOf(':');
                if (colon <= 0 || a.IndexOf(':') != colon) return false;
                host = a.Substring(0, colon);
            }
            if (host.Length == 0 || host.IndexOf('/') >= 0) return false;
            return int.TryParse(a.Substring(colon + 1), System.Globalization.NumberStyles.None,
                                System.Globalization.CultureInfo.InvariantCulture, out port) && port > 0 && port <= 65535;
        }

        /// <summary>True in a WebGL player build: only the browser's WebSocket is there.</summary>
        public static bool WebGL
        {
            get
            {
#if UNITY_WEBGL && !UNITY_EDITOR
                return true;
#else
                return false;
#endif
            }
        }

        public override string ToString()
        {
            if (Uri != null) return Uri.ToString();
            return (Host.IndexOf(':') >= 0 ? "[" + Host + "]" : Host) + ":" + Port;
        }
    }

    // ------------------------------------------------------------------ links

    /// <summary>One connection to the server, whichever wire. Send runs under the client's send lock.</summary>
    internal abstract class Link
    {
        public abstract void Send(ClientMessage m);
        /// <summary>Ends the connection now (any thread; idempotent).</summary>
        public abstract void Abort();
        /// <summary>Disconnect: a clean close where the wire has one (WebSocket close handshake), else Abort.</summary>
        public virtual void Close() { Abort(); }
    }

    /// <summary>A link driven by the client's connection thread: Open and ReadFrames block.</summary>
    internal abstract class ThreadedLink : Link
    {
        /// <summary>Handles one whole frame; returns non-null when the connection must end (why).</summary>
        public delegate string FrameHandler(byte[] frame, int offset, int count);

        public abstract void Open();
        /// <summary>Reads frames until the connection ends; returns why it ended (throws on a broken socket).</summary>
        public abstract string ReadFrames(FrameHandler onFrame, Func<bool> stopRequested, Action<int> received, Action<string> fault);
    }

    internal sealed class TcpLink : ThreadedLink
    {
        readonly CrowdAddress address;
        readonly CrowdClientOptions options;
        Socket socket;
        bool aborted;

        public TcpLink(CrowdAddress address, CrowdClientOptions options)
        {
            this.address = address;
            this.options = options;
        }

        public override void Open()
        {
            IPAddress[] addrs = Dns.GetHostAddresses(address.Host);
            if (addrs.Length == 0) throw new SocketException((int)SocketError.HostNotFound);
            var s = new Socket(addrs[0].AddressFamily, SocketType.Stream, ProtocolType.Tcp);
            lock (this)
            {
                if (aborted)
                {
                    s.Close();
                    throw new OperationCanceledException("stopped");
                }
                socket = s;
            }
            try
            {
                ConnectWithin(s, new IPEndPoint(addrs[0], address.Port), options.ConnectTimeoutMs);
                s.NoDelay = true;
                s.SendTimeout = options.SendTimeoutMs;
                s.ReceiveTimeout = options.IdleTimeoutMs > 0 ? options.IdleTimeoutMs : 0;
            }
            catch (Exception)
            {
                Abort();
                throw;
            }
        }

        // Abort cannot wake a wait on a socket that is still connecting (closing it does not end a
        // poll on it): the wait goes in slices of this, each after a look at whether Abort came.
        const int AbortCheckMs = 50;

        // A non-blocking connect, waited for here on the connection thread by asking the socket
        // itself. BeginConnect's completion comes through the runtime's thread pool: on a loaded
        // machine it can come after the timeout although the kernel connected at once, and the
        // client then closed, before any Hello, a connection the server had already accepted. Here
        // a timeout means the connection really did not complete in time.
        void ConnectWithin(Socket s, EndPoint to, int timeoutMs)
        {
            s.Blocking = false;
            try
            {
                s.Connect(to);
            }
            catch (SocketException e)
            {
                if (e.SocketErrorCode != SocketError.WouldBlock && e.SocketErrorCode != SocketError.InProgress) throw;
                var waited = Stopwatch.StartNew();
                var writable = new List<Socket>(1);
                var failed = new List<Socket>(1);
                for (;;)
                {
                    lock (this)
                    {
                        if (aborted) throw new OperationCanceledException("stopped");
                    }
                    long left = timeoutMs < 0 ? AbortCheckMs : timeoutMs - waited.ElapsedMilliseconds;
                    writable.Clear();
                    writable.Add(s);
                    failed.Clear();
                    failed.Add(s); // Windows reports a failed connect here, not as writable
                    Socket.Select(null, writable, failed, (int)Math.Max(0, Math.Min(left, AbortCheckMs)) * 1000);
                    if (writable.Count > 0 || failed.Count > 0) break;
                    // Only once a look made after the deadline found nothing.
                    if (left <= 0) throw new TimeoutException("connect timed out");
                }
                var err = (SocketError)(int)s.GetSocketOption(SocketOptionLevel.Socket, SocketOptionName.Error);
                if (err != SocketError.Success) throw new SocketException((int)err);
            }
            s.Blocking = true;
        }

        public override void Send(ClientMessage m)
        {
            byte[] bytes = FrameSplitter.Delimit(m);
            int off = 0;
            while (off < bytes.Length) off += socket.Send(bytes, off, bytes.Length - off, SocketFlags.None);
        }

        public override string ReadFrames(FrameHandler onFrame, Func<bool> stopRequested, Action<int> received, Action<string> fault)
        {
            var splitter = new FrameSplitter(options.MaxFrameBytes);
            var buf = new byte[64 * 1024];
            while (!stopRequested())
            {
                int n;
                try
                {
                    n = socket.Receive(buf);
                }
                catch (SocketException e)
                {
                    // The receive timeout elapsed (Mono reports it as WouldBlock).
                    bool timedOut = e.SocketErrorCode == SocketError.TimedOut || e.SocketErrorCode == SocketError.WouldBlock;
                    if (!timedOut || options.IdleTimeoutMs <= 0) throw;
                    return "nothing from the server for " + options.IdleTimeoutMs + " ms";
                }
                if (n == 0) return "closed by the server";
                received(n);
                splitter.Push(buf, 0, n);
                for (;;)
                {
                    byte[] frame;
                    int off, len;
                    FrameResult r = splitter.Next(out frame, out off, out len);
                    if (r == FrameResult.NeedMore) break;
                    if (r != FrameResult.Ready)
                    {
                        fault("framing error (" + r + "): reconnecting");
                        return "framing error: " + r;
                    }
                    string end = onFrame(frame, off, len);
                    if (end != null) return end;
                }
            }
            return "disconnected by the client";
        }

        public override void Abort()
        {
            Socket s;
            lock (this)
            {
                aborted = true;
                s = socket;
            }
            if (s == null) return;
            try { s.Shutdown(SocketShutdown.Both); } catch (Exception) { }
            try { s.Close(); } catch (Exception) { }
        }
    }

    /// <summary>crowd.v1 over System.Net.WebSockets.ClientWebSocket (editor, desktop, mobile).</summary>
    internal sealed class WebSocketLink : ThreadedLink
    {
        readonly CrowdAddress address;
        readonly CrowdClientOptions options;
        readonly ClientWebSocket ws = new ClientWebSocket();
        readonly CancellationTokenSource cancel = new CancellationTokenSource();
        int aborted;

        public WebSocketLink(CrowdAddress address, CrowdClientOptions options)
        {
            this.address = address;
            this.options = options;
            ws.Options.AddSubProtocol(CrowdAddress.SubProtocol);
        }

        static Exception Unwrap(Exception e)
        {
            var ae = e as AggregateException;
            if (ae != null && ae.InnerExceptions.Count == 1) e = ae.InnerExceptions[0];
            // "Unable to connect to the remote server" hides a refused or unreachable socket.
            if (e is WebSocketException && e.InnerException is SocketException) e = e.InnerException;
            return e;
        }

        static void Wait(Task t, int timeoutMs, string what)
        {
            bool done;
            try
            {
                done = t.Wait(timeoutMs);
            }
            catch (AggregateException e)
            {
                throw Unwrap(e);
            }
            if (!done) throw new TimeoutException(what + " timed out");
        }

        public override void Open()
        {
            try
            {
                Wait(ws.ConnectAsync(address.Uri, cancel.Token), options.ConnectTimeoutMs, "connect");
            }
            catch (SocketException)
            {
                Abort();
                throw;
            }
            catch (Exception e)
            {
                // Reached something that did not upgrade: say where a crowd server's WebSocket is.
                Abort();
                throw new WebSocketException(e.Message + " (no crowd.v1 WebSocket at " + address.Uri +
                                             "? it is on crowd-server's --http port, path " + CrowdAddress.DefaultWebSocketPath + ")");
            }
            if (ws.SubProtocol != CrowdAddress.SubProtocol)
            {
                Abort();
                throw new WebSocketException("the server did not accept subprotocol " + CrowdAddress.SubProtocol + " (not a crowd server?)");
            }
        }

        public override void Send(ClientMessage m)
        {
            byte[] bytes = ProtoMessage.ToByteArray(m);
            try
            {
                Wait(ws.SendAsync(new ArraySegment<byte>(bytes), WebSocketMessageType.Binary, true, cancel.Token), options.SendTimeoutMs, "send");
            }
            catch (Exception)
            {
                Abort();
                throw;
            }
        }

        public override string ReadFrames(FrameHandler onFrame, Func<bool> stopRequested, Action<int> received, Action<string> fault)
        {
            var buf = new byte[64 * 1024];
            int len = 0;
            while (!stopRequested())
            {
                if (len == buf.Length)
                {
                    // A message longer than the limit is refused before it is all read.
                    if (buf.Length > options.MaxFrameBytes)
                    {
                        fault("message of more than " + options.MaxFrameBytes + " bytes: reconnecting");
                        CloseWith(WebSocketCloseStatus.MessageTooBig, "message too big");
                        return "message too big";
                    }
                    Array.Resize(ref buf, (int)Math.Min((long)buf.Length * 2, (long)options.MaxFrameBytes + 1));
                }
                WebSocketReceiveResult r;
                try
                {
                    var receive = ws.ReceiveAsync(new ArraySegment<byte>(buf, len, buf.Length - len), cancel.Token);
                    if (options.IdleTimeoutMs > 0 && !receive.Wait(options.IdleTimeoutMs))
                    {
                        Abort();
                        return "nothing from the server for " + options.IdleTimeoutMs + " ms";
                    }
                    r = receive.GetAwaiter().GetResult();
                }
                catch (Exception e)
                {
                    if (stopRequested()) return "disconnected by the client";
                    // ClientWebSocket reports a protocol error (or a close code it does not know) as
                    // "Aborted": say what is inside.
                    var inner = e.GetBaseException();
                    throw new WebSocketException("the WebSocket failed" + (ws.State == WebSocketState.Aborted ? " (aborted)" : "") + ": " + inner.Message);
                }
                if (r.MessageType == WebSocketMessageType.Close)
                {
                    string why = "closed by the server (" + (int)(r.CloseStatus ?? 0) + (string.IsNullOrEmpty(r.CloseStatusDescription) ? "" : " " + r.CloseStatusDescription) + ")";
                    if (ws.State == WebSocketState.CloseReceived) CloseWith(WebSocketCloseStatus.NormalClosure, "");
                    return stopRequested() ? "disconnected by the client" : why;
                }
                received(r.Count);
                if (r.MessageType == WebSocketMessageType.Text)
                {
                    fault("text message on a crowd.v1 WebSocket: reconnecting");
                    CloseWith(WebSocketCloseStatus.InvalidMessageType, "binary messages only");
                    return "text message";
                }
                len += r.Count;
                if (len > options.MaxFrameBytes)
                {
                    fault("message of more than " + options.MaxFrameBytes + " bytes: reconnecting");
                    CloseWith(WebSocketCloseStatus.MessageTooBig, "message too big");
                    return "message too big";
                }
                if (!r.EndOfMessage) continue;
                int n = len;
                len = 0;
                string end = onFrame(buf, 0, n);
                if (end != null) return end;
            }
            return "disconnected by the client";
        }

        // Best effort: a close frame, bounded; the socket is aborted if it does not go.
        void CloseWith(WebSocketCloseStatus status, string reason)
        {
            try
            {
                if (!ws.CloseOutputAsync(status, reason, CancellationToken.None).Wait(1000)) Abort();
            }
            catch (Exception)
            {
                Abort();
            }
        }

        public override void Close()
        {
            var st = ws.State;
            if (st == WebSocketState.Open || st == WebSocketState.CloseReceived) CloseWith(WebSocketCloseStatus.NormalClosure, "closed by the client");
            else Abort();
        }

        public override void Abort()
        {
            if (Interlocked.Exchange(ref aborted, 1) != 0) return;
            try { cancel.Cancel(); } catch (Exception) { }
            try { ws.Abort(); } catch (Exception) { }
            try { ws.Dispose(); } catch (Exception) { }
        }
    }

    // ------------------------------------------------------------------ polled (WebGL)

    /// <summary>A WebSocket that is polled rather than read by a thread: the browser's, in WebGL
    /// builds (CrowdWebSocket.jslib). States as the browser's readyState.</summary>
    internal interface IPolledSocket
    {
        /// <summary>0 connecting, 1 open, 2 closing, 3 closed.</summary>
        int ReadyState { get; }
        /// <summary>The next whole binary message, or null. Messages that came before a close stay readable.</summary>
        byte[] NextMessage();
        bool Send(byte[] message);
        void Close(int code, string reason);
        /// <summary>Why it failed or closed, for humans ("" while all is well).</summary>
        string Reason { get; }
    }

    internal delegate IPolledSocket PolledSocketFactory(Uri url, string subprotocol);

    internal sealed class PolledLink : Link
    {
        public readonly IPolledSocket Socket;
        public PolledLink(IPolledSocket socket) { Socket = socket; }

        public override void Send(ClientMessage m)
        {
            if (!Socket.Send(ProtoMessage.ToByteArray(m))) throw new WebSocketException("the WebSocket is not open");
        }

        public override void Abort() { Socket.Close(1000, "closed by the client"); }
    }

#if UNITY_WEBGL && !UNITY_EDITOR
    /// <summary>The browser's WebSocket through Plugins/WebGL/CrowdWebSocket.jslib.</summary>
    internal sealed class BrowserWebSocket : IPolledSocket
    {
        [DllImport("__Internal")] static extern int CrowdWsOpen(string url, string subprotocol);
        [DllImport("__Internal")] static extern int CrowdWsState(int id);
        [DllImport("__Internal")] static extern int CrowdWsNextSize(int id);
        [DllImport("__Internal")] static extern int CrowdWsReceive(int id, [In, Out] byte[] buffer, int capacity);
        [DllImport("__Internal")] static extern int CrowdWsSend(int id, byte[] data, int length);
        [DllImport("__Internal")] static extern void CrowdWsClose(int id, int code, string reason);
        [DllImport("__Internal")] static extern string CrowdWsReason(int id);
        [DllImport("__Internal")] static extern void CrowdWsFree(int id);

        readonly int id;
        bool freed;

        public BrowserWebSocket(Uri url, string subprotocol) { id = CrowdWsOpen(url.ToString(), subprotocol); }

        public static IPolledSocket Open(Uri url, string subprotocol) { return new BrowserWebSocket(url, subprotocol); }

        public int ReadyState { get { return freed ? 3 : CrowdWsState(id); } }

        public byte[] NextMessage()
        {
            if (freed) return null;
            int size = CrowdWsNextSize(id);
            if (size < 0) return null;
            var b = new byte[size];
            CrowdWsReceive(id, b, size);
            return b;
        }

        public bool Send(byte[] message) { return !freed && CrowdWsSend(id, message, message.Length) != 0; }

        public void Close(int code, string reason)
        {
            if (freed) return;
            CrowdWsClose(id, code, reason ?? "");
            // Nothing more is read from it: the client drops a socket it closes.
            CrowdWsFree(id);
            freed = true;
        }

        public string Reason { get { return freed ? "closed by the client" : CrowdWsReason(id) ?? ""; } }
    }
#endif
}
