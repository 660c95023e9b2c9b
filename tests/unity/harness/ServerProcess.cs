// ServerProcess.cs — starts a real crowd-server on a free loopback port (it
// prints "listening tcp 127.0.0.1:PORT", then "listening http 127.0.0.1:PORT"
// when it serves HTTP/WebSocket), and stops it with SIGTERM.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Threading;
using Crowd.Client;

namespace Crowd.Harness
{
    public sealed class ServerProcess : IDisposable
    {
        readonly Process process;
        readonly ManualResetEvent listening = new ManualResetEvent(false);
        readonly ManualResetEvent listeningHttp = new ManualResetEvent(false);
        int httpPort;
        public int Port { get; private set; }

        /// <summary>The HTTP listener's port (the WebSocket is ws://127.0.0.1:HttpPort/ws); waits for its line.</summary>
        public int HttpPort
        {
            get
            {
                if (!listeningHttp.WaitOne(TimeSpan.FromSeconds(60)))
                    throw new Exception("crowd-server did not print its HTTP port; output: " + string.Join(" | ", Output.ToArray()));
                return httpPort;
            }
        }

        /// <summary>The server's WebSocket URL.</summary>
        public string WebSocketUrl { get { return "ws://127.0.0.1:" + HttpPort + "/ws"; } }
        public readonly List<string> Output = new List<string>();

        public ServerProcess(string exe, string args)
        {
            var psi = new ProcessStartInfo(exe, args)
            {
                UseShellExecute = false,
                RedirectStandardOutput = true,
                RedirectStandardError = true,
            };
            process = new Process { StartInfo = psi };
            process.OutputDataReceived += (s, e) => OnLine(e.Data);
            process.ErrorDataReceived += (s, e) => OnLine(e.Data);
            process.Start();
            process.BeginOutputReadLine();
            process.BeginErrorReadLine();
            // A generous guard, not a measurement: a sanitizer build starts slowly on a busy machine.
            if (!listening.WaitOne(TimeSpan.FromSeconds(60)))
                throw new Exception("crowd-server did not print its TCP port; output: " + string.Join(" | ", Output.ToArray()));
        }

        void OnLine(string line)
        {
            if (line == null) return;
            lock (Output) Output.Add(line);
            const string prefix = "listening tcp 127.0.0.1:";
            if (line.StartsWith(prefix, StringComparison.Ordinal))
            {
                Port = int.Parse(line.Substring(prefix.Length).Trim());
                listening.Set();
            }
            const string httpPrefix = "listening http 127.0.0.1:";
            if (line.StartsWith(httpPrefix, StringComparison.Ordinal))
            {
                httpPort = int.Parse(line.Substring(httpPrefix.Length).Trim());
                listeningHttp.Set();
            }
        }

        public bool HasExited { get { return process.HasExited; } }

        /// <summary>SIGTERM, then wait for a clean exit; returns the exit code (-1 if it had to be killed).</summary>
        public int Stop()
        {
            if (process.HasExited) return process.ExitCode;
            var kill = Process.Start(new ProcessStartInfo("kill", "-TERM " + process.Id) { UseShellExecute = false });
            kill.WaitForExit();
            if (process.WaitForExit(30000))
            {
                process.WaitForExit(); // flush the output readers
                return process.ExitCode;
            }
            process.Kill();
            process.WaitForExit();
            return -1;
        }

        /// <summary>SIGKILL (a crash: no goodbye to its clients), and wait for the exit.</summary>
        public void Kill9()
        {
            if (process.HasExited) return;
            var kill = Process.Start(new ProcessStartInfo("kill", "-KILL " + process.Id) { UseShellExecute = false });
            kill.WaitForExit();
            process.WaitForExit();
        }

        /// <summary>Prints what the server said, for a failed scenario.</summary>
        public void DumpIfFailed()
        {
            if (Check.Failed == 0) return;
            lock (Output)
                foreach (var line in Output) Console.WriteLine("     server: " + line);
            Console.WriteLine("     server " + (process.HasExited ? "exited with " + process.ExitCode : "still running"));
        }

        public void Dispose()
        {
            try { if (!process.HasExited) Stop(); } catch (Exception) { }
        }
    }

    /// <summary>Polls a client until a condition holds; bounded by a generous guard, never a timing assertion.</summary>
    public static class Wait
    {
        public static bool Until(Func<bool> done, params CrowdClient[] clients)
        {
            var guard = Stopwatch.StartNew();
            while (guard.Elapsed < TimeSpan.FromSeconds(90))
            {
                foreach (var c in clients) c.Poll();
                if (done()) return true;
                Thread.Sleep(5);
            }
            return false;
        }
    }
}
