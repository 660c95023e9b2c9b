// ServerMinorOneScenario.cs — the C# client's minor-1 side against a real crowd-server.
// Each part runs when the server shows its feature, so the test follows the server as
// it learns them: agent events and GetPaths when the Welcome says protocol minor >= 1,
// resume when the Welcome carries a resume key (the server runs with a fresh --data-dir).
// A server that shows neither makes the test report itself skipped (exit 77), never passed.
//   events: a walk ends in AgentArrived (its target, its owner, where it stopped);
//           a target inside an obstacle gives AgentUnreachable with a point outside it.
//   paths:  GetPaths on a walking agent: its corners end at its goal, the target.
//   resume: the server restarts on the same data dir and the client, reconnecting by
//           itself, presents its key: the same client id back (Welcome.resumed), and the
//           kept agent obeys it; then it goes, and a new client presenting the key (a game
//           restarted) gets the identity back the same way.
using System;
using System.Collections.Generic;
using System.IO;
using Crowd.Client;
using Crowd.V1;

namespace Crowd.Harness
{
    public static class ServerMinorOneScenario
    {
        const string Args = "--listen 127.0.0.1:0 --http 127.0.0.1:0 --log-level warn --data-dir ";

        public static void Run(string serverExe)
        {
            string dataDir = Path.Combine(Path.GetTempPath(), "crowd-unity-minor1-" + Guid.NewGuid().ToString("N"));
            Directory.CreateDirectory(dataDir);
            var server = new ServerProcess(serverExe, Args + dataDir);
            var relay = new TcpRelay(server.Port); // the client keeps one address across a server restart
            var client = new CrowdClient("127.0.0.1", relay.Port, new CrowdClientOptions
            {
                ClientName = "unity-minor1",
                KeepAgentsOnDisconnect = true,
                ReconnectInitialSeconds = 0.05,
                ReconnectMaxSeconds = 0.5,
            });
            var faults = new List<string>();
            client.ProtocolFault += f => faults.Add(f);
            client.ErrorReceived += e => Console.WriteLine("     " + e);
            try
            {
                client.Connect();
                Check.That(Wait.Until(() => client.Welcome != null, client), "Welcome received");
                var w = client.Welcome;
                if (w == null) return;
                bool minor1 = w.ProtocolMinor >= 1, resumable = w.ResumeKey.Length > 0;
                Console.WriteLine("     server " + w.ServerVersion + " speaks minor " + w.ProtocolMinor + (resumable ? ", gives resume keys" : ", gives no resume key"));
                if (!minor1 && !resumable)
                {
                    Check.Skip("the server speaks protocol minor 0 and gives no resume key");
                    return;
                }
                if (minor1)
                {
                    Events(client);
                    PathsOf(client);
                }
                else
                {
                    // Before minor 1 a GetPaths is still answered, by an Error (the README says so).
                    Error refused = null;
                    client.GetPaths(new List<uint> { 1 }, p => Check.That(false, "a minor-0 server answered GetPaths with Paths"), e => refused = e);
                    Check.That(Wait.Until(() => refused != null, client) && refused.Code != ErrorCode.None,
                               "minor 0: GetPaths is answered by an Error (" + (refused != null ? refused.Code.ToString() : "none") + ")");
                }
                if (resumable) server = Resume(client, server, relay, serverExe, Args + dataDir);
                Check.That(faults.Count == 0, "no protocol faults (" + string.Join("; ", faults.ToArray()) + ")");
            }
            finally
            {
                client.Dispose();
                relay.Dispose();
                server.DumpIfFailed();
                server.Dispose();
                try { Directory.Delete(dataDir, true); } catch (IOException) { }
            }
        }

        static uint SpawnOne(CrowdClient client, AgentSpec spec, string what)
        {
            uint id = 0;
            client.Spawn(new List<AgentSpec> { spec }, a => id = a.Ids[0], e => Check.That(false, what + ": spawn refused: " + e));
            Check.That(Wait.Until(() => id != 0, client), what + ": spawned");
            return id;
        }

        static void Events(CrowdClient client)
        {
            var arrived = new Dictionary<uint, AgentEvent>();
            var unreachable = new Dictionary<uint, AgentEvent>();
            client.AgentArrived += e => arrived[e.AgentId] = e;
            client.AgentUnreachable += e => unreachable[e.AgentId] = e;

            uint walker = SpawnOne(client, new AgentSpec { Position = new Vec2(0, -20), Target = new Vec2(6, -20), Radius = 0.5f, Steer = SteerMode.Navigate }, "a walker");
            Check.That(Wait.Until(() => arrived.ContainsKey(walker), client), "AgentArrived for the walker");
            AgentEvent a;
            if (arrived.TryGetValue(walker, out a))
            {
                Check.That(a.Target != null && a.Target.X == 6f && a.Target.Y == -20f, "the event names the target it was given");
                Check.That(a.Owner == client.Welcome.ClientId, "and this client as owner");
                Check.That(a.Point != null && Math.Abs(a.Point.X - 6f) < 1f && Math.Abs(a.Point.Y + 20f) < 1f,
                           "and where the agent stopped, at the target (" + (a.Point != null ? a.Point.X + ", " + a.Point.Y : "none") + ")");
            }

            // A target inside a square obstacle cannot be reached: the event names a point outside it.
            uint box = 0;
            client.AddObstacle(new List<float> { -30, -26, -26, -30 }, new List<float> { -2, -2, 2, 2 }, ack => box = ack.Ids[0],
                               e => Check.That(false, "obstacle refused: " + e));
            Check.That(Wait.Until(() => box != 0, client), "a square obstacle added");
            uint blocked = SpawnOne(client, new AgentSpec { Position = new Vec2(-20, 0), Target = new Vec2(-28, 0), Radius = 0.5f, Steer = SteerMode.Navigate }, "a walker to inside the obstacle");
            Check.That(Wait.Until(() => unreachable.ContainsKey(blocked), client), "AgentUnreachable for it");
            AgentEvent u;
            if (unreachable.TryGetValue(blocked, out u))
            {
                bool inside = u.Point != null && u.Point.X > -30f && u.Point.X < -26f && u.Point.Y > -2f && u.Point.Y < 2f;
                Check.That(u.Point != null && !inside, "its point is outside the obstacle (" + (u.Point != null ? u.Point.X + ", " + u.Point.Y : "none") + ")");
                Check.That(u.Target != null && u.Target.X == -28f && u.Target.Y == 0f, "and the target is the one given");
            }
        }

        static void PathsOf(CrowdClient client)
        {
            uint id = SpawnOne(client, new AgentSpec { Position = new Vec2(0, 20), Target = new Vec2(40, 20), Radius = 0.5f, MaxSpeed = 0.5f, PrefSpeed = 0.5f }, "a slow walker");
            // Its path query waits in the server's queue for a few ticks: ask until the path has
            // corners (each ask waits for its answer).
            AgentPath path = null;
            for (int ask = 0; ask < 300 && (path == null || path.X.Count == 0); ask++)
            {
                Paths answer = null;
                Error refused = null;
                client.GetPaths(new List<uint> { id }, p => answer = p, e => refused = e);
                if (!Wait.Until(() => answer != null || refused != null, client) || answer == null)
                {
                    Check.That(false, "GetPaths answered by Paths" + (refused != null ? " (refused: " + refused + ")" : ""));
                    return;
                }
                path = answer.Paths_.Find(p => p.AgentId == id);
                if (path == null) break;
            }
            Check.That(path != null, "GetPaths answered with the agent's path");
            if (path == null) return;
            Check.That(!path.Unreachable && path.Goal != null && Math.Abs(path.Goal.X - 40f) < 0.05f && Math.Abs(path.Goal.Y - 20f) < 0.05f,
                       "its goal is the target, reachable (" + (path.Goal != null ? path.Goal.X + ", " + path.Goal.Y : "none") + ")");
            Check.That(path.X.Count >= 1 && path.X.Count == path.Y.Count && Math.Abs(path.X[path.X.Count - 1] - path.Goal.X) < 0.05f && Math.Abs(path.Y[path.Y.Count - 1] - path.Goal.Y) < 0.05f,
                       "its corners end at the goal (" + path.X.Count + " corners)");
        }

        // A client presenting `key`; null unless the server resumed it. The server gives an old
        // identity back only once it has seen that client's connection close, which this cannot
        // observe: a Welcome that did not resume is a new identity, so that client goes and the key
        // is presented again (each try waits for its Welcome; never a fixed wait).
        static CrowdClient Resumed(int port, string key)
        {
            for (int attempt = 0; attempt < 100; attempt++)
            {
                var c = new CrowdClient("127.0.0.1", port, new CrowdClientOptions { ClientName = "unity-minor1-again", ResumeKey = key, KeepAgentsOnDisconnect = true, Resume = false });
                c.Connect();
                bool welcomed = Wait.Until(() => c.Welcome != null, c);
                if (welcomed && c.Welcome.Resumed) return c;
                c.Dispose();
                if (!welcomed) return null; // no server to ask
            }
            return null;
        }

        static void ObeysResumed(CrowdClient c, uint owner, uint kept, string what)
        {
            Check.That(c != null && c.Welcome != null && c.Welcome.Resumed, what + ": the Hello presenting the key is resumed");
            if (c == null || c.Welcome == null) return;
            Check.That(c.Welcome.ClientId == owner, what + ": the same client id " + owner + " (got " + c.Welcome.ClientId + ")");
            Check.That(c.Welcome.ResumeKey.Length > 0, what + ": and a resume key for next time");
            bool acked = false;
            Error err = null;
            c.SetTarget(new List<uint> { kept }, 16, 16, a => acked = true, e => err = e);
            Check.That(Wait.Until(() => acked || err != null, c) && acked, what + ": the kept agent obeys the resumed client" + (err != null ? " (" + err + ")" : ""));
        }

        static ServerProcess Resume(CrowdClient client, ServerProcess server, TcpRelay relay, string serverExe, string args)
        {
            uint owner = client.Welcome.ClientId;
            uint kept = SpawnOne(client, new AgentSpec { Position = new Vec2(15, 15) }, "an agent to keep");
            int code = server.Stop();
            Check.That(code == 0, "crowd-server exits 0 on SIGTERM (" + code + ")");
            var restarted = new ServerProcess(serverExe, args);
            relay.Upstream = restarted.Port;
            var before = client.Welcome;
            Check.That(Wait.Until(() => client.Welcome != before && client.Welcome != null, client), "after a server restart the client reconnects by itself");
            ObeysResumed(client, owner, kept, "reconnected to a server restarted on the same data dir");

            string key = client.ResumeKey;
            client.Disconnect();
            var again = Resumed(restarted.Port, key);
            try
            {
                ObeysResumed(again, owner, kept, "a new client presenting the saved key");
            }
            finally
            {
                if (again != null) again.Dispose();
            }
            return restarted;
        }
    }
}
