// ReadmeScenario.cs — runs the package README's "ten lines to see a crowd" (the
// MonoBehaviour compiled from the README's csharp block, its port literal pointed
// at this test's server) frame by frame against a real `crowd-server --demo`:
// after a few frames it samples every demo agent and draws one ray per agent.
using System;
using System.Collections.Generic;
using System.Reflection;
using System.Threading;
using Crowd.Client;

namespace Crowd.Harness
{
    public static class ReadmeScenario
    {
        // The README's await example (compiled as Unity compiles it, its ws:// port pointed at this
        // test's server), frame by frame: Start connects, spawns and sends the agent to its goal
        // through the Task methods; Update draws its ray, red on the way and green once there.
        public static void RunAsync(string snippetDll, string serverExe)
        {
            var asm = Assembly.LoadFrom(snippetDll);
            Type behaviour = null;
            foreach (var t in asm.GetTypes())
                if (t.IsSubclassOf(typeof(UnityEngine.MonoBehaviour))) behaviour = t;
            Check.That(behaviour != null, "the await example defines a MonoBehaviour");
            if (behaviour == null) return;
            var server = new ServerProcess(serverExe, "--listen 127.0.0.1:0 --http 127.0.0.1:0 --log-level warn");
            try
            {
                asm.GetType("CrowdReadme.Port").GetField("Value").SetValue(null, server.HttpPort);
                object view = Activator.CreateInstance(behaviour);
                behaviour.GetMethod("Start", Any).Invoke(view, null); // async void: runs to its first await
                var update = behaviour.GetMethod("Update", Any);
                var agentField = behaviour.GetField("agent", Any);
                var client = (CrowdClient)behaviour.GetField("client", Any).GetValue(view);
                Check.That(client != null && client.Address.Transport == CrowdTransport.WebSocket, "Start made a WebSocket client (" + (client != null ? client.Address.ToString() : "none") + ")");
                int logged = UnityEngine.Debug.Lines.Count;
                bool spawned = false, green = false;
                var guard = System.Diagnostics.Stopwatch.StartNew();
                while (guard.Elapsed < TimeSpan.FromSeconds(60) && !green && UnityEngine.Debug.Lines.Count == logged)
                {
                    int rays = UnityEngine.Debug.RaysDrawn;
                    update.Invoke(view, null);
                    spawned |= (uint)agentField.GetValue(view) != 0;
                    green = UnityEngine.Debug.RaysDrawn > rays && UnityEngine.Debug.LastRayColor.g == 1f && UnityEngine.Debug.LastRayColor.r == 0f;
                    Thread.Sleep(10);
                }
                Check.That(UnityEngine.Debug.Lines.Count == logged, "nothing refused (" + (UnityEngine.Debug.Lines.Count > logged ? UnityEngine.Debug.Lines[logged] : "no log") + ")");
                Check.That(spawned, "ConnectAsync then SpawnAsync gave the agent an id");
                Check.That(green, "the agent walked to its goal: the ray turned green");
                behaviour.GetMethod("OnDestroy", Any).Invoke(view, null);
                Check.That(client.State == ConnectionState.Disconnected, "OnDestroy disconnected the client");
                Check.That(server.Stop() == 0, "crowd-server exits 0");
            }
            finally
            {
                server.DumpIfFailed();
                server.Dispose();
            }
        }

        const int DemoAgents = 120;
        const BindingFlags Any = BindingFlags.Instance | BindingFlags.NonPublic | BindingFlags.Public;

        public static void Run(string snippetDll, string serverExe)
        {
            var asm = Assembly.LoadFrom(snippetDll);
            Type behaviour = null;
            foreach (var t in asm.GetTypes())
                if (t.IsSubclassOf(typeof(UnityEngine.MonoBehaviour))) behaviour = t;
            Check.That(behaviour != null, "the README snippet defines a MonoBehaviour");
            if (behaviour == null) return;

            var server = new ServerProcess(serverExe,
                "--demo --demo-agents " + DemoAgents + " --listen 127.0.0.1:0 --http 127.0.0.1:0 --log-level warn");
            try
            {
                asm.GetType("CrowdReadme.Port").GetField("Value").SetValue(null, server.Port);
                object view = Activator.CreateInstance(behaviour);
                behaviour.GetMethod("Start", Any).Invoke(view, null);
                var update = behaviour.GetMethod("Update", Any);
                List<CrowdAgent> sampled = null;
                foreach (var f in behaviour.GetFields(Any))
                    if (f.FieldType == typeof(List<CrowdAgent>)) sampled = (List<CrowdAgent>)f.GetValue(view);
                Check.That(sampled != null, "the snippet keeps its sampled agents in a List<CrowdAgent>");
                if (sampled == null) return;

                int rays = 0;
                var guard = System.Diagnostics.Stopwatch.StartNew();
                while (guard.Elapsed < TimeSpan.FromSeconds(60) && sampled.Count < DemoAgents)
                {
                    UnityEngine.Time.deltaTime = 1f / 60f;
                    rays = UnityEngine.Debug.RaysDrawn;
                    update.Invoke(view, null);
                    rays = UnityEngine.Debug.RaysDrawn - rays;
                    Thread.Sleep(10);
                }
                Check.That(sampled.Count == DemoAgents, "the ten lines sample every demo agent (" + sampled.Count + " of " + DemoAgents + ")");
                Check.That(rays == sampled.Count, "one debug ray per agent in the last frame (" + rays + ")");
                bool finite = true;
                foreach (var a in sampled)
                    finite &= !float.IsNaN(a.X) && !float.IsInfinity(a.X) && !float.IsNaN(a.Y) && !float.IsInfinity(a.Y) && a.Radius > 0;
                Check.That(finite, "sampled positions are finite, radii positive");
                behaviour.GetMethod("OnDestroy", Any).Invoke(view, null);
                Check.That(server.Stop() == 0, "crowd-server exits 0");
            }
            finally
            {
                server.DumpIfFailed();
                server.Dispose();
            }
        }
    }
}
