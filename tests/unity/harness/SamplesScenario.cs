// SamplesScenario.cs — the package's samples (CrowdView, ClickTargets) driven
// frame by frame under stubbed UnityEngine types against a real crowd-server:
// agents appear as pooled GameObjects, a click sends this client's agents to the
// clicked point, removed agents' objects return to the pool and are reused.
using System;
using System.Collections.Generic;
using System.Reflection;
using System.Threading;
using Crowd.Client;
using Crowd.Samples;
using Crowd.V1;
using UnityEngine;

namespace Crowd.Harness
{
    public static class SamplesScenario
    {
        static void Call(object o, string method)
        {
            o.GetType().GetMethod(method, BindingFlags.Instance | BindingFlags.NonPublic | BindingFlags.Public).Invoke(o, null);
        }

        static int Active(Transform t)
        {
            int n = 0;
            for (int i = 0; i < t.childCount; i++)
                if (t.GetChild(i).gameObject.activeSelf) n++;
            return n;
        }

        public static void Run(string serverExe)
        {
            var server = new ServerProcess(serverExe, "--listen 127.0.0.1:0 --http 127.0.0.1:0 --log-level warn --agent-pref-speed 8 --agent-max-speed 10 --agent-radius 0.5");
            var go = new GameObject("crowd");
            var view = go.AddComponent<CrowdView>();
            view.port = 1; // not used: the address wins
            view.address = server.WebSocketUrl; // the sample over WebSocket, the other client over TCP, one world
            var clicks = go.AddComponent<ClickTargets>();
            clicks.view = view;
            clicks.spawnCount = 6;
            clicks.spawnRadius = 20f;
            var other = new CrowdClient("127.0.0.1", server.Port);
            try
            {
                Call(view, "Awake");
                Call(view, "OnEnable");
                Call(clicks, "Start");
                other.Connect();
                Action frame = () =>
                {
                    UnityEngine.Time.deltaTime = 1f / 60f;
                    Call(view, "Update");
                    Call(clicks, "Update");
                    Thread.Sleep(10);
                };
                Func<Func<bool>, bool> frames = done => Wait.Until(() => { frame(); return done(); }, other);

                Check.That(frames(() => other.Welcome != null && view.Client.Welcome != null), "sample and second client welcomed");
                Check.That(view.Client.Address.Transport == CrowdTransport.WebSocket && other.Address.Transport == CrowdTransport.Tcp,
                           "CrowdView.address: the sample over WebSocket (" + view.Client.Address + "), the other client over TCP");
                List<uint> others = null;
                var specs = new List<AgentSpec>();
                for (int i = 0; i < 5; i++) specs.Add(new AgentSpec { Position = new Vec2(60 + 3 * i, 60) });
                other.Spawn(specs, a => others = a.Ids);
                Check.That(frames(() => others != null && Active(go.transform) == 11), "CrowdView shows 11 GameObjects: 6 own (ClickTargets) + 5 of another client");
                var mine = view.OwnAgentIds(new List<uint>());
                Check.That(mine.Count == 6, "6 agents owned by the sample's client (" + mine.Count + ")");

                // Every active object sits where its agent is (interpolated, so within a step or two).
                var snap = view.Client.LatestSnapshot;
                int placed = 0;
                for (int i = 0; i < go.transform.childCount; i++)
                {
                    var t = go.transform.GetChild(i);
                    if (!t.gameObject.activeSelf) continue;
                    foreach (var a in snap.Agents)
                        if (Math.Abs(a.X - t.localPosition.x) < 1f && Math.Abs(a.Y - t.localPosition.z) < 1f && Math.Abs(t.localScale.x - 2 * a.Radius) < 0.01f) { placed++; break; }
                }
                Check.That(placed == 11, "each GameObject is at its agent's (x, 0, y) with scale = diameter (" + placed + "/11)");

                // A click at screen (3, 4): the stub camera looks straight down, so the ground point is (3, 0, 4).
                Func<double> meanDistance = () =>
                {
                    var s = view.Client.LatestSnapshot;
                    double sum = 0;
                    int n = 0;
                    foreach (var a in s.Agents)
                        if (mine.Contains(a.Id)) { sum += Math.Sqrt((a.X - 3) * (a.X - 3) + (a.Y - 4) * (a.Y - 4)); n++; }
                    return n == 0 ? double.MaxValue : sum / n;
                };
                double before = meanDistance();
                ulong clickTick = view.Client.LatestSnapshot.Tick;
                UnityEngine.Camera.main = new GameObject("camera").AddComponent<UnityEngine.Camera>();
                UnityEngine.Input.mousePosition = new Vector3(3, 4, 0);
                UnityEngine.Input.mouseButton0Down = true;
                frame();
                UnityEngine.Input.mouseButton0Down = false;
                bool closer = frames(() => meanDistance() < 0.3 * before || view.Client.LatestSnapshot.Tick - clickTick > 1500);
                Check.That(closer && meanDistance() < 0.3 * before, "after the click the own agents gathered at (3, 4): mean distance " + before.ToString("F1") + " -> " + meanDistance().ToString("F1"));

                // Pooling: removed agents' objects go inactive, new agents reuse them.
                int created = go.transform.childCount;
                bool removed = false;
                other.RemoveAgents(others, a => removed = true);
                Check.That(frames(() => removed && Active(go.transform) == 6), "removed agents' objects are deactivated (6 active left)");
                others = null;
                other.Spawn(specs, a => others = a.Ids);
                Check.That(frames(() => others != null && Active(go.transform) == 11), "5 new agents shown again");
                Check.That(go.transform.childCount == created, "their objects came from the pool (" + go.transform.childCount + " created in all, " + created + " before)");

                Call(view, "OnDisable");
                Check.That(view.Client.State == ConnectionState.Disconnected, "OnDisable disconnects the sample's client");
                Call(view, "OnDestroy");
            }
            finally
            {
                server.DumpIfFailed();
                other.Dispose();
                if (view.Client != null) view.Client.Dispose();
                server.Dispose();
            }
        }
    }
}
