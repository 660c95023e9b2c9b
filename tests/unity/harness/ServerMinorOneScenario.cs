// ServerMinorOneScenario.cs — the C# client's minor-1 side against a real crowd-server.
// Each part runs when the server shows its feature, so the test follows the server as
// it learns them: agent events and GetPaths when the Welcome says protocol minor >= 1,
// resume when the Welcome carries a resume key. A server that shows neither makes the
// test report itself skipped (exit 77), never passed.
//   events: a Direct walk ends in AgentArrived (its target, its owner, where it stopped);
//           a target inside an obstacle gives AgentUnreachable with a point outside it.
//   paths:  GetPaths on a walking agent: its corners end at its goal, the target.
//   resume: a client keeping its agents goes; a new one presenting the key gets the same
//           client id back (Welcome.resumed) and may command the old agent.
using System;
using System.Collections.Generic;
using Crowd.Client;
using Crowd.V1;

namespace Crowd.Harness
{
    public static class ServerMinorOneScenario
    {
        const string Args = "--listen 127.0.0.1:0 --http 127.0.0.1:0 --log-level warn";

        public static void Run(string serverExe)
        {
            var server = new ServerProcess(serverExe, Args);
            var client = new CrowdClient("127.0.0.1", server.Port, new CrowdClientOptions { ClientName = "unity-minor1", KeepAgentsOnDisconnect = true });
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
                if (resumable) Resume(client, server.Port);
                Check.That(faults.Count == 0, "no protocol faults (" + string.Join("; ", faults.ToArray()) + ")");
            }
            finally
            {
                client.Dispose();
                server.DumpIfFailed();
                server.Dispose();
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

            uint walker = SpawnOne(client, new AgentSpec { Position = new Vec2(0, -20), Target = new Vec2(6, -20), Radius = 0.5f, Steer = SteerMode.Direct }, "a Direct walker");
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
            Paths answer = null;
            Error refused = null;
            client.GetPaths(new List<uint> { id }, p => answer = p, e => refused = e);
            Check.That(Wait.Until(() => answer != null || refused != null, client) && answer != null, "GetPaths answered by Paths" + (refused != null ? " (refused: " + refused + ")" : ""));
            if (answer == null) return;
            AgentPath path = answer.Paths_.Find(p => p.AgentId == id);
            Check.That(path != null, "the answer holds the agent's path");
            if (path == null) return;
            Check.That(!path.Unreachable && path.Goal != null && path.Goal.X == 40f && path.Goal.Y == 20f, "its goal is the target, reachable");
            Check.That(path.X.Count >= 1 && path.X.Count == path.Y.Count && Math.Abs(path.X[path.X.Count - 1] - 40f) < 0.01f && Math.Abs(path.Y[path.Y.Count - 1] - 20f) < 0.01f,
                       "its corners end at the goal (" + path.X.Count + " corners)");
        }

        static void Resume(CrowdClient first, int port)
        {
            uint owner = first.Welcome.ClientId;
            uint kept = SpawnOne(first, new AgentSpec { Position = new Vec2(15, 15) }, "an agent to keep");
            string key = first.ResumeKey;
            first.Disconnect();
            var second = new CrowdClient("127.0.0.1", port, new CrowdClientOptions { ClientName = "unity-minor1-again", ResumeKey = key, KeepAgentsOnDisconnect = true });
            try
            {
                second.Connect();
                Check.That(Wait.Until(() => second.Welcome != null, second), "a new connection presenting the key is welcomed");
                if (second.Welcome == null) return;
                Check.That(second.Welcome.Resumed && second.Welcome.ClientId == owner, "resumed: the same client id " + owner + " (got " + second.Welcome.ClientId + ", resumed " + second.Welcome.Resumed + ")");
                Check.That(second.Welcome.ResumeKey.Length > 0, "and a resume key for next time");
                bool acked = false;
                Error err = null;
                second.SetTarget(new List<uint> { kept }, 16, 16, a => acked = true, e => err = e);
                Check.That(Wait.Until(() => acked || err != null, second) && acked, "the kept agent obeys the resumed client" + (err != null ? " (" + err + ")" : ""));
            }
            finally
            {
                second.Dispose();
            }
        }
    }
}
