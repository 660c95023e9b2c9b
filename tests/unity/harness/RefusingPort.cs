// RefusingPort.cs — a loopback port that refuses connections for as long as the object
// lives: a socket bound to it that never listens. A port found free and released again can
// be handed to the next bind of port 0 (a server the test starts a moment later answered
// on a "closed" port); a bound one is not.
using System;
using System.Net;
using System.Net.Sockets;

namespace Crowd.Harness
{
    sealed class RefusingPort : IDisposable
    {
        readonly Socket socket;

        public RefusingPort()
        {
            socket = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
            socket.Bind(new IPEndPoint(IPAddress.Loopback, 0));
            Port = ((IPEndPoint)socket.LocalEndPoint).Port;
        }

        public int Port { get; private set; }

        public void Dispose()
        {
            socket.Close();
        }
    }
}
