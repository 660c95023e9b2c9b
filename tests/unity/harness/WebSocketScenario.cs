// WebSocketScenario.cs — the C# client over WebSocket against a real crowd-server
// (its --http listener, ws://…/ws, subprotocol crowd.v1), twice: on the client's
// own thread over ClientWebSocket (editor, desktop), and on the WebGL build's
// polled path (no thread: Poll drives it) over PolledWebSocket. Each time through
// the Task methods: connect, spawn, targets as vectors, snapshots until every agent
// arrives, refused requests as CrowdExceptions with the server's code, ping, paths,
// obstacles, removal, a server restart survived, and a disconnect that fails later
// requests locally. Then what ConnectAsync says when it cannot connect: a closed
// port, the TCP port spoken to as WebSocket, the HTTP port spoken to as TCP, a bad token.
using System;
using System.Collections.Generic;
using System.Net;
using System.Net.Sockets;
using System.Threading.Tasks;
using Crowd.Client;
using Crowd.V1;

namespace Crowd.Harness
{
    public static class WebSocketScenario
    {
        const string Args = "--listen 127.0.0.1:0 --http 127.0.0.1:0 --log-level warn --precision 100 --keyframe-interval 10";

        public static void Run(string serverExe)
        {
            Drive(serverExe, "thread", new CrowdClientOptions { ClientName = "unity-ws", ReconnectInitialSeconds = 0.05, ReconnectMaxSeconds = 0.5 });
            int before = PolledWebSocket.Opened;
            Drive(serverExe, "polled", new CrowdClientOptions { ClientName = "unity-webgl", ReconnectInitialSeconds = 0.05, ReconnectMaxSeconds = 0.5, PolledSockets = PolledWebSocket.Open });
            Check.That(PolledWebSocket.Opened - before >= 2, "polled: every connection went through the polled socket (" + (PolledWebSocket.Opened - before) + ")");
            Refusals(serverExe);
        }

        static bool Settle(Task t, params CrowdClient[] clients)
        {
            return Wait.Until(() => t.IsCompleted, clients);
        }

        static CrowdException Failure(Task t)
        {
            return t.IsFaulted ? t.Exception.GetBaseException() as CrowdException : null;
        }

        static string Describe(Task t)
        {
            if (!t.IsCompleted) return "still pending";
            if (t.IsFaulted) return t.Exception.GetBaseException().GetType().Name + ": " + t.Exception.GetBaseException().Message;
            return "completed";
        }

        static void Drive(string serverExe, string how, CrowdClientOptions options)
        {
            var server = new ServerProcess(serverExe, Args);
            var relay = new TcpRelay(server.HttpPort); // one URL while the server behind it is replaced
            var client = new CrowdClient("ws://127.0.0.1:" + relay.Port + "/ws", options);
            var faults = new List<string>();
            client.ProtocolFault += f => faults.Add(f);
            client.StateChanged += (st, why) => Console.WriteLine("     " + how + " client " + st + ": " + why);
            try
            {
                Check.That(client.Address.Transport == CrowdTransport.WebSocket && client.Address.Uri.AbsolutePath == "/ws",
                           how + ": a ws:// address is the WebSocket transport (" + client.Address + ")");
                client.Subscribe(); // before Connect: goes out with the Hello
                var connect = client.ConnectAsync();
                Check.That(Settle(connect, client) && connect.Status == TaskStatus.RanToCompletion, how + ": ConnectAsync completes (" + Describe(connect) + ")");
                if (connect.Status != TaskStatus.RanToCompletion) return;
                var w = connect.Result;
                Check.That(w.ProtocolMajor == 1 && w.Precision == 100 && w.ClientId != 0 && client.State == ConnectionState.Ready,
                           how + ": the Task's result is the Welcome (protocol 1, precision 100, a client id) and the client is Ready");
                Check.That(Wait.Until(() => client.LatestSnapshot != null, client), how + ": snapshots arrive over the WebSocket");

                // Two groups of two cross on staggered lanes; positions and targets as vectors.
                var starts = new[] { new CrowdVector2(-8f, 0f), new CrowdVector2(-8f, 3f), new CrowdVector2(8f, 1.5f), new CrowdVector2(8f, 4.5f) };
                var targets = new List<CrowdVector2>();
                var specs = new List<AgentSpec>();
                foreach (var p in starts)
                {
                    specs.Add(new AgentSpec { Position = p, Radius = 0.5f, MaxSpeed = 6f, PrefSpeed = 5f }); // Vec2 from a vector
                    targets.Add(new CrowdVector2(-p.x, p.y));
                }
                var spawn = client.SpawnAsync(specs);
                Check.That(Settle(spawn, client) && spawn.Status == TaskStatus.RanToCompletion && spawn.Result.Ids.Count == specs.Count,
                           how + ": SpawnAsync completes with " + specs.Count + " ids (" + Describe(spawn) + ")");
                if (spawn.Status != TaskStatus.RanToCompletion) return;
                var ids = spawn.Result.Ids;
                ulong startTick = client.LatestSnapshot.Tick;
                var aim = client.SetTargetsAsync(ids, targets, SteerMode.Direct);
                Check.That(Settle(aim, client) && aim.Status == TaskStatus.RanToCompletion && aim.Result.RequestId != 0,
                           how + ": SetTargetsAsync(vectors) completes with its Ack");
                ulong arrivedTick = 0;
                Wait.Until(() =>
                {
                    var s = client.LatestSnapshot;
                    for (int i = 0; i < ids.Count; i++)
                    {
                        CrowdAgent a;
                        if (!s.TryGetAgent(ids[i], out a)) return false;
                        if (CrowdVector2.Distance(a.Position, targets[i]) > 0.05f) return s.Tick - startTick > 1500;
                    }
                    arrivedTick = s.Tick;
                    return true;
                }, client);
                Check.That(arrivedTick != 0 && arrivedTick - startTick <= 1500,
                           how + ": every agent arrived at its target (CrowdAgent.Position) within 1500 ticks (" + (arrivedTick != 0 ? (arrivedTick - startTick) + " ticks" : "not arrived") + ")");

                // Refusals are exceptions carrying the server's code.
                var nan = client.SetTargetAsync(new List<uint> { ids[0] }, float.NaN, 0f);
                var unknown = client.SetTargetAsync(new List<uint> { 999999 }, new CrowdVector2(1f, 1f));
                Check.That(Settle(nan, client) && Settle(unknown, client), how + ": both refused requests settle");
                var e1 = Failure(nan);
                var e2 = Failure(unknown);
                Check.That(e1 != null && e1.Code == ErrorCode.InvalidArgument && e1.RequestId != 0 && e1.Message.Contains("InvalidArgument"),
                           how + ": a NaN target fails the Task with CrowdException InvalidArgument (" + Describe(nan) + ")");
                Check.That(e2 != null && (e2.Code == ErrorCode.UnknownId || e2.Code == ErrorCode.StaleId),
                           how + ": an unknown id fails with CrowdException UnknownId (" + Describe(unknown) + ")");
                bool awaited = false;
                Func<Task> awaitRefusal = async () =>
                {
                    try
                    {
                        await client.RemoveObstacleAsync(424242);
                    }
                    catch (CrowdException e)
                    {
                        awaited = e.Code != ErrorCode.None;
                    }
                };
                var caught = awaitRefusal();
                Check.That(Settle(caught, client) && awaited, how + ": await on a refused request throws CrowdException (catch block ran)");

                var ping = client.PingAsync();
                Check.That(Settle(ping, client) && ping.Status == TaskStatus.RanToCompletion && ping.Result.ServerTick > 0 && client.LastRoundTripMs >= 0,
                           how + ": PingAsync completes with the Pong (" + Describe(ping) + ")");
                if (w.ProtocolMinor >= 1)
                {
                    var paths = client.GetPathsAsync(ids);
                    Check.That(Settle(paths, client) && paths.Status == TaskStatus.RanToCompletion && paths.Result.Paths_.Count == ids.Count,
                               how + ": GetPathsAsync completes with a path per agent (" + Describe(paths) + ")");
                }

                var square = new List<CrowdVector2> { new CrowdVector2(30f, 30f), new CrowdVector2(32f, 30f), new CrowdVector2(32f, 32f), new CrowdVector2(30f, 32f) };
                var add = client.AddObstacleAsync(square);
                Check.That(Settle(add, client) && add.Status == TaskStatus.RanToCompletion && add.Result.Ids.Count == 1, how + ": AddObstacleAsync(vectors) gives an obstacle id");
                if (add.Status == TaskStatus.RanToCompletion)
                {
                    uint oid = add.Result.Ids[0];
                    Check.That(Wait.Until(() => HasObstacle(client.LatestSnapshot, oid), client), how + ": the obstacle comes back in a snapshot");
                    var rm = client.RemoveObstacleAsync(oid);
                    Check.That(Settle(rm, client) && rm.Status == TaskStatus.RanToCompletion, how + ": RemoveObstacleAsync completes");
                }
                var vel = client.SetVelocitiesAsync(new List<uint> { ids[1] }, new List<CrowdVector2> { new CrowdVector2(1f, 0f) });
                Check.That(Settle(vel, client) && vel.Status == TaskStatus.RanToCompletion, how + ": SetVelocitiesAsync(vectors) completes");
                var removed = client.RemoveAgentsAsync(new List<uint> { ids[3] });
                Check.That(Settle(removed, client) && removed.Status == TaskStatus.RanToCompletion, how + ": RemoveAgentsAsync completes");
                CrowdAgent gone;
                Check.That(Wait.Until(() => !client.LatestSnapshot.TryGetAgent(ids[3], out gone), client), how + ": the removed agent leaves the snapshots");

                // The server is replaced behind the same URL: the client reconnects over WebSocket by itself.
                long connections = client.Connections;
                var welcomeBefore = client.Welcome;
                Check.That(server.Stop() == 0, how + ": crowd-server exits 0 on SIGTERM");
                Check.That(Wait.Until(() => client.State == ConnectionState.WaitingToReconnect || client.State == ConnectionState.Connecting, client),
                           how + ": the client notices the server went");
                server = new ServerProcess(serverExe, Args);
                relay.Upstream = server.HttpPort;
                Check.That(Wait.Until(() => client.Welcome != welcomeBefore && client.State == ConnectionState.Ready, client) && client.Connections > connections,
                           how + ": reconnected and welcomed by the new server (" + client.Connections + " connections)");
                var snapBefore = client.LatestSnapshot;
                Check.That(Wait.Until(() => client.LatestSnapshot != snapBefore && client.LatestSnapshot.Keyframe, client), how + ": the subscription is restored (a keyframe)");
                var again = client.ConnectAsync();
                Check.That(again.Status == TaskStatus.RanToCompletion && again.Result == client.Welcome, how + ": ConnectAsync when Ready completes at once with the Welcome");
                Check.That(faults.Count == 0 && client.ProtocolFaults == 0, how + ": no protocol faults from a real server (" + string.Join("; ", faults.ToArray()) + ")");

                client.Disconnect();
                client.Poll();
                Check.That(client.State == ConnectionState.Disconnected, how + ": Disconnect: state Disconnected");
                var late = client.SpawnAsync(specs);
                client.Poll();
                var e3 = Failure(late);
                Check.That(e3 != null && e3.Code == ErrorCode.None, how + ": a request after Disconnect fails with CrowdException Code None (" + Describe(late) + ")");
                Check.That(server.Stop() == 0, how + ": the second server exits 0");
            }
            finally
            {
                server.DumpIfFailed();
                client.Dispose();
                server.Dispose();
                relay.Dispose();
            }
        }

        static bool HasObstacle(WorldSnapshot s, uint id)
        {
            if (s == null) return false;
            foreach (var o in s.Obstacles)
                if (o.Id == id) return true;
            return false;
        }

        // ConnectAsync (keepTrying false) fails at the first failure, says what it met, and leaves the client stopped.
        static void Refusals(string serverExe)
        {
            var closed = new RefusingPort();
            int closedPort = closed.Port;
            var server = new ServerProcess(serverExe, Args + " --token secret=admin");
            try
            {
                var cases = new List<KeyValuePair<string, CrowdClient>>
                {
                    new KeyValuePair<string, CrowdClient>("ws:// to a closed port", new CrowdClient("ws://127.0.0.1:" + closedPort + "/ws")),
                    new KeyValuePair<string, CrowdClient>("polled ws:// to a closed port", new CrowdClient("ws://127.0.0.1:" + closedPort + "/ws", new CrowdClientOptions { PolledSockets = PolledWebSocket.Open })),
                    new KeyValuePair<string, CrowdClient>("ws:// to the TCP port", new CrowdClient("ws://127.0.0.1:" + server.Port + "/ws", new CrowdClientOptions { ConnectTimeoutMs = 1000 })),
                    new KeyValuePair<string, CrowdClient>("TCP to the HTTP port", new CrowdClient("127.0.0.1", server.HttpPort)),
                    new KeyValuePair<string, CrowdClient>("ws:// to the HTTP port's /healthz", new CrowdClient("ws://127.0.0.1:" + server.HttpPort + "/healthz")),
                };
                foreach (var c in cases)
                {
                    var t = c.Value.ConnectAsync();
                    bool settled = Settle(t, c.Value);
                    var e = Failure(t);
                    Check.That(settled && e != null && e.Code == ErrorCode.None && e.Message.Length > "crowd: None".Length,
                               c.Key + ": ConnectAsync fails with CrowdException None and a reason (" + Describe(t) + ")");
                    c.Value.Poll();
                    Check.That(c.Value.State == ConnectionState.Disconnected && c.Value.Connections <= 1, c.Key + ": and the client stopped trying (" + c.Value.State + ")");
                    c.Value.Dispose();
                }
                foreach (bool polled in new[] { false, true })
                {
                    var bad = new CrowdClient(server.WebSocketUrl, new CrowdClientOptions { Token = "wrong", PolledSockets = polled ? PolledWebSocket.Open : (PolledSocketFactory)null });
                    var t = bad.ConnectAsync(keepTrying: true);
                    var e = Settle(t, bad) ? Failure(t) : null;
                    Check.That(e != null && e.Code == ErrorCode.BadToken, (polled ? "polled: " : "") + "a bad token fails ConnectAsync with CrowdException BadToken, even keepTrying (" + Describe(t) + ")");
                    bad.Dispose();
                }
                var good = new CrowdClient("127.0.0.1:" + server.HttpPort, new CrowdClientOptions { Token = "secret", Transport = CrowdTransport.WebSocket });
                var ok = good.ConnectAsync();
                Check.That(Settle(ok, good) && ok.Status == TaskStatus.RanToCompletion && ok.Result.Role == Role.Admin,
                           "HOST:PORT with Transport WebSocket connects to ws://HOST:PORT/ws, the token's role granted (" + Describe(ok) + ")");
                good.Dispose();
                Check.That(server.Stop() == 0, "the token server exits 0");
            }
            finally
            {
                server.DumpIfFailed();
                server.Dispose();
                closed.Dispose();
            }
        }
    }
}
