// ServerScenario.cs — the C# client against a real crowd-server: Hello, subscribe,
// ping, spawn, set targets, snapshots until every agent arrives (bounded in ticks),
// errors, obstacles, velocities, removal, real frames truncated and corrupted,
// a server restart survived by reconnecting, and a clean disconnect.
using System;
using System.Collections.Generic;
using System.Net.Sockets;
using Crowd.Client;
using Crowd.V1;

namespace Crowd.Harness
{
    public static class ServerScenario
    {
        const string Args = "--listen 127.0.0.1:0 --http 127.0.0.1:0 --log-level warn --precision 100 --keyframe-interval 10";

        public static void Run(string serverExe)
        {
            var server = new ServerProcess(serverExe, Args);
            int port = server.Port;
            var relay = new TcpRelay(port); // the client talks through it, so the server can be replaced
            var counts = new Dictionary<ServerMessage.MsgOneofCase, int>();
            var client = new CrowdClient("127.0.0.1", relay.Port, new CrowdClientOptions { ClientName = "unity-harness", ReconnectInitialSeconds = 0.05, ReconnectMaxSeconds = 0.5 });
            var buffer = new InterpolationBuffer(64);
            var errors = new List<Error>();
            var faults = new List<string>();
            int keyframes = 0;
            client.Welcomed += w => Bump(counts, ServerMessage.MsgOneofCase.Welcome);
            client.AckReceived += a => Bump(counts, ServerMessage.MsgOneofCase.Ack);
            client.ErrorReceived += e => { Bump(counts, ServerMessage.MsgOneofCase.Error); errors.Add(e); };
            client.PongReceived += p => Bump(counts, ServerMessage.MsgOneofCase.Pong);
            client.ProtocolFault += f => faults.Add(f);
            client.StateChanged += (st, why) => Console.WriteLine("     client " + st + ": " + why);
            client.ErrorReceived += e => Console.WriteLine("     " + e);
            client.SnapshotReceived += s =>
            {
                Bump(counts, ServerMessage.MsgOneofCase.Snapshot);
                if (s.Keyframe) keyframes++;
                buffer.Add(s);
            };
            try
            {
                client.Subscribe(); // before Connect: sent after Hello
                client.Connect();
                Check.That(Wait.Until(() => client.Welcome != null, client), "Welcome received");
                var w = client.Welcome;
                if (w == null) return;
                Check.That(w.ProtocolMajor == 1 && w.Precision == 100 && w.TickRateHz == 30 && w.ClientId != 0 && w.Role == Role.Admin,
                           "Welcome: protocol 1, precision 100, 30 Hz, a client id, role admin (open server)");
                Check.That(Wait.Until(() => client.LatestSnapshot != null, client), "snapshots flow after the automatic subscribe");

                ulong pongEcho = 0;
                client.PongReceived += p => pongEcho = p.ClientTimeUs;
                client.Ping();
                Check.That(Wait.Until(() => pongEcho != 0, client) && client.LastRoundTripMs >= 0, "Ping answered by a Pong echoing client_time_us");

                // Two groups of four swap sides through each other on staggered lanes (a perfectly
                // symmetric head-on start can stall ORCA in a creeping deadlock, RVO2 included).
                const int n = 8;
                var specs = new List<AgentSpec>();
                var tx = new List<float>();
                var ty = new List<float>();
                for (int i = 0; i < n; i++)
                {
                    bool left = i < n / 2;
                    float lane = (i % (n / 2)) * 3f + (left ? 0f : 1.5f);
                    specs.Add(new AgentSpec { Position = new Vec2(left ? -10f : 10f, lane), Radius = 0.5f, MaxSpeed = 6f, PrefSpeed = 5f });
                    tx.Add(left ? 10f : -10f);
                    ty.Add(lane);
                }
                List<uint> ids = null;
                client.Spawn(specs, ack => ids = ack.Ids, e => Check.That(false, "spawn refused: " + e));
                Check.That(Wait.Until(() => ids != null, client) && ids.Count == n && new HashSet<uint>(ids).Count == n, "spawn: Ack lists " + n + " distinct ids");
                if (ids == null) return;
                bool targetsAcked = false;
                ulong startTick = client.LatestSnapshot.Tick;
                client.SetTargets(ids, tx, ty, ack => targetsAcked = true, e => Check.That(false, "targets refused: " + e));
                bool moved = false;
                ulong arrivedTick = 0;
                Func<bool> arrived = () =>
                {
                    var s = client.LatestSnapshot;
                    if (s == null || !targetsAcked) return false;
                    for (int i = 0; i < n; i++)
                    {
                        CrowdAgent ag;
                        if (!s.TryGetAgent(ids[i], out ag)) return false;
                        if (ag.Vx != 0 || ag.Vy != 0) moved = true;
                        if (Math.Abs(ag.X - tx[i]) > 0.05f || Math.Abs(ag.Y - ty[i]) > 0.05f) return s.Tick - startTick > 1500;
                    }
                    arrivedTick = s.Tick;
                    return true;
                };
                Wait.Until(arrived, client);
                Check.That(arrivedTick != 0, "every agent arrived at its target" + (arrivedTick != 0 ? " at tick " + arrivedTick + ", " + (arrivedTick - startTick) + " ticks after the order" : ": " + Positions(client.LatestSnapshot, ids, tx, ty)));
                Check.That(arrivedTick != 0 && arrivedTick - startTick <= 1500, "arrival within 1500 ticks");
                Check.That(moved, "snapshots carried non-zero velocities on the way");
                var last = client.LatestSnapshot;
                CrowdAgent own;
                Check.That(last.TryGetAgent(ids[0], out own) && own.Owner == w.ClientId && Math.Abs(own.Radius - 0.5f) < 0.011f,
                           "own agents carry this client's owner id and their radius (" + own.Radius + ")");
                float ix, iy;
                double mid = (buffer.Newest.Tick + buffer.Oldest.Tick) / 2.0;
                Check.That(buffer.TryGetPosition(ids[0], mid, out ix, out iy) && !float.IsNaN(ix), "interpolation buffer gives a position between real snapshots");

                // Errors come back to the request that caused them.
                Error unknown = null, invalid = null;
                client.SetTarget(new List<uint> { 999999 }, 0, 0, null, e => unknown = e);
                client.SetTarget(new List<uint> { ids[0] }, float.NaN, 0, null, e => invalid = e);
                Check.That(Wait.Until(() => unknown != null && invalid != null, client), "both bad requests answered");
                Check.That(unknown != null && (unknown.Code == ErrorCode.UnknownId || unknown.Code == ErrorCode.StaleId), "unknown id: " + (unknown != null ? unknown.Code.ToString() : "none"));
                Check.That(invalid != null && invalid.Code == ErrorCode.InvalidArgument, "NaN target: " + (invalid != null ? invalid.Code.ToString() : "none"));

                // Obstacles: added, seen in a snapshot, removed.
                uint obstacleId = 0;
                client.AddObstacle(new List<float> { 30, 32, 32, 30 }, new List<float> { 30, 30, 32, 32 }, a => obstacleId = a.Ids.Count == 1 ? a.Ids[0] : 0);
                Check.That(Wait.Until(() => obstacleId != 0, client), "AddObstacle acknowledged with an id");
                Check.That(Wait.Until(() => HasObstacle(client.LatestSnapshot, obstacleId), client), "the obstacle appears in the snapshots' obstacle set");
                bool obstacleRemoved = false;
                client.RemoveObstacle(obstacleId, a => obstacleRemoved = true);
                Check.That(Wait.Until(() => obstacleRemoved && !HasObstacle(client.LatestSnapshot, obstacleId), client), "RemoveObstacle acknowledged and the set no longer holds it");

                // Velocities, then removal.
                bool velAck = false;
                client.SetVelocities(new List<uint> { ids[1] }, new List<float> { 1f }, new List<float> { 0f }, a => velAck = true);
                Check.That(Wait.Until(() =>
                {
                    CrowdAgent b;
                    return velAck && client.LatestSnapshot.TryGetAgent(ids[1], out b) && b.Vx > 0.5f;
                }, client), "SetVelocities: the agent moves along +x");
                bool removedAck = false;
                client.RemoveAgents(new List<uint> { ids[2] }, a => removedAck = true);
                // The first snapshot without it lists it as removed, unless that one is a keyframe
                // (a keyframe carries no removals: the receiver drops its whole view).
                bool listedRemoved = false, goneSeen = false;
                client.SnapshotReceived += s =>
                {
                    CrowdAgent b;
                    if (goneSeen || s.TryGetAgent(ids[2], out b)) return;
                    goneSeen = true;
                    listedRemoved = s.RemovedIds.Contains(ids[2]) || s.Keyframe;
                };
                Check.That(Wait.Until(() =>
                {
                    CrowdAgent b;
                    return removedAck && !client.LatestSnapshot.TryGetAgent(ids[2], out b);
                }, client), "RemoveAgents: the agent leaves the view");
                Check.That(listedRemoved, "and the first snapshot without it lists it in removed ids (or is a keyframe)");

                foreach (var c in new[] { ServerMessage.MsgOneofCase.Welcome, ServerMessage.MsgOneofCase.Ack, ServerMessage.MsgOneofCase.Error, ServerMessage.MsgOneofCase.Snapshot, ServerMessage.MsgOneofCase.Pong })
                    Check.That(counts.ContainsKey(c) && counts[c] > 0, "decoded at least one " + c + " (" + (counts.ContainsKey(c) ? counts[c] : 0) + ")");
                Check.That(keyframes >= 2, "keyframes and deltas both decoded (" + keyframes + " keyframes of " + counts[ServerMessage.MsgOneofCase.Snapshot] + ")");
                Check.That(faults.Count == 0 && client.ProtocolFaults == 0, "no protocol faults from a real server (" + string.Join("; ", faults.ToArray()) + ")");

                // Unsubscribe: once acknowledged (and a Pong after it is back), no snapshot arrives for 10 ticks.
                bool unsubAcked = false;
                client.Unsubscribe(a => unsubAcked = true);
                ulong pongTick = 0;
                client.PongReceived += pg => pongTick = pg.ServerTick;
                pongTick = 0;
                client.Ping();
                Check.That(Wait.Until(() => unsubAcked && pongTick != 0, client), "Unsubscribe acknowledged");
                ulong quietFrom = pongTick;
                long snapshotsAtQuiet = client.SnapshotsReceived;
                Check.That(Wait.Until(() =>
                {
                    if (pongTick >= quietFrom + 10) return true;
                    client.Ping();
                    return false;
                }, client), "the server ticked on (pongs up to tick " + pongTick + ")");
                Check.That(client.SnapshotsReceived == snapshotsAtQuiet, "no snapshot for 10 ticks after Unsubscribe");
                var beforeResub = client.LatestSnapshot;
                client.Subscribe();
                Check.That(Wait.Until(() => client.LatestSnapshot != beforeResub && client.LatestSnapshot.Keyframe, client), "Subscribe again: snapshots resume with a keyframe");

                // An area of interest: only agents inside it (the right-hand group that arrived at x = 10).
                var area = new Rect(0, -1, 12, 12);
                var beforeArea = client.LatestSnapshot;
                client.Subscribe(area);
                Check.That(Wait.Until(() => client.LatestSnapshot != beforeArea && client.LatestSnapshot.Keyframe, client), "Subscribe(area): a keyframe of the area");
                Func<WorldSnapshot, bool> inside = sn =>
                {
                    foreach (var a in sn.Agents)
                        if (a.X < area.MinX - 0.01f || a.X > area.MaxX + 0.01f || a.Y < area.MinY - 0.01f || a.Y > area.MaxY + 0.01f) return false;
                    return true;
                };
                CrowdAgent inAgent, outAgent;
                var areaSnap = client.LatestSnapshot;
                Check.That(inside(areaSnap) && areaSnap.TryGetAgent(ids[0], out inAgent) && !areaSnap.TryGetAgent(ids[4], out outAgent),
                           "the area's snapshot holds only agents inside it (" + areaSnap.Agents.Length + " of " + areaSnap.WorldAgentCount + " in the world)");

                CorruptRealFrames(port);

                // The server goes away and another comes up: the client reconnects by itself.
                long before = client.Connections;
                int code = server.Stop();
                Check.That(code == 0, "crowd-server exits 0 on SIGTERM (" + code + ")");
                Check.That(Wait.Until(() => client.State == ConnectionState.WaitingToReconnect || client.State == ConnectionState.Connecting, client), "client notices and waits to reconnect");
                client.Poll();
                var welcomeBefore = client.Welcome;
                server = new ServerProcess(serverExe, Args);
                relay.Upstream = server.Port;
                Check.That(Wait.Until(() => client.Welcome != welcomeBefore && client.State == ConnectionState.Ready, client), "client reconnected and was welcomed again");
                Check.That(client.Connections > before, "a new TCP connection was made (" + client.Connections + ")");
                var snapBefore = client.LatestSnapshot;
                Check.That(Wait.Until(() => client.LatestSnapshot != snapBefore && client.LatestSnapshot.Keyframe, client), "subscription restored: a keyframe from the new server");

                client.Disconnect();
                client.Poll();
                Check.That(client.State == ConnectionState.Disconnected, "Disconnect: state Disconnected");
                uint lost = 0;
                client.Ping(null, e => lost = e.Code == ErrorCode.None ? e.RequestId : 0);
                client.Poll();
                Check.That(lost != 0, "a request after Disconnect fails locally (Code None)");
                Check.That(server.Stop() == 0, "the second server exits 0");
            }
            finally
            {
                server.DumpIfFailed();
                client.Dispose();
                server.Dispose();
                relay.Dispose();
            }
        }

        static string Positions(WorldSnapshot s, List<uint> ids, List<float> tx, List<float> ty)
        {
            var parts = new List<string>();
            for (int i = 0; i < ids.Count; i++)
            {
                CrowdAgent a;
                if (s.TryGetAgent(ids[i], out a)) parts.Add(string.Format("{0} at ({1:F2},{2:F2}) v ({3:F2},{4:F2}) target ({5:F2},{6:F2})", a.Id, a.X, a.Y, a.Vx, a.Vy, tx[i], ty[i]));
                else parts.Add(ids[i] + " missing");
            }
            return "tick " + s.Tick + ": " + string.Join("; ", parts.ToArray());
        }

        static void Bump(Dictionary<ServerMessage.MsgOneofCase, int> counts, ServerMessage.MsgOneofCase c)
        {
            int v;
            counts.TryGetValue(c, out v);
            counts[c] = v + 1;
        }

        static bool HasObstacle(WorldSnapshot s, uint id)
        {
            if (s == null) return false;
            foreach (var o in s.Obstacles)
                if (o.Id == id) return true;
            return false;
        }

        // Raw frames from the real server (Welcome, Ack, a keyframe, deltas), then every
        // truncation and many bit flips of them through the client's decoding path.
        static void CorruptRealFrames(int port)
        {
            var frames = new List<byte[]>();
            using (var tcp = new TcpClient("127.0.0.1", port))
            {
                var stream = tcp.GetStream();
                var hello = FrameSplitter.Delimit(new ClientMessage { RequestId = 1, Hello = new Hello { ClientName = "raw" } });
                var sub = FrameSplitter.Delimit(new ClientMessage { RequestId = 2, Subscribe = new Subscribe() });
                stream.Write(hello, 0, hello.Length);
                stream.Write(sub, 0, sub.Length);
                var splitter = new FrameSplitter(1 << 24);
                var buf = new byte[65536];
                tcp.ReceiveTimeout = 30000;
                while (frames.Count < 12)
                {
                    int got = stream.Read(buf, 0, buf.Length);
                    if (got <= 0) break;
                    splitter.Push(buf, 0, got);
                    byte[] f;
                    int off, len;
                    while (splitter.Next(out f, out off, out len) == FrameResult.Ready)
                    {
                        var copy = new byte[len];
                        Buffer.BlockCopy(f, off, copy, 0, len);
                        frames.Add(copy);
                    }
                }
            }
            Check.That(frames.Count >= 12, "captured " + frames.Count + " raw frames from the real server");
            var decoder = new SnapshotDecoder();
            int snapshots = 0, survived = 0, refused = 0;
            string unexpected = null;
            var rng = new Random(5);
            foreach (var frame in frames)
            {
                var m = ProtoMessage.Parse<ServerMessage>(frame);
                QuantizedAgent[] baseline = decoder.View;
                if (m.Snapshot != null)
                {
                    decoder.Apply(m.Snapshot);
                    snapshots++;
                }
                for (int k = 0; k < frame.Length + 200; k++)
                {
                    byte[] bad;
                    if (k < frame.Length) bad = Truncate(frame, k);
                    else
                    {
                        bad = (byte[])frame.Clone();
                        bad[rng.Next(bad.Length)] ^= (byte)(1 << rng.Next(8));
                    }
                    try
                    {
                        var bm = ProtoMessage.Parse<ServerMessage>(bad);
                        if (bm.Snapshot != null)
                        {
                            var d = new SnapshotDecoder();
                            if (baseline.Length > 0) d.Apply(ReKey(baseline));
                            d.Apply(bm.Snapshot);
                        }
                        survived++;
                    }
                    catch (ProtoException) { refused++; }
                    catch (SnapshotMismatchException) { refused++; }
                    catch (Exception e) { unexpected = e.GetType().Name + ": " + e.Message; }
                }
            }
            Check.That(snapshots >= 10, "the raw frames hold " + snapshots + " snapshots, decoded in order");
            Check.That(unexpected == null && refused > 0, "truncated and bit-flipped real frames: " + refused + " refused, " + survived + " decoded, no other exception (" + unexpected + ")");
        }

        static byte[] Truncate(byte[] frame, int len)
        {
            var b = new byte[len];
            Buffer.BlockCopy(frame, 0, b, 0, len);
            return b;
        }

        // A keyframe that rebuilds a view, to start a corrupted delta from the right baseline.
        static Snapshot ReKey(QuantizedAgent[] view)
        {
            var s = new Snapshot { Keyframe = true };
            uint prev = 0;
            foreach (var a in view)
            {
                s.Entries.Add((ulong)(a.Id - prev) << SnapshotDecoder.EntryShift | SnapshotDecoder.BitsAll);
                s.X.Add(a.X); s.Y.Add(a.Y); s.Vx.Add(a.Vx); s.Vy.Add(a.Vy);
                s.Radius.Add(a.Radius); s.Owner.Add(a.Owner);
                prev = a.Id;
            }
            return s;
        }
    }
}
