// WorldsScenario.cs — worlds (minor 2) from the C# client against a real crowd-server:
// Hello names no world (the Welcome says "default") or one (CrowdClientOptions.World);
// ListWorlds (callback and Task); the refusals (NoSuchWorld, WorldForbidden at Hello,
// final: the client stops; WorldExists, closing the default world, joining no world).
// Where the server holds many worlds: CreateWorld, a client in the new world whose
// agents the default world never sees, JoinWorld moving a viewer there, CloseWorld
// ending its clients with WorldClosed. A server that answers CreateWorld with
// LimitWorlds holds one world: that part reports itself skipped (exit 77).
using System;
using System.Collections.Generic;
using System.Linq;
using Crowd.Client;
using Crowd.V1;

namespace Crowd.Harness
{
    public static class WorldsScenario
    {
        const string Args = "--listen 127.0.0.1:0 --http 127.0.0.1:0 --log-level warn --max-worlds 3 " +
                            "--token boss=admin --token p1=player --token arena=player@arena";

        static CrowdClient Client(ServerProcess server, string token, string world, List<CrowdClient> all)
        {
            var c = new CrowdClient("127.0.0.1", server.Port, new CrowdClientOptions
            {
                Token = token,
                ClientName = "unity-worlds-" + token,
                World = world,
                ReconnectInitialSeconds = 0.05,
                ReconnectMaxSeconds = 0.2,
            });
            all.Add(c);
            return c;
        }

        static Error Refusal(Func<Action<Ack>, Action<Error>, uint> send, CrowdClient c)
        {
            Error got = null;
            bool acked = false;
            send(a => acked = true, e => got = e);
            Wait.Until(() => got != null || acked, c);
            return got;
        }

        public static void Run(string serverExe)
        {
            var server = new ServerProcess(serverExe, Args);
            var all = new List<CrowdClient>();
            try
            {
                var boss = Client(server, "boss", "", all);
                boss.Connect();
                Check.That(Wait.Until(() => boss.Welcome != null, boss), "Welcome without a world named");
                if (boss.Welcome == null) return;
                Check.That(boss.Welcome.World == "default" && boss.WorldName == "default",
                           "the Welcome names the default world (" + boss.Welcome.World + ")");

                WorldList list = null;
                boss.ListWorlds(l => list = l);
                Check.That(Wait.Until(() => list != null, boss), "ListWorlds answered by a WorldList");
                if (list == null) return;
                Check.That(list.MaxWorlds == 3 && list.Worlds.Any(w => w.Name == "default" && w.TickRate > 0),
                           "WorldList: max_worlds 3 and the default world with its tick rate");
                var task = boss.ListWorldsAsync();
                Check.That(Wait.Until(() => task.IsCompleted, boss) && task.Status == System.Threading.Tasks.TaskStatus.RanToCompletion &&
                           task.Result.Worlds.Count == list.Worlds.Count, "ListWorldsAsync completes with the same list");

                var named = Client(server, "p1", "default", all);
                named.Connect();
                Check.That(Wait.Until(() => named.Welcome != null, named) && named.WorldName == "default",
                           "CrowdClientOptions.World = default: welcomed there");

                foreach (var t in new[] { Tuple.Create("p1", "nowhere", ErrorCode.NoSuchWorld),
                                          Tuple.Create("p1", "../x", ErrorCode.BadWorldName),
                                          Tuple.Create("arena", "", ErrorCode.WorldForbidden) })
                {
                    var c = Client(server, t.Item1, t.Item2, all);
                    Error refused = null;
                    c.HelloRefused += e => refused = e;
                    c.Connect();
                    Check.That(Wait.Until(() => refused != null && c.State == ConnectionState.Disconnected, c) &&
                               refused.Code == t.Item3 && c.Connections == 1,
                               "world '" + t.Item2 + "' with token " + t.Item1 + ": Hello refused with " + t.Item3 +
                               ", final (" + (refused != null ? refused.Code.ToString() : "none") + ", " + c.State + ")");
                }

                var e1 = Refusal((a, e) => boss.CreateWorld("default", null, a, e), boss);
                Check.That(e1 != null && e1.Code == ErrorCode.WorldExists, "CreateWorld default: WorldExists");
                var e2 = Refusal((a, e) => boss.CloseWorld("default", false, a, e), boss);
                Check.That(e2 != null && e2.Code == ErrorCode.WorldForbidden, "CloseWorld default: WorldForbidden");
                var e3 = Refusal((a, e) => boss.JoinWorld("nowhere", a, e), boss);
                Check.That(e3 != null && e3.Code == ErrorCode.NoSuchWorld, "JoinWorld nowhere: NoSuchWorld");

                var created = Refusal((a, e) => boss.CreateWorld("arena", new WorldSettings { TickRate = 20 }, a, e), boss);
                if (created != null && created.Code == ErrorCode.LimitWorlds)
                {
                    Check.Skip("CreateWorld answers LimitWorlds: this server holds one world");
                    return;
                }
                Check.That(created == null, "CreateWorld arena acked (" + (created != null ? created.Code.ToString() : "ack") + ")");
                ManyWorlds(server, boss, all);
            }
            finally
            {
                foreach (var c in all) c.Dispose();
                server.DumpIfFailed();
                server.Dispose();
            }
        }

        static bool Near(WorldSnapshot s, float x, float y)
        {
            if (s == null) return false;
            foreach (var a in s.Agents)
                if (Math.Abs(a.X - x) < 2 && Math.Abs(a.Y - y) < 2) return true;
            return false;
        }

        static void ManyWorlds(ServerProcess server, CrowdClient boss, List<CrowdClient> all)
        {
            var player = Client(server, "arena", "arena", all);
            var closed = new List<Error>();
            player.ErrorReceived += e => { if (e.Code == ErrorCode.WorldClosed) closed.Add(e); };
            player.Connect();
            Check.That(Wait.Until(() => player.Welcome != null, player) && player.WorldName == "arena" && player.Welcome.TickRateHz == 20,
                       "a client of token arena@arena welcomed in arena at its 20 Hz");
            bool spawned = false;
            player.Spawn(new List<AgentSpec> { new AgentSpec { Position = new Vec2 { X = 5, Y = 5 } } }, a => spawned = true);
            Check.That(Wait.Until(() => spawned, player), "an agent spawned in arena");

            var viewer = Client(server, "boss", "", all);
            viewer.Subscribe();
            viewer.Connect();
            Check.That(Wait.Until(() => viewer.LatestSnapshot != null && viewer.LatestSnapshot.Tick > 3, viewer), "the default world's snapshots");
            Check.That(!Near(viewer.LatestSnapshot, 5, 5), "arena's agent is not in the default world's snapshots");

            bool joined = false;
            viewer.JoinWorld("arena", a => { joined = true; viewer.Subscribe(); });
            Check.That(Wait.Until(() => joined && Near(viewer.LatestSnapshot, 5, 5), viewer) && viewer.WorldName == "arena",
                       "JoinWorld arena, subscribed again: arena's agent in view");

            bool closeAcked = false;
            boss.CloseWorld("arena", true, a => closeAcked = true);
            Check.That(Wait.Until(() => closeAcked && closed.Count > 0 && player.State == ConnectionState.Disconnected, boss, player),
                       "CloseWorld arena: its client hears WorldClosed and stops (" + player.State + ")");
        }
    }
}
