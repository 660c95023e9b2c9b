// PolledClientTests.cs — the WebGL build's connection (no thread: Poll drives it)
// over a scripted socket standing where CrowdWebSocket.jslib stands: nothing is
// sent before the socket opens; then the Hello and the remembered subscription;
// Welcome makes the client Ready and completes ConnectAsync; an Error fails its
// request's Task with the code; messages that came before a close are handled
// before the close, requests in flight then fail with Code None, and the client
// reconnects through a new socket; an oversized message is a fault; Disconnect
// closes the socket.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Threading.Tasks;
using Crowd.Client;
using Crowd.V1;
using NUnit.Framework;

namespace Crowd.Tests
{
    [TestFixture]
    public class PolledClientTests
    {
        sealed class ScriptedSocket : IPolledSocket
        {
            public int State;
            public readonly Queue<byte[]> Incoming = new Queue<byte[]>();
            public readonly List<ClientMessage> Sent = new List<ClientMessage>();
            public int CloseCode = -1;
            public string Why = "";

            public int ReadyState { get { return State; } }
            public byte[] NextMessage() { return Incoming.Count > 0 ? Incoming.Dequeue() : null; }

            public bool Send(byte[] message)
            {
                if (State != 1) return false;
                Sent.Add(ProtoMessage.Parse<ClientMessage>(message));
                return true;
            }

            public void Close(int code, string reason)
            {
                CloseCode = code;
                State = 3;
            }

            public string Reason { get { return Why; } }
            public void Push(ServerMessage m) { Incoming.Enqueue(ProtoMessage.ToByteArray(m)); }
        }

        readonly List<ScriptedSocket> sockets = new List<ScriptedSocket>();
        readonly List<Uri> urls = new List<Uri>();

        CrowdClient NewClient(int maxFrame = 1 << 20)
        {
            var options = new CrowdClientOptions
            {
                ClientName = "polled",
                ReconnectInitialSeconds = 0.001,
                ReconnectMaxSeconds = 0.002,
                MaxFrameBytes = maxFrame,
                PolledSockets = (url, sub) =>
                {
                    Assert.AreEqual("crowd.v1", sub);
                    urls.Add(url);
                    var s = new ScriptedSocket();
                    sockets.Add(s);
                    return s;
                },
            };
            return new CrowdClient("ws://127.0.0.1:8080", options);
        }

        static ServerMessage Welcome(uint clientId)
        {
            return new ServerMessage { Welcome = new Welcome { ProtocolMajor = Protocol.Major, ProtocolMinor = Protocol.Minor, ClientId = clientId, Precision = 100, TickRateHz = 30 } };
        }

        // A scripted socket has nothing to wait for but the back-off delay (a few milliseconds, bounded here).
        void PollUntil(CrowdClient c, Func<bool> done)
        {
            var guard = Stopwatch.StartNew();
            while (!done())
            {
                if (guard.Elapsed.TotalSeconds > 30) Assert.Fail("condition not reached");
                c.Poll();
            }
        }

        [Test]
        public void HelloAfterOpenThenWelcomeThenRequests()
        {
            var c = NewClient();
            c.Subscribe();
            var connect = c.ConnectAsync();
            Assert.AreEqual(1, sockets.Count, "Connect opens one socket at once");
            Assert.AreEqual("ws://127.0.0.1:8080/ws", urls[0].ToString());
            var s = sockets[0];
            c.Poll();
            Assert.AreEqual(ConnectionState.Connecting, c.State);
            Assert.AreEqual(0, s.Sent.Count, "nothing is sent before the socket opens");
            s.State = 1;
            c.Poll();
            Assert.AreEqual(ConnectionState.Connected, c.State);
            Assert.AreEqual(2, s.Sent.Count, "Hello and the remembered Subscribe");
            Assert.AreEqual(ClientMessage.MsgOneofCase.Hello, s.Sent[0].MsgCase);
            Assert.AreEqual("polled", s.Sent[0].Hello.ClientName);
            Assert.AreEqual(ClientMessage.MsgOneofCase.Subscribe, s.Sent[1].MsgCase);
            Assert.IsFalse(connect.IsCompleted);
            s.Push(Welcome(9));
            c.Poll();
            Assert.AreEqual(ConnectionState.Ready, c.State);
            Assert.IsTrue(connect.Status == TaskStatus.RanToCompletion && connect.Result.ClientId == 9, "ConnectAsync completes with the Welcome");

            var spawn = c.SpawnAsync(new List<AgentSpec> { new AgentSpec { Position = new Vec2(1, 2), Radius = 0.5f } });
            var refused = c.SetTargetAsync(new List<uint> { 5 }, float.NaN, 0f);
            Assert.AreEqual(4, s.Sent.Count);
            uint spawnId = s.Sent[2].RequestId, targetId = s.Sent[3].RequestId;
            var ack = new Ack { RequestId = spawnId };
            ack.Ids.Add(77);
            s.Push(new ServerMessage { Ack = ack });
            s.Push(new ServerMessage { Error = new Error { RequestId = targetId, Code = ErrorCode.InvalidArgument, Message = "not finite" } });
            c.Poll();
            Assert.IsTrue(spawn.Status == TaskStatus.RanToCompletion && spawn.Result.Ids[0] == 77, "SpawnAsync completes with the Ack");
            Assert.IsTrue(refused.IsFaulted, "the refused request's Task failed");
            var e = refused.Exception.GetBaseException() as CrowdException;
            Assert.IsNotNull(e, "a CrowdException");
            Assert.AreEqual(ErrorCode.InvalidArgument, e.Code);
            c.Disconnect();
            Assert.AreEqual(1000, s.CloseCode, "Disconnect closes the socket (1000)");
            c.Poll();
            Assert.AreEqual(ConnectionState.Disconnected, c.State);
        }

        [Test]
        public void MessagesBeforeACloseComeFirstThenInFlightFailsAndItReconnects()
        {
            var c = NewClient();
            int welcomes = 0;
            c.Welcomed += w => welcomes++;
            c.Connect();
            var s = sockets[0];
            s.State = 1;
            c.Poll();
            s.Push(Welcome(1));
            c.Poll();
            var first = c.PingAsync();
            var lost = c.RemoveAgentsAsync(new List<uint> { 3 });
            uint removeId = s.Sent[s.Sent.Count - 1].RequestId;
            // The server answered the ping, then closed: the answer is handled first.
            s.Push(new ServerMessage { Pong = new Pong { ClientTimeUs = s.Sent[1].Ping.ClientTimeUs, ServerTick = 42 } });
            s.State = 3;
            s.Why = "closed 1001 going away";
            c.Poll();
            Assert.IsTrue(first.Status == TaskStatus.RanToCompletion && first.Result.ServerTick == 42, "the Pong that came before the close completes PingAsync");
            Assert.IsTrue(lost.IsFaulted, "a request in flight when the socket closed fails");
            Assert.AreEqual(ErrorCode.None, ((CrowdException)lost.Exception.GetBaseException()).Code);
            Assert.AreEqual(removeId, ((CrowdException)lost.Exception.GetBaseException()).RequestId);
            Assert.IsTrue(c.State == ConnectionState.WaitingToReconnect || c.State == ConnectionState.Connecting);
            PollUntil(c, () => sockets.Count == 2);
            sockets[1].State = 1;
            c.Poll();
            Assert.AreEqual(ClientMessage.MsgOneofCase.Hello, sockets[1].Sent[0].MsgCase, "the new socket starts with a Hello");
            sockets[1].Push(Welcome(1));
            c.Poll();
            Assert.AreEqual(2, welcomes);
            Assert.AreEqual(2L, c.Connections);
            c.Dispose();
        }

        [Test]
        public void AFailedOpenFailsConnectAsyncWithTheReason()
        {
            var c = NewClient();
            var connect = c.ConnectAsync();
            sockets[0].Why = "WebSocket error (refused, not a WebSocket endpoint, or TLS)";
            sockets[0].State = 3;
            c.Poll();
            Assert.IsTrue(connect.IsFaulted);
            var e = (CrowdException)connect.Exception.GetBaseException();
            Assert.AreEqual(ErrorCode.None, e.Code);
            Assert.IsTrue(e.Message.Contains("refused"), e.Message);
            Assert.AreEqual(ConnectionState.Disconnected, c.State, "and the client stopped");
            c.Poll();
            Assert.AreEqual(1, sockets.Count, "no second attempt");
        }

        [Test]
        public void AnOversizedMessageIsAFaultAndTheSocketIsDropped()
        {
            var c = NewClient(64);
            var faults = new List<string>();
            c.ProtocolFault += f => faults.Add(f);
            c.Connect();
            sockets[0].State = 1;
            c.Poll();
            sockets[0].Incoming.Enqueue(new byte[65]);
            c.Poll();
            Assert.AreEqual(1, faults.Count);
            Assert.IsTrue(faults[0].Contains("65 bytes"), faults[0]);
            Assert.AreEqual(3, sockets[0].State, "the socket was closed");
            PollUntil(c, () => sockets.Count == 2);
            c.Dispose();
        }
    }
}
