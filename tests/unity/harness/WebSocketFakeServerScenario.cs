// WebSocketFakeServerScenario.cs — CrowdClient's WebSocket link (on the client's
// thread) against a hostile fake server speaking RFC 6455 by hand on
// loopback: the upgrade request (path /ws, subprotocol crowd.v1 offered), a message
// split into fragments, a malformed message (skipped), a text message (close 1003,
// reconnect), a message over MaxFrameBytes (close 1009, reconnect), an upgrade that
// does not accept crowd.v1 answered with the thread pool held, and the reconnect after
// it still held, a close with a code and reason right after the upgrade, and
// Disconnect's close handshake (1000). Reported as faults or reasons, never thrown.
using System;
using System.Collections.Generic;
using System.Net;
using System.Net.Sockets;
using System.Security.Cryptography;
using System.Text;
using Crowd.Client;
using Crowd.Tests;
using Crowd.V1;

namespace Crowd.Harness
{
    public static class WebSocketFakeServerScenario
    {
        sealed class WsPeer : IDisposable
        {
            public readonly Socket Socket;
            public string Path = "", OfferedProtocol = "";

            WsPeer(Socket s)
            {
                Socket = s;
                Socket.ReceiveTimeout = 60000;
            }

            // Reads the upgrade request and answers 101 (protocol: the Sec-WebSocket-Protocol to answer, null for none;
            // beforeReply runs between the two).
            public static WsPeer Accept(TcpListener listener, string protocol = "crowd.v1", Action beforeReply = null)
            {
                var p = new WsPeer(listener.AcceptSocket());
                var head = new List<byte>();
                var one = new byte[1];
                while (head.Count < 4 || head[head.Count - 4] != '\r' || head[head.Count - 3] != '\n' || head[head.Count - 2] != '\r' || head[head.Count - 1] != '\n')
                {
                    if (p.Socket.Receive(one) != 1) throw new Exception("the client closed during the upgrade");
                    head.Add(one[0]);
                }
                string key = "";
                var lines = Encoding.ASCII.GetString(head.ToArray()).Split(new[] { "\r\n" }, StringSplitOptions.RemoveEmptyEntries);
                p.Path = lines[0].Split(' ')[1];
                foreach (var line in lines)
                {
                    int colon = line.IndexOf(':');
                    if (colon < 0) continue;
                    string name = line.Substring(0, colon).Trim().ToLowerInvariant(), value = line.Substring(colon + 1).Trim();
                    if (name == "sec-websocket-key") key = value;
                    if (name == "sec-websocket-protocol") p.OfferedProtocol = value;
                }
                string accept;
                using (var sha = SHA1.Create())
                    accept = Convert.ToBase64String(sha.ComputeHash(Encoding.ASCII.GetBytes(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11")));
                string reply = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + accept + "\r\n" +
                               (protocol != null ? "Sec-WebSocket-Protocol: " + protocol + "\r\n" : "") + "\r\n";
                if (beforeReply != null) beforeReply();
                p.Socket.Send(Encoding.ASCII.GetBytes(reply));
                return p;
            }

            void ReadExactly(byte[] b)
            {
                int off = 0;
                while (off < b.Length)
                {
                    int n = Socket.Receive(b, off, b.Length - off, SocketFlags.None);
                    if (n <= 0) throw new SocketException((int)SocketError.ConnectionReset);
                    off += n;
                }
            }

            /// <summary>The next whole message from the client (fragments joined): its opcode and payload; opcode -1 at EOF.</summary>
            public int ReadMessage(out byte[] payload)
            {
                var all = new List<byte>();
                int opcode = -1;
                payload = new byte[0];
                try
                {
                    for (;;)
                    {
                        var h = new byte[2];
                        ReadExactly(h);
                        int op = h[0] & 0x0f;
                        bool fin = (h[0] & 0x80) != 0;
                        ulong len = (ulong)(h[1] & 0x7f);
                        if (len == 126) { var b = new byte[2]; ReadExactly(b); len = (ulong)(b[0] << 8 | b[1]); }
                        else if (len == 127) { var b = new byte[8]; ReadExactly(b); len = 0; foreach (var x in b) len = len << 8 | x; }
                        var mask = new byte[4];
                        if ((h[1] & 0x80) != 0) ReadExactly(mask);
                        var data = new byte[len];
                        ReadExactly(data);
                        for (int i = 0; i < data.Length; i++) data[i] ^= mask[i & 3];
                        if (op != 0) opcode = op;
                        all.AddRange(data);
                        if (fin) break;
                    }
                }
                catch (SocketException)
                {
                    return -1;
                }
                payload = all.ToArray();
                return opcode;
            }

            /// <summary>The next binary message as a ClientMessage (null at a close or EOF).</summary>
            public ClientMessage Read()
            {
                byte[] b;
                int op = ReadMessage(out b);
                return op == 2 ? ProtoMessage.Parse<ClientMessage>(b) : null;
            }

            public void Frame(int opcode, byte[] payload, bool fin = true)
            {
                var f = new List<byte> { (byte)((fin ? 0x80 : 0) | opcode) };
                if (payload.Length < 126) f.Add((byte)payload.Length);
                else if (payload.Length < 65536) { f.Add(126); f.Add((byte)(payload.Length >> 8)); f.Add((byte)payload.Length); }
                else { f.Add(127); for (int i = 7; i >= 0; i--) f.Add((byte)((long)payload.Length >> (8 * i))); }
                f.AddRange(payload);
                Socket.Send(f.ToArray());
            }

            public void Send(ServerMessage m) { Frame(2, ProtoMessage.ToByteArray(m)); }

            public void Close(int code, string reason)
            {
                var b = new List<byte> { (byte)(code >> 8), (byte)code };
                b.AddRange(Encoding.UTF8.GetBytes(reason));
                Frame(8, b.ToArray());
            }

            public static int CloseCode(byte[] payload) { return payload.Length >= 2 ? payload[0] << 8 | payload[1] : -1; }

            public void Dispose() { try { Socket.Close(); } catch (Exception) { } }
        }

        public static void Run()
        {
            bool unhandled = false;
            AppDomain.CurrentDomain.UnhandledException += (s, e) => unhandled = true;
            var listener = new TcpListener(IPAddress.Loopback, 0);
            listener.Start();
            int port = ((IPEndPoint)listener.LocalEndpoint).Port;
            var client = new CrowdClient("ws://127.0.0.1:" + port, new CrowdClientOptions
            {
                ClientName = "ws-fake",
                ReconnectInitialSeconds = 0.02,
                ReconnectMaxSeconds = 0.1,
                MaxFrameBytes = 4096,
            });
            var faults = new List<string>();
            var reasons = new List<string>();
            var snapshots = new List<WorldSnapshot>();
            client.ProtocolFault += f => faults.Add(f);
            client.StateChanged += (st, why) => { if (why != null) reasons.Add(st + ": " + why); };
            client.SnapshotReceived += s => snapshots.Add(s);
            Func<string, bool> reasonSaid = text => reasons.Exists(r => r.Contains(text));
            // The first wait to reconnect reported from reasons[from] on (null if none yet).
            Func<int, string> waitSince = from =>
            {
                int i = reasons.FindIndex(from, r => r.StartsWith("WaitingToReconnect", StringComparison.Ordinal));
                return i < 0 ? null : reasons[i];
            };
            // The wait to reconnect reported next after the one that gave this reason (null if none yet).
            Func<string, string> waitAfter = why =>
            {
                int i = reasons.FindIndex(r => r.StartsWith("WaitingToReconnect: " + why, StringComparison.Ordinal));
                return i < 0 ? null : waitSince(i + 1);
            };
            byte[] payload;
            HeldPool held = null;
            try
            {
                client.Subscribe();
                client.Connect();

                // ---- connection 1: fragments, a malformed message, then a text message
                using (var p = WsPeer.Accept(listener))
                {
                    Check.That(p.Path == "/ws" && p.OfferedProtocol == "crowd.v1", "the upgrade asks for /ws (added to a URL with no path) and offers crowd.v1 (" + p.Path + ", " + p.OfferedProtocol + ")");
                    var hello = p.Read();
                    var sub = p.Read();
                    Check.That(hello != null && hello.Hello != null && hello.Hello.ClientName == "ws-fake" && sub != null && sub.Subscribe != null,
                               "one binary message each: the Hello, then the remembered Subscribe");
                    p.Send(new ServerMessage { Welcome = new Welcome { ProtocolMajor = 1, ClientId = 3, Precision = 1000, TickRateHz = 30 } });
                    Check.That(Wait.Until(() => client.State == ConnectionState.Ready, client), "Welcome: Ready");
                    var enc = new SnapshotEncoder();
                    byte[] snap = ProtoMessage.ToByteArray(new ServerMessage { Snapshot = enc.Encode(10, true, new[] { SnapshotEncoder.Agent(1, 1500, -2500, 100, 0, 500, 3) }) });
                    int third = snap.Length / 3;
                    p.Frame(2, Slice(snap, 0, third), false);
                    p.Frame(0, Slice(snap, third, third), false);
                    p.Frame(0, Slice(snap, 2 * third, snap.Length - 2 * third));
                    Check.That(Wait.Until(() => snapshots.Count == 1, client) && snapshots[0].Agents.Length == 1 && snapshots[0].Agents[0].X == 1.5f,
                               "a message in three fragments is joined and decoded");
                    p.Frame(2, new byte[] { 0xff, 0xff, 0xff });
                    p.Send(new ServerMessage { Snapshot = enc.Encode(11, false, new[] { SnapshotEncoder.Agent(1, 1600, -2500, 100, 0, 500, 3) }) });
                    Check.That(Wait.Until(() => snapshots.Count == 2, client) && faults.Count == 1 && faults[0].Contains("malformed"),
                               "a malformed message is skipped and reported; the next one applies (" + string.Join("; ", faults.ToArray()) + ")");
                    p.Frame(1, Encoding.UTF8.GetBytes("hello?"));
                    int op = p.ReadMessage(out payload);
                    Check.That(op == 8 && WsPeer.CloseCode(payload) == 1003, "a text message: the client closes with 1003 (" + op + ", " + WsPeer.CloseCode(payload) + ")");
                    Check.That(Wait.Until(() => faults.Count == 2, client) && faults[1].Contains("text"), "and reports it");
                }

                // ---- connection 2: a message larger than MaxFrameBytes
                using (var p = WsPeer.Accept(listener))
                {
                    Check.That(p.Read() != null, "reconnected: Hello again");
                    p.Read();
                    p.Send(new ServerMessage { Welcome = new Welcome { ProtocolMajor = 1, ClientId = 3 } });
                    p.Frame(2, new byte[5000]);
                    int op;
                    do op = p.ReadMessage(out payload); while (op == 2);
                    Check.That(op == 8 && WsPeer.CloseCode(payload) == 1009, "a 5000-byte message over MaxFrameBytes 4096: the client closes with 1009 (" + op + ", " + WsPeer.CloseCode(payload) + ")");
                    Check.That(Wait.Until(() => faults.Count == 3, client) && faults[2].Contains("4096"), "and reports it (" + (faults.Count > 2 ? faults[2] : "") + ")");
                }

                // ---- connection 3: an upgrade that does not accept crowd.v1, answered with the thread pool held.
                // The client is then waiting for the answer to a connection this listener accepted: a wait
                // that completes through the pool times out, the answer unread, and so does every connect
                // after it until the pool is released.
                using (var p = WsPeer.Accept(listener, null, () => held = new HeldPool()))
                {
                    bool said = Wait.Until(() => waitAfter("message too big") != null, client) && waitAfter("message too big").Contains("subprotocol crowd.v1");
                    Check.That(said, "an upgrade without crowd.v1, answered with the thread pool held, fails the connect, saying so (" + waitAfter("message too big") + ")");
                    // A client whose connect timed out instead connects again only once the pool runs.
                    if (!said) held.Dispose();
                }

                // ---- connection 4: the reconnect with the thread pool still held, then closed with a code and reason
                using (var p = WsPeer.Accept(listener))
                {
                    var hello = p.Read();
                    var sub = hello != null ? p.Read() : null;
                    Check.That(hello != null && hello.Hello != null && sub != null && sub.Subscribe != null,
                               "reconnected while the thread pool is held: the upgrade, Hello and Subscribe, on the first connection accepted");
                    held.Dispose();
                    p.Close(1001, "going away");
                    p.Socket.Shutdown(SocketShutdown.Send);
                    Check.That(Wait.Until(() => reasonSaid("1001 going away"), client), "a close from the server gives its code and reason as the reason (" + reasons[reasons.Count - 1] + ")");
                }

                // ---- connection 4b: 1013 (crowd-server's "server full"), a code Mono's managed WebSocket refuses as invalid
                int before = reasons.Count;
                using (var p = WsPeer.Accept(listener))
                {
                    p.Read();
                    p.Close(1013, "server full");
                    p.Socket.Shutdown(SocketShutdown.Send); // as crowd-server does once its close is out
                    Check.That(Wait.Until(() => waitSince(before) != null, client),
                               "a close with 1013: the connection ends and the client waits to reconnect (" + reasons[reasons.Count - 1] + ")");
                }

                // ---- connection 5: Disconnect closes with 1000
                using (var p = WsPeer.Accept(listener))
                {
                    p.Read();
                    p.Read();
                    p.Send(new ServerMessage { Welcome = new Welcome { ProtocolMajor = 1, ClientId = 3 } });
                    Check.That(Wait.Until(() => client.State == ConnectionState.Ready, client), "welcomed again");
                    int code = -1;
                    var closer = new System.Threading.Thread(() =>
                    {
                        byte[] b;
                        int o;
                        do o = p.ReadMessage(out b); while (o == 2);
                        if (o == 8)
                        {
                            code = WsPeer.CloseCode(b);
                            p.Close(1000, "");
                            p.Socket.Shutdown(SocketShutdown.Send); // the handshake done, the server ends the TCP connection
                        }
                    });
                    closer.Start();
                    client.Disconnect();
                    closer.Join();
                    client.Poll();
                    Check.That(code == 1000 && client.State == ConnectionState.Disconnected, "Disconnect: a close frame with 1000, then Disconnected (" + code + ")");
                }
                Check.That(client.Connections == 5, "five connections opened, the refused upgrade not counted (" + client.Connections + ")");
                Check.That(!unhandled, "no unhandled exception on any thread");
            }
            finally
            {
                if (held != null) held.Dispose();
                client.Dispose();
                listener.Stop();
            }
        }

        static byte[] Slice(byte[] b, int off, int len)
        {
            var r = new byte[len];
            Buffer.BlockCopy(b, off, r, 0, len);
            return r;
        }
    }
}
