// FakeServerScenario.cs — CrowdClient against a hostile fake server on loopback:
// malformed frames, a snapshot that does not apply, a truncated frame, an oversized
// length prefix, raw garbage and a wrong protocol version, and a reconnect while the
// thread pool is held. The client must report each, resubscribe or reconnect with
// back-off, fail lost requests, and never throw.
using System;
using System.Collections.Generic;
using System.Net;
using System.Net.Sockets;
using Crowd.Client;
using Crowd.Tests;
using Crowd.V1;

namespace Crowd.Harness
{
    public static class FakeServerScenario
    {
        internal sealed class Peer : IDisposable
        {
            public readonly Socket Socket;
            readonly FrameSplitter splitter = new FrameSplitter(1 << 20);
            readonly byte[] buf = new byte[4096];

            public Peer(Socket s)
            {
                Socket = s;
                Socket.ReceiveTimeout = 60000;
            }

            public ClientMessage Read()
            {
                for (;;)
                {
                    byte[] f;
                    int off, len;
                    if (splitter.Next(out f, out off, out len) == FrameResult.Ready)
                        return ProtoMessage.Parse<ClientMessage>(f, off, len);
                    int n = Socket.Receive(buf);
                    if (n <= 0) return null;
                    splitter.Push(buf, 0, n);
                }
            }

            public ClientMessage ReadUntil(ClientMessage.MsgOneofCase c)
            {
                for (;;)
                {
                    var m = Read();
                    if (m == null || m.MsgCase == c) return m;
                }
            }

            public void Send(ServerMessage m) { Raw(FrameSplitter.Delimit(m)); }
            public void Raw(byte[] b) { Socket.Send(b); }
            public void Dispose() { try { Socket.Close(); } catch (Exception) { } }
        }

        public static void Run()
        {
            bool unhandled = false;
            AppDomain.CurrentDomain.UnhandledException += (s, e) => unhandled = true;
            var listener = new TcpListener(IPAddress.Loopback, 0);
            listener.Start();
            int port = ((IPEndPoint)listener.LocalEndpoint).Port;
            var client = new CrowdClient("127.0.0.1", port, new CrowdClientOptions
            {
                Token = "t0k",
                ClientName = "fake-test",
                ReconnectInitialSeconds = 0.02,
                ReconnectMaxSeconds = 0.1,
                MaxFrameBytes = 1 << 20,
                MaxQueuedSnapshots = 8,
            });
            var faults = new List<string>();
            var states = new List<ConnectionState>();
            var snapshots = new List<WorldSnapshot>();
            client.ProtocolFault += f => faults.Add(f);
            client.StateChanged += (st, why) => states.Add(st);
            client.SnapshotReceived += s => snapshots.Add(s);
            HeldPool held = null;
            try
            {
                client.Subscribe(new Rect(-5, -5, 5, 5), 2);
                client.Connect();

                // ---- connection 1: a good start, then hostile frames
                using (var p = new Peer(listener.AcceptSocket()))
                {
                    var hello = p.Read();
                    Check.That(hello != null && hello.Hello != null && hello.Hello.ProtocolMajor == 1 && hello.Hello.Token == "t0k" && hello.Hello.ClientName == "fake-test",
                               "first frame is Hello with protocol 1 and the token");
                    var sub = p.Read();
                    Check.That(sub != null && sub.Subscribe != null && sub.Subscribe.Divisor == 2 && sub.Subscribe.Area != null && sub.Subscribe.Area.MaxX == 5f,
                               "then the remembered Subscribe (area, divisor)");
                    p.Send(new ServerMessage { Welcome = new Welcome { ProtocolMajor = 1, ClientId = 4, Precision = 1000, TickRateHz = 30, Role = Role.Player } });
                    var enc = new SnapshotEncoder();
                    p.Send(new ServerMessage { Snapshot = enc.Encode(10, true, new[] { SnapshotEncoder.Agent(1, 1500, -2500, 100, 0, 500, 4) }) });
                    Check.That(Wait.Until(() => snapshots.Count == 1, client), "keyframe decoded");
                    Check.That(snapshots.Count == 1 && snapshots[0].Agents.Length == 1 && snapshots[0].Agents[0].X == 1.5f && snapshots[0].Agents[0].Y == -2.5f && snapshots[0].Agents[0].Radius == 0.5f,
                               "fixed point scaled by Welcome.precision (1.5, -2.5, r 0.5)");

                    // A request that will never be answered on this connection.
                    Error lost = null;
                    client.Spawn(new List<AgentSpec> { new AgentSpec() }, null, e => lost = e);

                    p.Raw(new byte[] { 3, 0xff, 0xff, 0xff });                              // a malformed body
                    var bad = new Snapshot { Tick = 11 };
                    bad.Entries.Add(9UL << 5 | 1);
                    bad.X.Add(5);
                    p.Send(new ServerMessage { Snapshot = bad });                           // delta for an unknown agent
                    var resub = p.ReadUntil(ClientMessage.MsgOneofCase.Subscribe);
                    Check.That(resub != null && resub.Subscribe.Divisor == 2, "a snapshot that does not apply makes the client resubscribe");
                    p.Send(new ServerMessage { Snapshot = enc.Encode(12, false, new[] { SnapshotEncoder.Agent(1, 1600, -2500, 100, 0, 500, 4) }) });
                    Check.That(Wait.Until(() => snapshots.Count == 2, client) && snapshots[1].Agents[0].X == 1.6f, "the view was left intact: the next delta applies");
                    // 40 snapshots while the main thread does not poll: only the newest 8 wait for it.
                    for (int i = 0; i < 40; i++)
                        p.Send(new ServerMessage { Snapshot = enc.Encode((ulong)(13 + i), false, new[] { SnapshotEncoder.Agent(1, 1600 + i, -2500, 100, 0, 500, 4) }) });
                    var guard = System.Diagnostics.Stopwatch.StartNew();
                    while (client.SnapshotsReceived < 42 && guard.Elapsed.TotalSeconds < 60) System.Threading.Thread.Sleep(5);
                    client.Poll();
                    Check.That(snapshots.Count == 2 + 8 && client.SnapshotsDropped == 32, "an unpolled queue keeps the newest 8 snapshots (" + (snapshots.Count - 2) + " delivered, " + client.SnapshotsDropped + " dropped)");
                    Check.That(snapshots[snapshots.Count - 1].Tick == 52 && snapshots[snapshots.Count - 1].Agents[0].X == 1.639f, "the newest snapshot is delivered last, fully decoded");
                    p.Send(new ServerMessage()); // no oneof case
                    p.Raw(new byte[] { 100, 1, 2, 3, 4, 5 });                               // a truncated frame, then close
                    Check.That(Wait.Until(() => faults.Count >= 3, client), "malformed, mismatched and empty frames reported as faults (" + faults.Count + ")");
                    // The reconnect runs with the thread pool held: a connect that waits on the pool times
                    // out under load on a connection this listener has already accepted, and closes it
                    // before its Hello (then the first socket accepted below is a dead one).
                    held = new HeldPool();
                    p.Socket.Shutdown(SocketShutdown.Both);
                    Check.That(Wait.Until(() => lost != null, client) && lost.Code == ErrorCode.None, "the unanswered spawn fails with Code None when the connection drops");
                }

                // ---- connection 2: an oversized length prefix
                using (var p = new Peer(listener.AcceptSocket()))
                {
                    var hello = p.Read();
                    var sub = hello != null ? p.Read() : null;
                    Check.That(hello != null && hello.Hello != null && sub != null && sub.Subscribe != null,
                               "reconnected while the thread pool is held: Hello and Subscribe again, on the first connection accepted");
                    held.Dispose();
                    var w = new ProtoWriter();
                    w.WriteVarint(1UL << 40);
                    p.Raw(w.ToArray());
                    Check.That(p.Read() == null, "client closes the connection on an oversized frame");
                }

                // ---- connection 3: raw garbage
                using (var p = new Peer(listener.AcceptSocket()))
                {
                    p.Read();
                    var junk = new byte[2048];
                    new Random(3).NextBytes(junk);
                    try { p.Raw(junk); } catch (SocketException) { }
                    p.Socket.Shutdown(SocketShutdown.Send);
                    while (p.Read() != null) { }
                }

                // ---- connection 4: another protocol major: the client gives up for good
                using (var p = new Peer(listener.AcceptSocket()))
                {
                    p.Read();
                    p.Send(new ServerMessage { Welcome = new Welcome { ProtocolMajor = 2 } });
                    Check.That(Wait.Until(() => client.State == ConnectionState.Disconnected, client), "protocol major 2: the client disconnects and stops reconnecting");
                }
                client.Poll();
                Check.That(client.Connections == 4 && !listener.Pending(), "exactly four connections were made (" + client.Connections + ")");
                Check.That(states.Contains(ConnectionState.WaitingToReconnect) && states[states.Count - 1] == ConnectionState.Disconnected,
                           "states went through WaitingToReconnect and ended Disconnected");

                // ---- Disconnect() while waiting to reconnect: clean and prompt (thread joined).
                var quiet = new CrowdClient("127.0.0.1", port, new CrowdClientOptions { ReconnectInitialSeconds = 30, ReconnectMaxSeconds = 30 });
                quiet.Connect();
                using (var p = new Peer(listener.AcceptSocket()))
                {
                    p.Read();
                    p.Socket.Shutdown(SocketShutdown.Both);
                }
                Check.That(Wait.Until(() => quiet.State == ConnectionState.WaitingToReconnect, quiet), "a dropped client waits to reconnect");
                quiet.Disconnect();
                Check.That(quiet.State == ConnectionState.Disconnected, "Disconnect during the back-off ends at once");
                Check.That(!unhandled, "no unhandled exception on any thread");
            }
            finally
            {
                if (held != null) held.Dispose();
                client.Dispose();
                listener.Stop();
            }
        }
    }
}
