// MessageTests.cs — every crowd.v1 message survives encode -> decode with its
// fields, oneofs keep one case, and a Hello starts with the protocol version.
using System.Collections.Generic;
using Crowd.V1;
using NUnit.Framework;

namespace Crowd.Tests
{
    [TestFixture]
    public class MessageTests
    {
        static T RoundTrip<T>(T m) where T : IProtoMessage, new()
        {
            return ProtoMessage.Parse<T>(ProtoMessage.ToByteArray(m));
        }

        [Test]
        public void ClientMessagesRoundTrip()
        {
            var hello = RoundTrip(new ClientMessage { RequestId = 7, Hello = new Hello { Token = "tök", ClientName = "u", KeepAgentsOnDisconnect = true } });
            Assert.AreEqual(ClientMessage.MsgOneofCase.Hello, hello.MsgCase);
            Assert.AreEqual(7u, hello.RequestId);
            Assert.AreEqual("tök", hello.Hello.Token);
            Assert.AreEqual(1u, hello.Hello.ProtocolMajor);
            Assert.IsTrue(hello.Hello.KeepAgentsOnDisconnect);

            var spawn = new SpawnAgents();
            spawn.Agents.Add(new AgentSpec { Position = new Vec2(1, 2), Target = new Vec2(3, 4), Radius = 0.5f, Layer = 2, Mask = 3 });
            spawn.Agents.Add(new AgentSpec());
            var s = RoundTrip(new ClientMessage { RequestId = 8, SpawnAgents = spawn }).SpawnAgents;
            Assert.AreEqual(2, s.Agents.Count);
            Assert.AreEqual(4f, s.Agents[0].Target.Y);
            Assert.AreEqual(0.5f, s.Agents[0].Radius.Value);
            Assert.AreEqual(3u, s.Agents[0].Mask.Value);
            Assert.IsNull(s.Agents[1].Position);

            var t = new SetTargets();
            t.Ids.AddRange(new uint[] { 1, 2, 4000000000 });
            t.X.Add(-1.25f);
            t.Y.Add(9f);
            var t2 = RoundTrip(new ClientMessage { SetTargets = t }).SetTargets;
            Assert.AreEqual(4000000000u, t2.Ids[2]);
            Assert.AreEqual(-1.25f, t2.X[0]);

            var v = new SetVelocities();
            v.Ids.Add(3); v.Vx.Add(1); v.Vy.Add(-1);
            Assert.AreEqual(-1f, RoundTrip(new ClientMessage { SetVelocities = v }).SetVelocities.Vy[0]);

            var rm = new RemoveAgents();
            rm.Ids.Add(12);
            Assert.AreEqual(12u, RoundTrip(new ClientMessage { RemoveAgents = rm }).RemoveAgents.Ids[0]);

            var ob = new AddObstacle();
            ob.X.AddRange(new[] { 0f, 1f, 1f }); ob.Y.AddRange(new[] { 0f, 0f, 1f });
            Assert.AreEqual(3, RoundTrip(new ClientMessage { AddObstacle = ob }).AddObstacle.Y.Count);
            Assert.AreEqual(5u, RoundTrip(new ClientMessage { RemoveObstacle = new RemoveObstacle { Id = 5 } }).RemoveObstacle.Id);

            var sub = RoundTrip(new ClientMessage { Subscribe = new Subscribe { Area = new Rect(-1, -2, 3, 4), Divisor = 2 } }).Subscribe;
            Assert.AreEqual(-2f, sub.Area.MinY);
            Assert.AreEqual(2u, sub.Divisor);
            Assert.IsTrue(RoundTrip(new ClientMessage { Subscribe = new Subscribe { Unsubscribe = true } }).Subscribe.Unsubscribe);
            Assert.AreEqual(1UL << 40, RoundTrip(new ClientMessage { Ping = new Ping { ClientTimeUs = 1UL << 40 } }).Ping.ClientTimeUs);
        }

        [Test]
        public void ServerMessagesRoundTrip()
        {
            var w = RoundTrip(new ServerMessage { Welcome = new Welcome { ProtocolMajor = 1, ServerVersion = "0.1.0", ClientId = 3, Role = Role.Admin, TickRateHz = 30, SnapshotDivisor = 2, Precision = 1000, WorldBounds = new Rect(-50, -50, 50, 50), Tick = 99 } }).Welcome;
            Assert.AreEqual(Role.Admin, w.Role);
            Assert.AreEqual(1000u, w.Precision);
            Assert.AreEqual(50f, w.WorldBounds.MaxX);
            Assert.AreEqual(99UL, w.Tick);

            var ack = new Ack { RequestId = 4 };
            ack.Ids.AddRange(new uint[] { 10, 11 });
            Assert.AreEqual(11u, RoundTrip(new ServerMessage { Ack = ack }).Ack.Ids[1]);

            var e = RoundTrip(new ServerMessage { Error = new Error { RequestId = 2, Code = ErrorCode.NotOwner, Message = "no", Index = 3 } }).Error;
            Assert.AreEqual(ErrorCode.NotOwner, e.Code);
            Assert.AreEqual(3u, e.Index);

            var p = RoundTrip(new ServerMessage { Pong = new Pong { ClientTimeUs = 5, ServerTick = 6 } }).Pong;
            Assert.AreEqual(6UL, p.ServerTick);

            var snap = new Snapshot { Tick = 1, StateHash = ulong.MaxValue, Keyframe = true, WorldAgentCount = 2, ObstaclesChanged = true };
            snap.Entries.Add(1UL << 5 | 31); snap.X.Add(-5); snap.Y.Add(int.MinValue); snap.Vx.Add(int.MaxValue); snap.Vy.Add(0);
            snap.Radius.Add(500); snap.Owner.Add(2); snap.RemovedIdDeltas.Add(9);
            var o = new Obstacle { Id = 1 };
            o.X.Add(1); o.Y.Add(2);
            snap.Obstacles.Add(o);
            var s2 = RoundTrip(new ServerMessage { Snapshot = snap }).Snapshot;
            Assert.AreEqual(ulong.MaxValue, s2.StateHash);
            Assert.AreEqual(int.MinValue, s2.Y[0]);
            Assert.AreEqual(int.MaxValue, s2.Vx[0]);
            Assert.AreEqual(1, s2.Obstacles.Count);
            Assert.AreEqual(2f, s2.Obstacles[0].Y[0]);
        }

        [Test]
        public void OneofKeepsTheLastCase()
        {
            var m = new ClientMessage { Ping = new Ping() };
            m.Hello = new Hello();
            Assert.AreEqual(ClientMessage.MsgOneofCase.Hello, m.MsgCase);
            Assert.IsNull(m.Ping);
            var w = new ProtoWriter();
            new ServerMessage { Ack = new Ack { RequestId = 1 } }.WriteTo(w);
            new ServerMessage { Pong = new Pong { ServerTick = 2 } }.WriteTo(w);
            var both = ProtoMessage.Parse<ServerMessage>(w.ToArray());
            Assert.AreEqual(ServerMessage.MsgOneofCase.Pong, both.MsgCase);
        }

        [Test]
        public void EmptyOneofIsNoneAndEmptyMessageIsPresent()
        {
            Assert.AreEqual(ServerMessage.MsgOneofCase.None, ProtoMessage.Parse<ServerMessage>(new byte[0]).MsgCase);
            var ping = RoundTrip(new ClientMessage { Ping = new Ping() });
            Assert.AreEqual(ClientMessage.MsgOneofCase.Ping, ping.MsgCase);
        }
    }
}
