// InterpolationBuffer.cs — keeps the last few snapshots and gives a render
// position for any agent at any render time (in server ticks, fractional)
// between two of them, so a 60 fps view of a 15 Hz snapshot stream moves smoothly.
// Render time runs a little behind the newest snapshot (DelayTicks).
using System;
using System.Collections.Generic;
#if UNITY_5_3_OR_NEWER
using Vector2 = UnityEngine.Vector2;
#else
using Vector2 = Crowd.Client.CrowdVector2;
#endif

namespace Crowd.Client
{
    public sealed class InterpolationBuffer
    {
        readonly List<WorldSnapshot> snapshots = new List<WorldSnapshot>();
        readonly int capacity;
        double delayTicks = double.NaN;

        /// <param name="capacity">Snapshots kept (at least 2).</param>
        public InterpolationBuffer(int capacity = 32)
        {
            if (capacity < 2) throw new ArgumentOutOfRangeException("capacity");
            this.capacity = capacity;
            RenderTick = double.NaN;
            SnapThresholdTicks = 30;
            CatchUpPerSecond = 2;
        }

        public int Count { get { return snapshots.Count; } }
        public WorldSnapshot Oldest { get { return snapshots.Count > 0 ? snapshots[0] : null; } }
        public WorldSnapshot Newest { get { return snapshots.Count > 0 ? snapshots[snapshots.Count - 1] : null; } }

        /// <summary>Current render time in server ticks; NaN until the first snapshot. Advance moves it.</summary>
        public double RenderTick { get; set; }

        /// <summary>How far render time stays behind the newest snapshot. Unless set, twice the
        /// last gap between snapshots (so one late snapshot does not freeze the view).</summary>
        public double DelayTicks
        {
            get
            {
                if (!double.IsNaN(delayTicks)) return delayTicks;
                int n = snapshots.Count;
                if (n < 2) return 2;
                return 2.0 * (snapshots[n - 1].Tick - snapshots[n - 2].Tick);
            }
            set { delayTicks = value; }
        }

        /// <summary>Past this distance from its target, render time jumps instead of easing.</summary>
        public double SnapThresholdTicks { get; set; }

        /// <summary>Fraction of the render-time error corrected per second of Advance.</summary>
        public double CatchUpPerSecond { get; set; }

        /// <summary>Beyond the newest snapshot, move agents along their velocity for at most this many ticks (0: hold).</summary>
        public double MaxExtrapolationTicks { get; set; }

        /// <summary>Adds a snapshot (call from SnapshotReceived). Older or duplicate ticks are ignored,
        /// except a keyframe older than the newest: the server restarted, so the buffer starts over.</summary>
        public bool Add(WorldSnapshot s)
        {
            if (s == null) throw new ArgumentNullException("s");
            var newest = Newest;
            if (newest != null && s.Tick <= newest.Tick)
            {
                if (!(s.Keyframe && s.Tick < newest.Tick)) return false;
                Clear();
            }
            snapshots.Add(s);
            if (snapshots.Count > capacity) snapshots.RemoveAt(0);
            if (double.IsNaN(RenderTick)) RenderTick = s.Tick - DelayTicks;
            return true;
        }

        public void Clear()
        {
            snapshots.Clear();
            RenderTick = double.NaN;
        }

        /// <summary>Moves render time on by `seconds` of local time (Time.deltaTime), at the
        /// server's tick rate, easing toward Newest.Tick - DelayTicks.</summary>
        public void Advance(double seconds)
        {
            var newest = Newest;
            if (newest == null || seconds <= 0) return;
            double rate = newest.TickRateHz > 0 ? newest.TickRateHz : 30;
            double target = newest.Tick - DelayTicks;
            if (double.IsNaN(RenderTick))
            {
                RenderTick = target;
                return;
            }
            RenderTick += seconds * rate;
            double error = target - RenderTick;
            if (Math.Abs(error) > SnapThresholdTicks) RenderTick = target;
            else RenderTick += error * Math.Min(1.0, seconds * CatchUpPerSecond);
        }

        /// <summary>The snapshots around renderTick: s0 at or before it, s1 after it (null past the
        /// newest), t in [0,1) between them. Before the oldest: the oldest, t = 0.</summary>
        public bool Bracket(double renderTick, out WorldSnapshot s0, out WorldSnapshot s1, out double t)
        {
            s0 = s1 = null;
            t = 0;
            int n = snapshots.Count;
            if (n == 0 || double.IsNaN(renderTick)) return false;
            if (renderTick <= snapshots[0].Tick)
            {
                s0 = snapshots[0];
                return true;
            }
            int lo = 0, hi = n; // first index with Tick > renderTick
            while (lo < hi)
            {
                int mid = lo + (hi - lo) / 2;
                if (snapshots[mid].Tick <= renderTick) lo = mid + 1;
                else hi = mid;
            }
            s0 = snapshots[lo - 1];
            if (lo < n)
            {
                s1 = snapshots[lo];
                t = (renderTick - s0.Tick) / (s1.Tick - s0.Tick);
            }
            return true;
        }

        /// <summary>An agent as it is at renderTick: present in the snapshot at or before that tick;
        /// position and velocity interpolated toward the next snapshot when the agent is in both.</summary>
        public bool TryGetAgent(uint id, double renderTick, out CrowdAgent agent)
        {
            WorldSnapshot s0, s1;
            double t;
            agent = default(CrowdAgent);
            if (!Bracket(renderTick, out s0, out s1, out t)) return false;
            if (!s0.TryGetAgent(id, out agent)) return false;
            CrowdAgent b;
            if (s1 != null && s1.TryGetAgent(id, out b)) agent = Lerp(agent, b, t);
            else if (s1 == null) agent = Extrapolate(agent, renderTick - s0.Tick, s0.TickRateHz);
            return true;
        }

        public bool TryGetAgent(uint id, out CrowdAgent agent)
        {
            return TryGetAgent(id, RenderTick, out agent);
        }

        public bool TryGetPosition(uint id, double renderTick, out float x, out float y)
        {
            CrowdAgent a;
            bool ok = TryGetAgent(id, renderTick, out a);
            x = a.X;
            y = a.Y;
            return ok;
        }

        public bool TryGetPosition(uint id, out float x, out float y)
        {
            return TryGetPosition(id, RenderTick, out x, out y);
        }

        /// <summary>The agent's render position as a vector (UnityEngine.Vector2 in Unity).</summary>
        public bool TryGetPosition(uint id, double renderTick, out Vector2 position)
        {
            CrowdAgent a;
            bool ok = TryGetAgent(id, renderTick, out a);
            position = new Vector2(a.X, a.Y);
            return ok;
        }

        public bool TryGetPosition(uint id, out Vector2 position)
        {
            return TryGetPosition(id, RenderTick, out position);
        }

        /// <summary>Every agent visible at renderTick, interpolated, ascending id. Returns the count.</summary>
        public int Sample(double renderTick, List<CrowdAgent> into)
        {
            into.Clear();
            WorldSnapshot s0, s1;
            double t;
            if (!Bracket(renderTick, out s0, out s1, out t)) return 0;
            var a = s0.Agents;
            var b = s1 != null ? s1.Agents : null;
            int j = 0;
            for (int i = 0; i < a.Length; i++)
            {
                var agent = a[i];
                if (b != null)
                {
                    while (j < b.Length && b[j].Id < agent.Id) j++;
                    if (j < b.Length && b[j].Id == agent.Id) agent = Lerp(agent, b[j], t);
                }
                else agent = Extrapolate(agent, renderTick - s0.Tick, s0.TickRateHz);
                into.Add(agent);
            }
            return into.Count;
        }

        public int Sample(List<CrowdAgent> into)
        {
            return Sample(RenderTick, into);
        }

        static CrowdAgent Lerp(CrowdAgent a, CrowdAgent b, double t)
        {
            float ft = (float)t;
            a.X += (b.X - a.X) * ft;
            a.Y += (b.Y - a.Y) * ft;
            a.Vx += (b.Vx - a.Vx) * ft;
            a.Vy += (b.Vy - a.Vy) * ft;
            return a;
        }

        CrowdAgent Extrapolate(CrowdAgent a, double ticksPast, uint tickRateHz)
        {
            if (MaxExtrapolationTicks <= 0 || ticksPast <= 0 || tickRateHz == 0) return a;
            float seconds = (float)(Math.Min(ticksPast, MaxExtrapolationTicks) / tickRateHz);
            a.X += a.Vx * seconds;
            a.Y += a.Vy * seconds;
            return a;
        }
    }
}
