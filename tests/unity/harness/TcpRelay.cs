// TcpRelay.cs — a loopback TCP relay the harness holds for a whole scenario, so a
// client keeps one address while the server behind it is stopped and a new one
// started on any free port (no race for reusing the old server's port).
using System;
using System.Net;
using System.Net.Sockets;
using System.Threading;

namespace Crowd.Harness
{
    public sealed class TcpRelay : IDisposable
    {
        readonly TcpListener listener = new TcpListener(IPAddress.Loopback, 0);
        readonly Thread acceptor;
        volatile int upstreamPort;
        volatile bool stopped;

        public TcpRelay(int upstream)
        {
            upstreamPort = upstream;
            listener.Start();
            acceptor = new Thread(Accept) { IsBackground = true, Name = "relay" };
            acceptor.Start();
        }

        public int Port { get { return ((IPEndPoint)listener.LocalEndpoint).Port; } }

        /// <summary>Where new connections go from now on.</summary>
        public int Upstream { set { upstreamPort = value; } }

        void Accept()
        {
            while (!stopped)
            {
                Socket down;
                try { down = listener.AcceptSocket(); }
                catch (Exception) { return; }
                var up = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
                try { up.Connect(IPAddress.Loopback, upstreamPort); }
                catch (Exception)
                {
                    down.Close(); // nobody upstream: the client sees a closed connection and backs off
                    up.Close();
                    continue;
                }
                Pump(down, up);
                Pump(up, down);
            }
        }

        // Copies one direction; when either side ends, both close.
        static void Pump(Socket from, Socket to)
        {
            new Thread(() =>
            {
                var buf = new byte[65536];
                try
                {
                    for (;;)
                    {
                        int n = from.Receive(buf);
                        if (n <= 0) break;
                        int off = 0;
                        while (off < n) off += to.Send(buf, off, n - off, SocketFlags.None);
                    }
                }
                catch (Exception) { }
                try { from.Close(); } catch (Exception) { }
                try { to.Close(); } catch (Exception) { }
            }) { IsBackground = true, Name = "relay-pump" }.Start();
        }

        public void Dispose()
        {
            stopped = true;
            listener.Stop();
        }
    }
}
