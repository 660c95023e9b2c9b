// MinorOneTests.cs — the messages protocol minor 1 added (SteerMode, SubscribeEvents,
// GetPaths, AgentEvents, Paths, Polygon, resume keys, ERROR_STORAGE_UNAVAILABLE),
// against frames built outside this codec: each byte array below is what
// `protoc --encode` (Google's own encoder) writes for the text in its comment.
using Crowd.V1;
using NUnit.Framework;

namespace Crowd.Tests
{
    [TestFixture]
    public class MinorOneTests
    {
        static byte[] Bytes(params int[] b)
        {
            var r = new byte[b.Length];
            for (int i = 0; i < b.Length; i++) r[i] = (byte)b[i];
            return r;
        }

        static void AssertSameBytes(byte[] expected, IProtoMessage m)
        {
            Assert.AreEqual(System.BitConverter.ToString(expected), System.BitConverter.ToString(ProtoMessage.ToByteArray(m)));
        }

        // agent_events { tick: 300
        //   events { agent_id: 5 kind: AGENT_EVENT_ARRIVED point { x: 1.5 y: -2 } target { x: 1.5 y: -2 } owner: 3 }
        //   events { agent_id: 6 kind: AGENT_EVENT_UNREACHABLE point { x: 4 y: 0.5 } target { x: 40 y: 40 } owner: 3 }
        //   events { agent_id: 7 kind: AGENT_EVENT_STUCK point { x: -1 y: 8 } owner: 3 } }
        static readonly byte[] AgentEventsFrame = Bytes(
            0x32, 0x57, 0x08, 0xac, 0x02, 0x12, 0x1e, 0x08, 0x05, 0x10, 0x01, 0x1a, 0x0a, 0x0d, 0x00, 0x00, 0xc0, 0x3f, 0x15, 0x00,
            0x00, 0x00, 0xc0, 0x22, 0x0a, 0x0d, 0x00, 0x00, 0xc0, 0x3f, 0x15, 0x00, 0x00, 0x00, 0xc0, 0x28, 0x03, 0x12, 0x1e, 0x08,
            0x06, 0x10, 0x02, 0x1a, 0x0a, 0x0d, 0x00, 0x00, 0x80, 0x40, 0x15, 0x00, 0x00, 0x00, 0x3f, 0x22, 0x0a, 0x0d, 0x00, 0x00,
            0x20, 0x42, 0x15, 0x00, 0x00, 0x20, 0x42, 0x28, 0x03, 0x12, 0x12, 0x08, 0x07, 0x10, 0x03, 0x1a, 0x0a, 0x0d, 0x00, 0x00,
            0x80, 0xbf, 0x15, 0x00, 0x00, 0x00, 0x41, 0x28, 0x03);

        // paths { request_id: 9
        //   paths { agent_id: 5 x: 0 x: 2.5 y: 0 y: 4 corridor { x: 0 x: 1 x: 1 y: 0 y: 0 y: 1 } goal { x: 2.5 y: 4 } }
        //   paths { agent_id: 6 goal { x: 4 y: 0.5 } unreachable: true } }
        static readonly byte[] PathsFrame = Bytes(
            0x3a, 0x56, 0x08, 0x09, 0x12, 0x40, 0x08, 0x05, 0x12, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x20, 0x40, 0x1a, 0x08,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x40, 0x22, 0x1c, 0x0a, 0x0c, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x3f,
            0x00, 0x00, 0x80, 0x3f, 0x12, 0x0c, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x3f, 0x2a, 0x0a,
            0x0d, 0x00, 0x00, 0x20, 0x40, 0x15, 0x00, 0x00, 0x80, 0x40, 0x12, 0x10, 0x08, 0x06, 0x2a, 0x0a, 0x0d, 0x00, 0x00, 0x80,
            0x40, 0x15, 0x00, 0x00, 0x00, 0x3f, 0x30, 0x01);

        [Test]
        public void AgentEventsDecode()
        {
            var m = ProtoMessage.Parse<ServerMessage>(AgentEventsFrame);
            Assert.AreEqual(ServerMessage.MsgOneofCase.AgentEvents, m.MsgCase);
            var ev = m.AgentEvents;
            Assert.AreEqual(300UL, ev.Tick);
            Assert.AreEqual(3, ev.Events.Count);
            Assert.AreEqual(5u, ev.Events[0].AgentId);
            Assert.AreEqual(AgentEventKind.Arrived, ev.Events[0].Kind);
            Assert.AreEqual(-2f, ev.Events[0].Point.Y);
            Assert.AreEqual(3u, ev.Events[0].Owner);
            Assert.AreEqual(AgentEventKind.Unreachable, ev.Events[1].Kind);
            Assert.AreEqual(4f, ev.Events[1].Point.X, "unreachable: the nearest reachable point");
            Assert.AreEqual(0.5f, ev.Events[1].Point.Y);
            Assert.AreEqual(40f, ev.Events[1].Target.X, "and the target it was given");
            Assert.AreEqual(AgentEventKind.Stuck, ev.Events[2].Kind);
            Assert.IsNull(ev.Events[2].Target);
            AssertSameBytes(AgentEventsFrame, m);
        }

        [Test]
        public void PathsDecode()
        {
            var m = ProtoMessage.Parse<ServerMessage>(PathsFrame);
            Assert.AreEqual(ServerMessage.MsgOneofCase.Paths, m.MsgCase);
            var p = m.Paths;
            Assert.AreEqual(9u, p.RequestId);
            Assert.AreEqual(2, p.Paths_.Count);
            var a = p.Paths_[0];
            Assert.AreEqual(5u, a.AgentId);
            Assert.AreEqual(2, a.X.Count);
            Assert.AreEqual(2.5f, a.X[1]);
            Assert.AreEqual(4f, a.Y[1]);
            Assert.AreEqual(1, a.Corridor.Count);
            Assert.AreEqual(3, a.Corridor[0].X.Count);
            Assert.AreEqual(1f, a.Corridor[0].Y[2]);
            Assert.AreEqual(4f, a.Goal.Y);
            Assert.IsFalse(a.Unreachable);
            Assert.IsTrue(p.Paths_[1].Unreachable);
            Assert.AreEqual(0, p.Paths_[1].X.Count);
            AssertSameBytes(PathsFrame, m);
        }

        [Test]
        public void WelcomeCarriesTheResumeKeyAndErrorsTheNewCode()
        {
            // welcome { protocol_major: 1 protocol_minor: 1 client_id: 12 resume_key: "rk-1" resumed: true }
            var w = ProtoMessage.Parse<ServerMessage>(Bytes(0x0a, 0x0e, 0x08, 0x01, 0x10, 0x01, 0x20, 0x0c, 0x5a, 0x04, 0x72, 0x6b, 0x2d, 0x31, 0x60, 0x01)).Welcome;
            Assert.AreEqual("rk-1", w.ResumeKey);
            Assert.IsTrue(w.Resumed);
            Assert.AreEqual(12u, w.ClientId);
            // error { request_id: 4 code: ERROR_STORAGE_UNAVAILABLE message: "journal" }
            var e = ProtoMessage.Parse<ServerMessage>(Bytes(0x1a, 0x0d, 0x08, 0x04, 0x10, 0x17, 0x1a, 0x07, 0x6a, 0x6f, 0x75, 0x72, 0x6e, 0x61, 0x6c)).Error;
            Assert.AreEqual(ErrorCode.StorageUnavailable, e.Code);
            Assert.AreEqual(23, (int)ErrorCode.StorageUnavailable);
        }

        [Test]
        public void ClientRequestsEncodeAsProtocDoes()
        {
            var t = new SetTargets { Steer = SteerMode.Direct };
            t.Ids.Add(1); t.X.Add(3); t.Y.Add(4);
            // request_id: 2 set_targets { ids: 1 x: 3 y: 4 steer: STEER_DIRECT }
            AssertSameBytes(Bytes(0x08, 0x02, 0x22, 0x11, 0x0a, 0x01, 0x01, 0x12, 0x04, 0x00, 0x00, 0x40, 0x40, 0x1a, 0x04, 0x00, 0x00, 0x80, 0x40, 0x20, 0x02),
                            new ClientMessage { RequestId = 2, SetTargets = t });
            // request_id: 3 hello { protocol_major: 1 protocol_minor: 2 resume_key: "rk-1" }
            AssertSameBytes(Bytes(0x08, 0x03, 0x12, 0x0a, 0x08, 0x01, 0x10, 0x02, 0x32, 0x04, 0x72, 0x6b, 0x2d, 0x31),
                            new ClientMessage { RequestId = 3, Hello = new Hello { ResumeKey = "rk-1" } });
            // request_id: 4 spawn_agents { agents { steer: STEER_NAVIGATE } }
            var spawn = new SpawnAgents();
            spawn.Agents.Add(new AgentSpec { Steer = SteerMode.Navigate });
            AssertSameBytes(Bytes(0x08, 0x04, 0x1a, 0x04, 0x0a, 0x02, 0x70, 0x01), new ClientMessage { RequestId = 4, SpawnAgents = spawn });
            // request_id: 5 subscribe_events { all_agents: true }
            AssertSameBytes(Bytes(0x08, 0x05, 0x5a, 0x02, 0x08, 0x01), new ClientMessage { RequestId = 5, SubscribeEvents = new SubscribeEvents { AllAgents = true } });
            // request_id: 6 get_paths { ids: 5 ids: 300 }
            var gp = new GetPaths();
            gp.Ids.Add(5); gp.Ids.Add(300);
            AssertSameBytes(Bytes(0x08, 0x06, 0x62, 0x05, 0x0a, 0x03, 0x05, 0xac, 0x02), new ClientMessage { RequestId = 6, GetPaths = gp });
        }

        [Test]
        public void HelloSaysItsMinorAndAnEmptyResumeKeyIsAbsent()
        {
            var h = new Hello();
            Assert.AreEqual(Protocol.Minor, h.ProtocolMinor);
            Assert.AreEqual("", h.ResumeKey);
            var back = ProtoMessage.Parse<Hello>(ProtoMessage.ToByteArray(h));
            Assert.AreEqual("", back.ResumeKey);
            Assert.AreEqual(4, ProtoMessage.ToByteArray(h).Length, "major and minor only");
        }

        [Test]
        public void WorldMessagesEncodeAndDecodeAsProtocDoes()
        {
            // request_id: 4 hello { protocol_major: 1 protocol_minor: 2 world: "arena" }
            AssertSameBytes(Bytes(0x08, 0x04, 0x12, 0x0b, 0x08, 0x01, 0x10, 0x02, 0x3a, 0x05, 0x61, 0x72, 0x65, 0x6e, 0x61),
                            new ClientMessage { RequestId = 4, Hello = new Hello { World = "arena" } });
            // request_id: 5 join_world { name: "arena" }
            AssertSameBytes(Bytes(0x08, 0x05, 0x82, 0x01, 0x07, 0x0a, 0x05, 0x61, 0x72, 0x65, 0x6e, 0x61),
                            new ClientMessage { RequestId = 5, JoinWorld = new JoinWorld { Name = "arena" } });
            // world_list { request_id: 6 worlds { name: "a" agents: 3 lateness_p99_ms: 1.5 } max_worlds: 4 }
            var m = ProtoMessage.Parse<ServerMessage>(Bytes(0x42, 0x10, 0x08, 0x06, 0x12, 0x0a, 0x0a, 0x01, 0x61, 0x10, 0x03,
                                                            0x2d, 0x00, 0x00, 0xc0, 0x3f, 0x18, 0x04));
            Assert.AreEqual(ServerMessage.MsgOneofCase.WorldList, m.MsgCase);
            Assert.AreEqual(6u, m.WorldList.RequestId);
            Assert.AreEqual(4u, m.WorldList.MaxWorlds);
            Assert.AreEqual("a", m.WorldList.Worlds[0].Name);
            Assert.AreEqual(3u, m.WorldList.Worlds[0].Agents);
            Assert.AreEqual(1.5f, m.WorldList.Worlds[0].LatenessP99Ms);
        }

        [Test]
        public void AnEventKindFromANewerServerIsKept()
        {
            // events { agent_id: 1 kind: 9 }: proto3 enums are open
            var ev = ProtoMessage.Parse<AgentEvents>(Bytes(0x12, 0x04, 0x08, 0x01, 0x10, 0x09));
            Assert.AreEqual(9, (int)ev.Events[0].Kind);
        }
    }
}
