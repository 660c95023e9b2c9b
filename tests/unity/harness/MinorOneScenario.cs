// MinorOneScenario.cs — CrowdClient's protocol-minor-1 side against a scripted fake
// server on loopback: the resume key (from the options, then from each Welcome)
// presented in the next Hello, kept when a Hello that presented it is refused for
// a passing reason (STORAGE_UNAVAILABLE) and forgotten for any other, the events subscription sent again after a reconnect, SteerMode on
// spawn and targets, agent events raised per kind, GetPaths answered by Paths
// (or an Error, or lost with the connection).
using System;
using System.Collections.Generic;
using System.Net;
using System.Net.Sockets;
using Crowd.Client;
using Crowd.V1;

namespace Crowd.Harness
{
    public static class MinorOneScenario
    {
        static AgentEvent Event(uint id, AgentEventKind kind, float px, float py)
        {
            return new AgentEvent { AgentId = id, Kind = kind, Point = new Vec2(px, py), Target = new Vec2(9, 9), Owner = 7 };
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
                Token = "t",
                ResumeKey = "saved-by-the-game",
                ReconnectInitialSeconds = 0.02,
                ReconnectMaxSeconds = 0.1,
            });
            var arrived = new List<AgentEvent>();
            var unreachable = new List<AgentEvent>();
            var stuck = new List<AgentEvent>();
            var batches = new List<AgentEvents>();
            var pathsSeen = new List<Paths>();
            client.AgentArrived += e => arrived.Add(e);
            client.AgentUnreachable += e => unreachable.Add(e);
            client.AgentStuck += e => stuck.Add(e);
            client.AgentEventsReceived += b => batches.Add(b);
            client.PathsReceived += p => pathsSeen.Add(p);
            var faults = new List<string>();
            client.ProtocolFault += f => faults.Add(f);
            try
            {
                Check.That(client.SubscribeEvents(true) == 0, "SubscribeEvents before Connect is remembered (returns 0)");
                client.Connect();

                // ---- connection 1: the saved key, then a Welcome with a new one; steer, events, paths
                using (var p = new FakeServerScenario.Peer(listener.AcceptSocket()))
                {
                    var hello = p.Read();
                    Check.That(hello != null && hello.Hello != null && hello.Hello.ProtocolMinor == Protocol.Minor && hello.Hello.ResumeKey == "saved-by-the-game",
                               "the first Hello says its minor and presents options.ResumeKey");
                    var se = p.Read();
                    Check.That(se != null && se.SubscribeEvents != null && se.SubscribeEvents.AllAgents, "then the remembered SubscribeEvents (all agents)");
                    p.Send(new ServerMessage { Welcome = new Welcome { ProtocolMajor = 1, ProtocolMinor = 1, ClientId = 7, Precision = 1000, ResumeKey = "k1", Resumed = true } });
                    Check.That(Wait.Until(() => client.Welcome != null, client) && client.Welcome.Resumed && client.ResumeKey == "k1",
                               "Welcome.Resumed is seen and its resume key kept (" + client.ResumeKey + ")");

                    client.SetTarget(new uint[] { 1, 2 }, 3, 4, steer: SteerMode.Direct);
                    var st = p.Read();
                    Check.That(st != null && st.SetTargets != null && st.SetTargets.Steer == SteerMode.Direct && st.SetTargets.X[0] == 3f,
                               "SetTarget carries its SteerMode");
                    client.SetTarget(new uint[] { 1 }, 5, 6);
                    st = p.Read();
                    Check.That(st != null && st.SetTargets != null && st.SetTargets.Steer == SteerMode.Default, "without one: STEER_DEFAULT (the server's choice)");
                    uint spawnedId = 0;
                    client.Spawn(new List<AgentSpec> { new AgentSpec { Position = new Vec2(0, 0), Target = new Vec2(1, 1), Steer = SteerMode.Navigate } },
                                 a => spawnedId = a.Ids[0]);
                    var sp = p.Read();
                    Check.That(sp != null && sp.SpawnAgents != null && sp.SpawnAgents.Agents[0].Steer == SteerMode.Navigate, "AgentSpec.Steer goes out with the spawn");
                    var ack = new Ack { RequestId = sp.RequestId };
                    ack.Ids.Add(41);
                    p.Send(new ServerMessage { Ack = ack });
                    Check.That(Wait.Until(() => spawnedId == 41, client), "the spawn's Ack");

                    var ev = new AgentEvents { Tick = 77 };
                    ev.Events.Add(Event(41, AgentEventKind.Arrived, 1, 1));
                    ev.Events.Add(Event(42, AgentEventKind.Unreachable, 2.5f, -3));
                    ev.Events.Add(Event(43, AgentEventKind.Stuck, 0.5f, 0.5f));
                    ev.Events.Add(Event(44, (AgentEventKind)9, 0, 0)); // a kind from a newer server
                    p.Send(new ServerMessage { AgentEvents = ev });
                    Check.That(Wait.Until(() => batches.Count == 1, client), "AgentEventsReceived for the batch");
                    Check.That(batches.Count == 1 && batches[0].Tick == 77 && batches[0].Events.Count == 4, "the batch keeps its tick and all four events");
                    Check.That(arrived.Count == 1 && arrived[0].AgentId == 41 && arrived[0].Point.X == 1f, "AgentArrived for agent 41");
                    Check.That(unreachable.Count == 1 && unreachable[0].AgentId == 42 && unreachable[0].Point.X == 2.5f && unreachable[0].Point.Y == -3f && unreachable[0].Target.X == 9f,
                               "AgentUnreachable with the nearest reachable point (2.5, -3) and the target");
                    Check.That(stuck.Count == 1 && stuck[0].AgentId == 43, "AgentStuck for agent 43");
                    Check.That(faults.Count == 0, "an unknown event kind is no fault (" + faults.Count + ")");

                    Paths answer = null;
                    Error pathError = null;
                    uint req = client.GetPaths(new uint[] { 41, 42 }, x => answer = x, e => pathError = e);
                    var gp = p.Read();
                    Check.That(gp != null && gp.GetPaths != null && gp.RequestId == req && gp.GetPaths.Ids.Count == 2 && gp.GetPaths.Ids[1] == 42,
                               "GetPaths goes out with its ids and request id");
                    var paths = new Paths { RequestId = req };
                    var ap = new AgentPath { AgentId = 41, Goal = new Vec2(1, 1) };
                    ap.X.AddRange(new[] { 0f, 1f });
                    ap.Y.AddRange(new[] { 0f, 1f });
                    var poly = new Polygon();
                    poly.X.AddRange(new[] { -1f, 2f, 2f });
                    poly.Y.AddRange(new[] { -1f, -1f, 2f });
                    ap.Corridor.Add(poly);
                    paths.Paths_.Add(ap);
                    paths.Paths_.Add(new AgentPath { AgentId = 42, Goal = new Vec2(2.5f, -3), Unreachable = true });
                    p.Send(new ServerMessage { Paths = paths });
                    Check.That(Wait.Until(() => answer != null, client), "the Paths answer reaches GetPaths' callback");
                    Check.That(answer != null && answer.Paths_.Count == 2 && answer.Paths_[0].Corridor[0].X[1] == 2f && answer.Paths_[1].Unreachable && pathError == null,
                               "with its corners, corridor and the unreachable flag");
                    Check.That(pathsSeen.Count == 1 && pathsSeen[0] == answer, "and PathsReceived after it");

                    Error refused = null;
                    uint req2 = client.GetPaths(new uint[] { 5 }, x => answer = null, e => refused = e);
                    Check.That(p.Read().RequestId == req2, "a second GetPaths");
                    p.Send(new ServerMessage { Error = new Error { RequestId = req2, Code = ErrorCode.NotOwner } });
                    Check.That(Wait.Until(() => refused != null, client) && refused.Code == ErrorCode.NotOwner && answer != null, "an Error answers GetPaths through onError");

                    Error lost = null;
                    client.GetPaths(new uint[] { 41 }, x => { }, e => lost = e);
                    p.Read();
                    p.Socket.Shutdown(SocketShutdown.Both);
                    Check.That(Wait.Until(() => lost != null, client) && lost.Code == ErrorCode.None, "a GetPaths lost with its connection fails with Code None");
                }

                // ---- connection 2: the Welcome's key is presented; a refused resume gives a new key
                using (var p = new FakeServerScenario.Peer(listener.AcceptSocket()))
                {
                    var hello = p.Read();
                    Check.That(hello != null && hello.Hello != null && hello.Hello.ResumeKey == "k1", "after a reconnect the Hello presents the last Welcome's key");
                    var se = p.Read();
                    Check.That(se != null && se.SubscribeEvents != null && se.SubscribeEvents.AllAgents, "and SubscribeEvents again");
                    p.Send(new ServerMessage { Welcome = new Welcome { ProtocolMajor = 1, ProtocolMinor = 1, ClientId = 8, ResumeKey = "k2", Resumed = false } });
                    // The key is taken on the receive thread, the Welcome property at Poll: wait for the Welcome itself.
                    Check.That(Wait.Until(() => client.Welcome != null && client.Welcome.ClientId == 8, client) && client.ResumeKey == "k2" && !client.Welcome.Resumed,
                               "a key not honoured: the new identity's key replaces it");
                    p.Socket.Shutdown(SocketShutdown.Both);
                }

                // ---- connection 3: the Hello that presented k2 is refused for a passing reason
                using (var p = new FakeServerScenario.Peer(listener.AcceptSocket()))
                {
                    var hello = p.Read();
                    Check.That(hello != null && hello.Hello != null && hello.Hello.ResumeKey == "k2", "the Hello presents k2");
                    p.Send(new ServerMessage { Error = new Error { RequestId = hello.RequestId, Code = ErrorCode.StorageUnavailable } });
                    p.Socket.Shutdown(SocketShutdown.Both);
                }

                // ---- connection 4: so the key is kept; now it is refused for another reason
                using (var p = new FakeServerScenario.Peer(listener.AcceptSocket()))
                {
                    var hello = p.Read();
                    Check.That(hello != null && hello.Hello != null && hello.Hello.ResumeKey == "k2", "after STORAGE_UNAVAILABLE the key is presented again");
                    p.Send(new ServerMessage { Error = new Error { RequestId = hello.RequestId, Code = (ErrorCode)24 } }); // a code from a newer server
                    p.Socket.Shutdown(SocketShutdown.Both);
                }

                // ---- connection 5: so the next Hello starts afresh
                using (var p = new FakeServerScenario.Peer(listener.AcceptSocket()))
                {
                    var hello = p.Read();
                    Check.That(hello != null && hello.Hello != null && hello.Hello.ResumeKey == "", "after a Hello refused for another reason the key is forgotten: a fresh identity");
                    Check.That(p.Read().SubscribeEvents != null, "SubscribeEvents again");
                    client.UnsubscribeEvents();
                    var un = p.ReadUntil(ClientMessage.MsgOneofCase.SubscribeEvents);
                    Check.That(un != null && un.SubscribeEvents.Unsubscribe, "UnsubscribeEvents sends SubscribeEvents.unsubscribe");
                    client.Disconnect();
                }
                client.Poll();
                Check.That(client.Connections == 5, "five connections (" + client.Connections + ")");
                Check.That(!unhandled, "no unhandled exception on any thread");
            }
            finally
            {
                client.Dispose();
                listener.Stop();
            }
        }
    }
}
