// AddressTests.cs — which wire an address means: ws:// and wss:// are WebSocket
// (no path: the server's /ws), tcp://HOST:PORT and HOST:PORT are TCP unless the
// transport option says WebSocket; anything else is refused by name. And the
// text of a CrowdException.
using System;
using Crowd.Client;
using Crowd.V1;
using NUnit.Framework;

namespace Crowd.Tests
{
    [TestFixture]
    public class AddressTests
    {
        [Test]
        public void WebSocketUrls()
        {
            var a = CrowdAddress.Parse("ws://127.0.0.1:8080/ws");
            Assert.AreEqual(CrowdTransport.WebSocket, a.Transport);
            Assert.AreEqual("ws://127.0.0.1:8080/ws", a.Uri.ToString());
            Assert.AreEqual(8080, a.Port);
            Assert.AreEqual("/ws", CrowdAddress.Parse("ws://example.org:8080").Uri.AbsolutePath, "no path: /ws");
            Assert.AreEqual("/ws", CrowdAddress.Parse("ws://example.org:8080/").Uri.AbsolutePath, "just /: /ws");
            var s = CrowdAddress.Parse("wss://example.org/crowd");
            Assert.AreEqual(CrowdTransport.WebSocket, s.Transport);
            Assert.AreEqual(443, s.Port);
            Assert.AreEqual("/crowd", s.Uri.AbsolutePath);
        }

        [Test]
        public void TcpAddresses()
        {
            var a = CrowdAddress.Parse("127.0.0.1:7777");
            if (!CrowdAddress.WebGL)
            {
                Assert.AreEqual(CrowdTransport.Tcp, a.Transport);
                Assert.AreEqual("127.0.0.1", a.Host);
                Assert.AreEqual(7777, a.Port);
            }
            var t = CrowdAddress.Parse("tcp://game.example:7777");
            Assert.AreEqual(CrowdTransport.Tcp, t.Transport);
            Assert.AreEqual("game.example", t.Host);
            var v6 = CrowdAddress.Parse("tcp://[::1]:7777");
            Assert.AreEqual("::1", v6.Host);
            Assert.AreEqual("[::1]:7777", v6.ToString());
        }

        [Test]
        public void TheTransportOptionTurnsHostPortIntoTheWebSocketUrl()
        {
            var a = CrowdAddress.Parse("127.0.0.1:8080", CrowdTransport.WebSocket);
            Assert.AreEqual("ws://127.0.0.1:8080/ws", a.Uri.ToString());
            Assert.AreEqual("ws://[::1]:8080/ws", CrowdAddress.Parse("[::1]:8080", CrowdTransport.WebSocket).Uri.ToString());
            var c = new CrowdClient("127.0.0.1", 8080, new CrowdClientOptions { Transport = CrowdTransport.WebSocket });
            Assert.AreEqual(CrowdTransport.WebSocket, c.Address.Transport);
            Assert.AreEqual("ws://127.0.0.1:8080/ws", c.Address.Uri.ToString());
            Assert.AreEqual(CrowdTransport.WebSocket, new CrowdClient("ws://127.0.0.1:8080/ws").Address.Transport);
        }

        [Test]
        public void BadAddressesAreRefusedByName()
        {
            foreach (var bad in new[] { "127.0.0.1", "127.0.0.1:0", "127.0.0.1:70000", "http://127.0.0.1:8080/", "host:port", ":7777", "a:b:7777" })
            {
                var e = Assert.Throws<ArgumentException>(() => CrowdAddress.Parse(bad), bad);
                Assert.IsTrue(e.Message.Contains(bad), "the message names '" + bad + "': " + e.Message);
            }
            Assert.Throws<ArgumentException>(() => CrowdAddress.Parse("ws://127.0.0.1:8080/ws", CrowdTransport.Tcp));
            Assert.Throws<ArgumentException>(() => CrowdAddress.Parse("tcp://127.0.0.1:7777", CrowdTransport.WebSocket));
            Assert.Throws<ArgumentException>(() => new CrowdClient("ws://127.0.0.1:8080/ws", new CrowdClientOptions { Transport = CrowdTransport.Tcp }));
        }

        [Test]
        public void CrowdExceptionSaysTheCodeTheRequestAndTheMessage()
        {
            var e = new CrowdException(new Error { RequestId = 7, Code = ErrorCode.InvalidArgument, Index = 2, Message = "target 2 not finite" });
            Assert.AreEqual(ErrorCode.InvalidArgument, e.Code);
            Assert.AreEqual(7u, e.RequestId);
            Assert.AreEqual(2u, e.Index);
            Assert.AreEqual("crowd: InvalidArgument (request 7, index 2): target 2 not finite", e.Message);
            Assert.AreEqual("crowd: None: not connected", new CrowdException(new Error { Code = ErrorCode.None, Message = "not connected" }).Message);
        }
    }
}
