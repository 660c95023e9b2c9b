// Transport.cs — how CrowdClient reaches a server. Two wire forms of crowd.v1:
//   TCP        every message preceded by its length as a varint (the listener, --listen, 7777);
//   WebSocket  subprotocol crowd.v1, one binary message per protobuf message, at the
//              HTTP listener's /ws (--http, ws://HOST:8080/ws).
// Desktop and editor builds run either on the client's background thread
// (System.Net.Sockets; for WebSocket the upgrade done here, then
// System.Net.WebSockets.WebSocket over the socket). WebGL builds have
// no threads and no sockets: there the browser's WebSocket is reached through
// Plugins/WebGL/CrowdWebSocket.jslib and polled from CrowdClient.Poll.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using System.Net.WebSockets;
using System.Security.Cryptography;
using System.Text;
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

        // Abort cannot wake a wait on a socket that is still connecting (closing it does not end a
        // poll on it): the wait goes in slices of this, each after a look at whether Abort came.
        const int AbortCheckMs = 50;

        // A non-blocking connect, waited for here on the connection thread by asking the socket
        // itself (timeoutMs < 0: no limit). BeginConnect's completion comes through the runtime's
        // thread pool: on a loaded machine it can come after the timeout although the kernel
        // connected at once, and the client then closed, before any Hello, a connection the server
        // had already accepted. Here a timeout means the connection really did not complete in time.
        protected static void ConnectWithin(Socket s, EndPoint to, int timeoutMs, Func<bool> aborted)
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
                    if (aborted()) throw new OperationCanceledException("stopped");
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

        // A connected socket: the host's addresses in turn, until one accepts or the time is up
        // (left(): what is left of the connect timeout in ms, < 0: no limit). `adopt` takes each
        // socket before it connects, so that Abort can close it; false: the link was stopped.
        protected static Socket ConnectAny(string host, int port, Func<int> left, Func<Socket, bool> adopt, Func<bool> aborted)
        {
            IPAddress[] addrs = Dns.GetHostAddresses(host);
            if (addrs.Length == 0) throw new SocketException((int)SocketError.HostNotFound);
            for (int i = 0; ; i++)
            {
                var s = new Socket(addrs[i].AddressFamily, SocketType.Stream, ProtocolType.Tcp);
                if (!adopt(s))
                {
                    s.Close();
                    throw new OperationCanceledException("stopped");
                }
                try
                {
                    ConnectWithin(s, new IPEndPoint(addrs[i], port), left(), aborted);
                    return s;
                }
                catch (SocketException)
                {
                    s.Close();
                    if (i + 1 == addrs.Length) throw;
                }
            }
        }

        // What is left of a timeout of timeoutMs (< 0: none) started by `waited`, in ms (-1: no limit).
        protected static Func<int> TimeLeft(Stopwatch waited, int timeoutMs)
        {
            return () => timeoutMs < 0 ? -1 : (int)Math.Max(0, timeoutMs - waited.ElapsedMilliseconds);
        }
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
            try
            {
                Socket s = ConnectAny(address.Host, address.Port, TimeLeft(Stopwatch.StartNew(), options.ConnectTimeoutMs), Adopt, Aborted);
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

        bool Adopt(Socket s)
        {
            lock (this)
            {
                if (aborted) return false;
                socket = s;
                return true;
            }
        }

        bool Aborted()
        {
            lock (this) return aborted;
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

    /// <summary>crowd.v1 over a WebSocket (editor, desktop, mobile): the connect and the upgrade done
    /// here on the client's thread, then System.Net.WebSockets.WebSocket over a BlockingStream.</summary>
    // Not ClientWebSocket: its ConnectAsync, sends and receives complete through the runtime's thread
    // pool, which on a loaded machine can run late. A wait on them with a timeout then ended connections
    // that had not failed: a connect the server had accepted and answered was closed before its Hello,
    // and a send could time out the same way. Here the connect, the upgrade, sends and receives run on
    // the calling thread, bounded by the socket's own timeouts (Select, SendTimeout, ReceiveTimeout), so
    // a timeout means the server really did not answer in time. (Over wss://, Mono's SslStream still
    // waits on the pool inside its synchronous calls, but with no timeout of its own: a late pool
    // delays such a connection, it does not end it.)
    internal sealed class WebSocketLink : ThreadedLink
    {
        // The longest answer to the upgrade read (a crowd-server's is about 150 bytes).
        const int MaxUpgradeAnswerBytes = 16 * 1024;

        readonly CrowdAddress address;
        readonly CrowdClientOptions options;
        readonly CancellationTokenSource cancel = new CancellationTokenSource();
        Socket socket;
        BlockingStream stream;
        WebSocket ws;
        bool aborted;

        public WebSocketLink(CrowdAddress address, CrowdClientOptions options)
        {
            this.address = address;
            this.options = options;
        }

        bool Aborted()
        {
            lock (this) return aborted;
        }

        public override void Open()
        {
            Func<int> left = TimeLeft(Stopwatch.StartNew(), options.ConnectTimeoutMs);
            string subProtocol;
            try
            {
                ConnectAny(Uri.UnescapeDataString(address.Uri.IdnHost), address.Port, left, Adopt, Aborted); // an IPv6 scope is escaped (%25)
                subProtocol = Upgrade(left);
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
            if (subProtocol != CrowdAddress.SubProtocol)
            {
                Abort();
                throw new WebSocketException("the server did not accept subprotocol " + CrowdAddress.SubProtocol + " (not a crowd server?)");
            }
            try
            {
                socket.SendTimeout = options.SendTimeoutMs;
                socket.ReceiveTimeout = options.IdleTimeoutMs > 0 ? options.IdleTimeoutMs : 0;
            }
            catch (Exception)
            {
                Abort();
                throw;
            }
            var w = WebSocket.CreateFromStream(stream, false, subProtocol, WebSocket.DefaultKeepAliveInterval);
            bool stopped;
            lock (this)
            {
                stopped = aborted;
                if (!stopped) ws = w;
            }
            if (stopped)
            {
                w.Abort();
                throw new OperationCanceledException("stopped");
            }
        }

        bool Adopt(Socket s)
        {
            lock (this)
            {
                if (aborted) return false;
                socket = s;
                return true;
            }
        }

        // The HTTP upgrade (RFC 6455 section 4) over the connected socket, TLS first for wss://.
        // Returns the subprotocol the server chose (null for none).
        string Upgrade(Func<int> left)
        {
            Stream net = new NetworkStream(socket, true);
            if (address.Uri.Scheme == "wss")
            {
                var tls = new SslStream(net, false);
                net = tls;
                SetTimeouts(left);
                try
                {
                    tls.AuthenticateAsClient(address.Uri.IdnHost);
                }
                catch (Exception e)
                {
                    if (BlockingStream.IsTimeout(e)) throw new TimeoutException("connect timed out");
                    throw;
                }
            }
            var st = new BlockingStream(net, socket);
            lock (this)
            {
                if (aborted) throw new OperationCanceledException("stopped");
                stream = st;
            }
            var nonce = new byte[16];
            using (var rng = RandomNumberGenerator.Create())
                rng.GetBytes(nonce);
            string key = Convert.ToBase64String(nonce), accept;
            using (var sha = SHA1.Create())
                accept = Convert.ToBase64String(sha.ComputeHash(Encoding.ASCII.GetBytes(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11")));
            string host = address.Uri.HostNameType == UriHostNameType.IPv6 ? address.Uri.Host : address.Uri.IdnHost; // [::1]
            byte[] request = Encoding.ASCII.GetBytes(
                "GET " + address.Uri.PathAndQuery + " HTTP/1.1\r\n" +
                "Host: " + host + ":" + address.Port + "\r\n" +
                "Upgrade: websocket\r\n" +
                "Connection: Upgrade\r\n" +
                "Sec-WebSocket-Key: " + key + "\r\n" +
                "Sec-WebSocket-Version: 13\r\n" +
                "Sec-WebSocket-Protocol: " + CrowdAddress.SubProtocol + "\r\n\r\n");
            var head = new byte[1024];
            int len = 0, end;
            try
            {
                SetTimeouts(left);
                st.Write(request, 0, request.Length);
                // The answer's head, up to its blank line; what follows it is the WebSocket's.
                while ((end = HeadEnd(head, len)) < 0)
                {
                    if (len == head.Length)
                    {
                        if (len >= MaxUpgradeAnswerBytes) throw new WebSocketException("the answer to the upgrade is over " + MaxUpgradeAnswerBytes + " bytes");
                        Array.Resize(ref head, len * 2);
                    }
                    SetTimeouts(left);
                    int n = st.Read(head, len, head.Length - len);
                    if (n == 0) throw new WebSocketException("the connection closed before an answer to the upgrade");
                    len += n;
                }
            }
            catch (IOException e)
            {
                if (st.TimedOut) throw new TimeoutException("connect timed out");
                throw new WebSocketException("the upgrade failed: " + e.GetBaseException().Message);
            }
            st.Unread(head, end, len - end);

            string[] lines = Encoding.ASCII.GetString(head, 0, end).Split(new[] { "\r\n" }, StringSplitOptions.RemoveEmptyEntries);
            string[] status = lines[0].Split(' ');
            if (status.Length < 2 || !status[0].StartsWith("HTTP/", StringComparison.Ordinal) || status[1] != "101")
                throw new WebSocketException("the server answered the upgrade with '" + lines[0] + "', not 101 Switching Protocols");
            string upgrade = null, connection = null, accepted = null, subProtocol = null;
            for (int i = 1; i < lines.Length; i++)
            {
                int colon = lines[i].IndexOf(':');
                if (colon <= 0) throw new WebSocketException("a malformed header in the answer to the upgrade: '" + lines[i] + "'");
                string name = lines[i].Substring(0, colon).Trim(), value = lines[i].Substring(colon + 1).Trim();
                if (string.Equals(name, "Upgrade", StringComparison.OrdinalIgnoreCase)) upgrade = value;
                else if (string.Equals(name, "Connection", StringComparison.OrdinalIgnoreCase)) connection = value;
                else if (string.Equals(name, "Sec-WebSocket-Accept", StringComparison.OrdinalIgnoreCase)) accepted = value;
                else if (string.Equals(name, "Sec-WebSocket-Protocol", StringComparison.OrdinalIgnoreCase) && value.Length > 0) subProtocol = value;
            }
            if (!string.Equals(upgrade, "websocket", StringComparison.OrdinalIgnoreCase) || !HasToken(connection, "Upgrade"))
                throw new WebSocketException("the answer to the upgrade lacks Upgrade: websocket and Connection: Upgrade");
            if (accepted != accept)
                throw new WebSocketException("the answer to the upgrade has a wrong Sec-WebSocket-Accept");
            return subProtocol;
        }

        // The socket's timeouts for the next blocking step of Open: what is left of ConnectTimeoutMs.
        void SetTimeouts(Func<int> left)
        {
            int ms = left();
            if (ms == 0) throw new TimeoutException("connect timed out");
            socket.SendTimeout = socket.ReceiveTimeout = ms < 0 ? 0 : ms;
        }

        // Where the head ends (after its blank line), or -1.
        static int HeadEnd(byte[] b, int len)
        {
            for (int i = 3; i < len; i++)
                if (b[i] == '\n' && b[i - 1] == '\r' && b[i - 2] == '\n' && b[i - 3] == '\r') return i + 1;
            return -1;
        }

        static bool HasToken(string list, string token)
        {
            if (list == null) return false;
            foreach (string t in list.Split(','))
                if (string.Equals(t.Trim(), token, StringComparison.OrdinalIgnoreCase)) return true;
            return false;
        }

        public override void Send(ClientMessage m)
        {
            byte[] bytes = ProtoMessage.ToByteArray(m);
            try
            {
                // Done before SendAsync returns, bounded by the socket's SendTimeout; the wait bounds only
                // one behind the WebSocket's own send lock (a keep-alive ping going out at that moment).
                Task t = ws.SendAsync(new ArraySegment<byte>(bytes), WebSocketMessageType.Binary, true, cancel.Token);
                bool done;
                try
                {
                    done = t.Wait(options.SendTimeoutMs);
                }
                catch (AggregateException e)
                {
                    throw Unwrap(e);
                }
                if (!done) throw new TimeoutException("send timed out");
            }
            catch (Exception)
            {
                Abort();
                throw;
            }
        }

        static Exception Unwrap(AggregateException e)
        {
            return e.InnerExceptions.Count == 1 ? e.InnerExceptions[0] : e;
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
                    // Read here, on this thread, before ReceiveAsync returns; the socket's ReceiveTimeout
                    // is IdleTimeoutMs.
                    r = ws.ReceiveAsync(new ArraySegment<byte>(buf, len, buf.Length - len), cancel.Token).GetAwaiter().GetResult();
                }
                catch (Exception e)
                {
                    if (stopRequested()) return "disconnected by the client";
                    if (stream.TimedOut && options.IdleTimeoutMs > 0)
                    {
                        Abort();
                        return "nothing from the server for " + options.IdleTimeoutMs + " ms";
                    }
                    // The WebSocket reports a protocol error (or a close code it does not know) as
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
            var w = ws;
            var st = w != null ? w.State : WebSocketState.None;
            if (st == WebSocketState.Open || st == WebSocketState.CloseReceived) CloseWith(WebSocketCloseStatus.NormalClosure, "closed by the client");
            else Abort();
        }

        public override void Abort()
        {
            WebSocket w;
            Socket s;
            lock (this)
            {
                if (aborted) return;
                aborted = true;
                w = ws;
                s = socket;
            }
            try { cancel.Cancel(); } catch (Exception) { }
            if (w != null)
            {
                try { w.Abort(); } catch (Exception) { }
                try { w.Dispose(); } catch (Exception) { }
            }
            if (s == null) return;
            // Also ends a blocking read or write in progress on another thread.
            try { s.Shutdown(SocketShutdown.Both); } catch (Exception) { }
            try { s.Close(); } catch (Exception) { }
        }
    }

    /// <summary>A stream whose asynchronous reads and writes are done before they return, blocking, on
    /// the calling thread (the inner stream's Read and Write), so that a WebSocket over it neither needs
    /// nor waits for the runtime's thread pool. The socket's SendTimeout and ReceiveTimeout bound them.</summary>
    internal sealed class BlockingStream : Stream
    {
        readonly Stream inner;
        readonly Socket socket;
        byte[] unread;   // read past the upgrade's answer: the WebSocket's first bytes
        int unreadOff, unreadLen;
        volatile bool timedOut;

        public BlockingStream(Stream inner, Socket socket)
        {
            this.inner = inner;
            this.socket = socket;
        }

        /// <summary>A read or write ended on the socket's timeout.</summary>
        public bool TimedOut { get { return timedOut; } }

        /// <summary>Bytes the next reads give before the socket's.</summary>
        public void Unread(byte[] b, int off, int count)
        {
            unread = b;
            unreadOff = off;
            unreadLen = count;
        }

        /// <summary>Whether e comes from a socket's SendTimeout or ReceiveTimeout (Mono reports WouldBlock).</summary>
        public static bool IsTimeout(Exception e)
        {
            for (; e != null; e = e.InnerException)
            {
                var se = e as SocketException;
                if (se != null) return se.SocketErrorCode == SocketError.TimedOut || se.SocketErrorCode == SocketError.WouldBlock;
            }
            return false;
        }

        public override int Read(byte[] buffer, int offset, int count)
        {
            if (unreadLen > 0 && count > 0)
            {
                int n = Math.Min(count, unreadLen);
                Buffer.BlockCopy(unread, unreadOff, buffer, offset, n);
                unreadOff += n;
                unreadLen -= n;
                return n;
            }
            try
            {
                return inner.Read(buffer, offset, count);
            }
            catch (Exception e)
            {
                if (IsTimeout(e)) timedOut = true;
                throw;
            }
        }

        public override void Write(byte[] buffer, int offset, int count)
        {
            try
            {
                inner.Write(buffer, offset, count);
            }
            catch (Exception e)
            {
                if (IsTimeout(e)) timedOut = true;
                throw;
            }
        }

        public override Task<int> ReadAsync(byte[] buffer, int offset, int count, CancellationToken cancellationToken)
        {
            var done = new TaskCompletionSource<int>();
            try
            {
                done.SetResult(Read(buffer, offset, count));
            }
            catch (Exception e)
            {
                done.SetException(e);
            }
            return done.Task;
        }

        public override Task WriteAsync(byte[] buffer, int offset, int count, CancellationToken cancellationToken)
        {
            var done = new TaskCompletionSource<bool>();
            try
            {
                Write(buffer, offset, count);
                done.SetResult(true);
            }
            catch (Exception e)
            {
                done.SetException(e);
            }
            return done.Task;
        }

        public override void Flush() { inner.Flush(); }

        public override Task FlushAsync(CancellationToken cancellationToken)
        {
            var done = new TaskCompletionSource<bool>();
            try
            {
                inner.Flush();
                done.SetResult(true);
            }
            catch (Exception e)
            {
                done.SetException(e);
            }
            return done.Task;
        }

        public override bool CanRead { get { return true; } }
        public override bool CanWrite { get { return true; } }
        public override bool CanSeek { get { return false; } }
        public override long Length { get { throw new NotSupportedException(); } }
        public override long Position { get { throw new NotSupportedException(); } set { throw new NotSupportedException(); } }
        public override long Seek(long offset, SeekOrigin origin) { throw new NotSupportedException(); }
        public override void SetLength(long value) { throw new NotSupportedException(); }

        protected override void Dispose(bool disposing)
        {
            if (disposing)
            {
                // Also ends a blocking read or write in progress on another thread.
                try { socket.Shutdown(SocketShutdown.Both); } catch (Exception) { }
                try { inner.Dispose(); } catch (Exception) { }
            }
            base.Dispose(disposing);
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
