// FailoverScenario.cs — the C# client with several addresses against real crowd-server
// processes. The stand-in for a promoted standby is a second process on the killed
// one's --data-dir at another port (resume identities live in the data dir).
//   failover: given "R,A,R,B" (R: a port bound and never listening) the client skips R at
//             Connect; A is SIGKILLed and B starts on A's data dir; the client, by
//             itself, skips R again and resumes at B (Reconnected: B, resumed, the same
//             client id); its agents obey it there and its subscription came back.
//   require:  with RequireResumed a server with its own, fresh data dir is passed over.
//   give up:  every address down: after ReconnectMaxAttempts the client stops (GaveUp).
//   refused:  a fake server that refuses the Hello (ServerFull) and leaves its socket open:
//             the client moves on to the next address.
//   silent:   a fake server that welcomes and then says nothing, its socket open (a vanished
//             machine): with IdleTimeoutMs the client counts it as lost and moves on.
// Every wait is for an event (Wait.Until polls the client; its guard only stops a hang).
using System;
using System.Collections.Generic;
using System.IO;
using System.Net;
using System.Net.Sockets;
using System.Threading;
using Crowd.Client;
using Crowd.V1;

namespace Crowd.Harness
{
    public static class FailoverScenario
    {
        const string Common = "--http 127.0.0.1:0 --log-level warn --token p1=player --tick-rate 60 ";

        public static void Run(string serverExe)
        {
            string root = Path.Combine(Path.GetTempPath(), "crowd-unity-failover-" + Guid.NewGuid().ToString("N"));
            Directory.CreateDirectory(root);
            try
            {
                Failover(serverExe, root);
                RequireResumed(serverExe, root);
                GiveUp(serverExe);
                Silent(serverExe);
                Refused(serverExe);
            }
            finally
            {
                try { Directory.Delete(root, true); } catch (IOException) { }
            }
        }

        static int FreePort()
        {
            var l = new TcpListener(IPAddress.Loopback, 0);
            l.Start();
            int port = ((IPEndPoint)l.LocalEndpoint).Port;
            l.Stop();
            return port;
        }

        static ServerProcess Start(string exe, int port, string dataDir)
        {
            return new ServerProcess(exe, "--listen 127.0.0.1:" + port + " " + Common + "--data-dir " + dataDir);
        }

        static CrowdClientOptions Options()
        {
            return new CrowdClientOptions { Token = "p1", ClientName = "unity-failover", ReconnectInitialSeconds = 0.02, ReconnectMaxSeconds = 0.2 };
        }

        static List<uint> SpawnTwo(CrowdClient client)
        {
            List<uint> ids = null;
            var specs = new List<AgentSpec> { new AgentSpec { Position = new Vec2(0, 0) }, new AgentSpec { Position = new Vec2(5, 0) } };
            client.Spawn(specs, a => ids = new List<uint>(a.Ids), e => Check.That(false, "spawn refused: " + e));
            Check.That(Wait.Until(() => ids != null, client), "two agents spawned");
            return ids ?? new List<uint>();
        }

        static bool OwnsInView(CrowdClient client, int count)
        {
            var s = client.LatestSnapshot;
            if (s == null || client.Welcome == null) return false;
            int own = 0;
            foreach (var a in s.Agents)
                if (a.Owner == client.Welcome.ClientId) own++;
            return own == count;
        }

        static void Failover(string exe, string root)
        {
            string data = Path.Combine(root, "data");
            var refusingPort = new RefusingPort();
            int refusing = refusingPort.Port, portA = FreePort(), portB = FreePort();
            var a = Start(exe, portA, data);
            ServerProcess b = null;
            var list = new[] { "127.0.0.1:" + refusing, "127.0.0.1:" + portA, "127.0.0.1:" + refusing, "127.0.0.1:" + portB };
            var client = new CrowdClient(list, Options());
            var infos = new List<ReconnectInfo>();
            var states = new List<string>();
            client.Reconnected += i => infos.Add(i);
            client.StateChanged += (st, why) => states.Add(st + ": " + why);
            try
            {
                client.Connect();
                Check.That(Wait.Until(() => client.Welcome != null, client), "Welcome received");
                Check.That(client.Address.Port == portA, "the refusing first address was skipped (at " + client.Address + ")");
                if (client.Welcome == null) return;
                uint id = client.Welcome.ClientId;
                Check.That(client.Welcome.ResumeKey.Length == 32, "a resume key (the server has a data dir)");
                var ids = SpawnTwo(client);
                client.Subscribe();
                Check.That(Wait.Until(() => OwnsInView(client, 2), client), "its two agents in view");

                a.Kill9();
                b = Start(exe, portB, data);
                Check.That(Wait.Until(() => infos.Count > 0, client), "Reconnected after A's SIGKILL");
                if (infos.Count == 0) return;
                var info = infos[0];
                Check.That(info.Address.Port == portB, "at B (" + info.Address + ")");
                Check.That(info.Resumed && info.ClientId == id, "resumed: the same client id (" + info.ClientId + ", was " + id + ")");
                Check.That(info.Attempt >= 2, "after the refusing address was tried (attempt " + info.Attempt + ")");
                Check.That(states.Exists(t => t.Contains("127.0.0.1:" + refusing) && t.StartsWith("Connecting")), "the refusing address was tried on the way");
                Check.That(client.Welcome.Resumed && client.Address.Port == portB, "Welcome.Resumed, Address is B");
                bool acked = false;
                Error err = null;
                client.SetTargets(ids, new List<float> { 30f }, new List<float> { 30f }, ack => acked = true, e => err = e);
                Check.That(Wait.Until(() => acked || err != null, client) && acked, "its agents obey it at B" + (err != null ? " (" + err + ")" : ""));
                Check.That(Wait.Until(() => OwnsInView(client, 2), client), "and are in view again: its subscription came back");
            }
            finally
            {
                client.Dispose();
                a.DumpIfFailed();
                a.Dispose();
                if (b != null)
                {
                    b.DumpIfFailed();
                    b.Dispose();
                }
                refusingPort.Dispose();
            }
        }

        static void RequireResumed(string exe, string root)
        {
            string data = Path.Combine(root, "data2"), fresh = Path.Combine(root, "fresh");
            int portA = FreePort(), portF = FreePort(), portC = FreePort();
            var a = Start(exe, portA, data);
            var f = Start(exe, portF, fresh);
            ServerProcess c = null;
            var options = Options();
            options.RequireResumed = true;
            var client = new CrowdClient(new[] { "127.0.0.1:" + portA, "127.0.0.1:" + portF, "127.0.0.1:" + portC }, options);
            var infos = new List<ReconnectInfo>();
            var reasons = new List<string>();
            client.Reconnected += i => infos.Add(i);
            client.StateChanged += (st, why) => { if (st == ConnectionState.WaitingToReconnect) reasons.Add(why); };
            try
            {
                client.Connect();
                Check.That(Wait.Until(() => client.Welcome != null, client), "RequireResumed: Welcome received");
                if (client.Welcome == null) return;
                uint id = client.Welcome.ClientId;
                SpawnTwo(client);
                a.Kill9();
                c = Start(exe, portC, data);
                Check.That(Wait.Until(() => infos.Count > 0, client), "RequireResumed: Reconnected");
                if (infos.Count == 0) return;
                Check.That(infos[0].Address.Port == portC && infos[0].Resumed && infos[0].ClientId == id,
                           "at the server with its data dir, resumed (" + infos[0].Address + ")");
                Check.That(reasons.Exists(r => r.Contains("new identity")), "the fresh server's Welcome was passed over");
            }
            finally
            {
                client.Dispose();
                a.Dispose();
                f.DumpIfFailed();
                f.Dispose();
                if (c != null) c.Dispose();
            }
        }

        static void Silent(string exe)
        {
            var fake = new OneConnectionServer(held =>
            {
                held.Receive(new byte[4096]); // the Hello
                held.Send(FrameSplitter.Delimit(new ServerMessage { Welcome = new Welcome { ProtocolMajor = 1, ClientId = 4, Precision = 100, TickRateHz = 30 } }));
            });
            int silentPort = fake.Port;
            var real = new ServerProcess(exe, "--listen 127.0.0.1:0 " + Common);
            var options = Options();
            options.IdleTimeoutMs = 300;
            var client = new CrowdClient(new[] { "127.0.0.1:" + silentPort, "127.0.0.1:" + real.Port }, options);
            var infos = new List<ReconnectInfo>();
            var reasons = new List<string>();
            client.Reconnected += i => infos.Add(i);
            client.StateChanged += (st, why) => { if (st == ConnectionState.WaitingToReconnect) reasons.Add(why); };
            try
            {
                client.Connect();
                Check.That(Wait.Until(() => client.Welcome != null, client) && client.Address.Port == silentPort, "silent: welcomed by the fake server");
                Check.That(Wait.Until(() => infos.Count > 0, client), "silent: the client moved on by itself");
                Check.That(infos.Count > 0 && infos[0].Address.Port == real.Port, "to the next address");
                Check.That(reasons.Count > 0 && reasons[0].Contains("nothing from the server for 300 ms"),
                           "saying why (" + (reasons.Count > 0 ? reasons[0] : "no reason") + ")");
            }
            finally
            {
                client.Dispose();
                real.Dispose();
                fake.Dispose();
            }
        }

        static void Refused(string exe)
        {
            var fake = new OneConnectionServer(held =>
            {
                var buf = new byte[4096];
                int n = held.Receive(buf);
                var splitter = new FrameSplitter(1 << 16);
                splitter.Push(buf, 0, n);
                byte[] frame;
                int off, len;
                uint id = 0;
                if (splitter.Next(out frame, out off, out len) == FrameResult.Ready)
                    id = ProtoMessage.Parse<ClientMessage>(frame, off, len).RequestId;
                held.Send(FrameSplitter.Delimit(new ServerMessage { Error = new Error { RequestId = id, Code = ErrorCode.ServerFull, Message = "full" } }));
            });
            int fullPort = fake.Port;
            var real = new ServerProcess(exe, "--listen 127.0.0.1:0 " + Common);
            var client = new CrowdClient(new[] { "127.0.0.1:" + fullPort, "127.0.0.1:" + real.Port }, Options());
            Error refused = null;
            client.HelloRefused += e => refused = e;
            try
            {
                client.Connect();
                Check.That(Wait.Until(() => client.Welcome != null, client), "refused: welcomed in the end");
                Check.That(client.Address.Port == real.Port, "by the next address (" + client.Address + ")");
                Check.That(refused != null && refused.Code == ErrorCode.ServerFull, "after the fake server's ServerFull");
            }
            finally
            {
                client.Dispose();
                real.Dispose();
                fake.Dispose();
            }
        }

        static void GiveUp(string exe)
        {
            var refusingPort = new RefusingPort();
            int refusing = refusingPort.Port;
            var a = new ServerProcess(exe, "--listen 127.0.0.1:0 " + Common);
            var options = Options();
            options.ReconnectMaxAttempts = 3;
            var client = new CrowdClient("127.0.0.1:" + a.Port + ",127.0.0.1:" + refusing, options);
            string last = null;
            client.StateChanged += (st, why) => last = st + ": " + why;
            try
            {
                client.Connect();
                Check.That(Wait.Until(() => client.Welcome != null, client), "give up: Welcome received");
                a.Kill9();
                Check.That(Wait.Until(() => client.GaveUp && client.State == ConnectionState.Disconnected, client), "every address down: the client gives up");
                Check.That(last != null && last.StartsWith("Disconnected: gave up after 3 attempts"), "after ReconnectMaxAttempts, saying so (" + last + ")");
            }
            finally
            {
                client.Dispose();
                a.Dispose();
                refusingPort.Dispose();
            }
        }
    }

    /// <summary>A stand-in server on a free loopback port: accepts one connection, runs
    /// serve on it on a background thread, and keeps the socket open until disposed (a
    /// peer that stays connected and says no more).</summary>
    sealed class OneConnectionServer : IDisposable
    {
        readonly TcpListener listener = new TcpListener(IPAddress.Loopback, 0);
        Socket held;

        public int Port { get; private set; }

        public OneConnectionServer(Action<Socket> serve)
        {
            listener.Start();
            Port = ((IPEndPoint)listener.LocalEndpoint).Port;
            new Thread(() =>
            {
                try
                {
                    held = listener.AcceptSocket();
                    serve(held);
                }
                catch (Exception) { } // the test ended first: the client's checks say what went wrong
            }) { IsBackground = true }.Start();
        }

        public void Dispose()
        {
            if (held != null) held.Close();
            listener.Stop();
        }
    }
}
