// InterpolationBufferTests.cs — render positions between snapshots, at and
// beyond the ends of the buffer, for agents entering and leaving, and the
// render clock driven by explicit frame times (never the wall clock).
using System.Collections.Generic;
using Crowd.Client;
using NUnit.Framework;

namespace Crowd.Tests
{
    [TestFixture]
    public class InterpolationBufferTests
    {
        static CrowdAgent Ag(uint id, float x, float y, float vx = 0, float vy = 0)
        {
            return new CrowdAgent { Id = id, X = x, Y = y, Vx = vx, Vy = vy, Radius = 0.5f };
        }

        static WorldSnapshot Snap(ulong tick, params CrowdAgent[] agents)
        {
            return Snap(tick, false, agents);
        }

        static WorldSnapshot Snap(ulong tick, bool keyframe, params CrowdAgent[] agents)
        {
            return new WorldSnapshot(tick, 0, keyframe, (uint)agents.Length, 30, agents, null, false, null, 0);
        }

        const double Eps = 1e-5;

        [Test]
        public void PositionIsLinearBetweenTwoSnapshots()
        {
            var b = new InterpolationBuffer();
            b.Add(Snap(10, Ag(1, 0, 0, 1, 0)));
            b.Add(Snap(12, Ag(1, 4, -2, 3, 0)));
            float x, y;
            Assert.IsTrue(b.TryGetPosition(1, 10, out x, out y));
            Assert.AreEqual(0, x, Eps);
            Assert.IsTrue(b.TryGetPosition(1, 11, out x, out y));
            Assert.AreEqual(2, x, Eps);
            Assert.AreEqual(-1, y, Eps);
            Assert.IsTrue(b.TryGetPosition(1, 11.5, out x, out y));
            Assert.AreEqual(3, x, Eps);
            CrowdAgent a;
            Assert.IsTrue(b.TryGetAgent(1, 11, out a));
            Assert.AreEqual(2, a.Vx, Eps, "velocity interpolated too");
            Assert.IsTrue(b.TryGetPosition(1, 12, out x, out y));
            Assert.AreEqual(4, x, Eps);
        }

        [Test]
        public void ChoosesTheRightPairAmongMany()
        {
            var b = new InterpolationBuffer();
            for (ulong t = 0; t <= 20; t += 2) b.Add(Snap(t, Ag(7, t * 10f, 0)));
            for (double r = 0; r <= 20; r += 0.25)
            {
                float x, y;
                Assert.IsTrue(b.TryGetPosition(7, r, out x, out y));
                Assert.AreEqual(r * 10, x, 1e-3, "render tick " + r);
            }
        }

        [Test]
        public void ClampsOutsideTheBuffer()
        {
            var b = new InterpolationBuffer();
            b.Add(Snap(10, Ag(1, 1, 1, 30, 0)));
            b.Add(Snap(12, Ag(1, 3, 1, 30, 0)));
            float x, y;
            Assert.IsTrue(b.TryGetPosition(1, 5, out x, out y));
            Assert.AreEqual(1, x, Eps, "before the oldest: the oldest");
            Assert.IsTrue(b.TryGetPosition(1, 20, out x, out y));
            Assert.AreEqual(3, x, Eps, "past the newest: held");
            b.MaxExtrapolationTicks = 3;
            Assert.IsTrue(b.TryGetPosition(1, 13, out x, out y));
            Assert.AreEqual(4, x, Eps, "one tick of 30 units/s at 30 Hz");
            Assert.IsTrue(b.TryGetPosition(1, 20, out x, out y));
            Assert.AreEqual(6, x, Eps, "extrapolation capped at 3 ticks");
        }

        [Test]
        public void AgentsEnterAndLeaveAtSnapshotTicks()
        {
            var b = new InterpolationBuffer();
            b.Add(Snap(10, Ag(1, 0, 0), Ag(2, 5, 5)));
            b.Add(Snap(12, Ag(1, 2, 0), Ag(3, 9, 9)));
            float x, y;
            Assert.IsTrue(b.TryGetPosition(2, 11, out x, out y), "leaving agent shown until the snapshot without it");
            Assert.AreEqual(5, x, Eps, "and held where it was last seen");
            Assert.IsFalse(b.TryGetPosition(3, 11.9, out x, out y), "entering agent not yet shown");
            Assert.IsTrue(b.TryGetPosition(3, 12, out x, out y));
            Assert.IsFalse(b.TryGetPosition(2, 12, out x, out y));
            var list = new List<CrowdAgent>();
            Assert.AreEqual(2, b.Sample(11, list));
            Assert.AreEqual(1u, list[0].Id);
            Assert.AreEqual(1, list[0].X, Eps);
            Assert.AreEqual(2u, list[1].Id);
            Assert.AreEqual(2, b.Sample(12, list));
            Assert.AreEqual(3u, list[1].Id);
        }

        [Test]
        public void StaleTicksAreIgnoredButARestartedServerResets()
        {
            var b = new InterpolationBuffer();
            Assert.IsTrue(b.Add(Snap(10, Ag(1, 0, 0))));
            Assert.IsFalse(b.Add(Snap(10, Ag(1, 9, 9))), "duplicate tick");
            Assert.IsFalse(b.Add(Snap(8, Ag(1, 9, 9))), "older delta");
            Assert.AreEqual(1, b.Count);
            Assert.IsTrue(b.Add(Snap(3, true, Ag(1, 7, 7))), "older keyframe: a new server");
            Assert.AreEqual(1, b.Count);
            Assert.AreEqual(3UL, b.Newest.Tick);
        }

        [Test]
        public void CapacityDropsTheOldest()
        {
            var b = new InterpolationBuffer(4);
            for (ulong t = 1; t <= 10; t++) b.Add(Snap(t, Ag(1, t, 0)));
            Assert.AreEqual(4, b.Count);
            Assert.AreEqual(7UL, b.Oldest.Tick);
        }

        [Test]
        public void RenderClockFollowsTheStreamWithADelay()
        {
            var b = new InterpolationBuffer();
            b.Add(Snap(100, Ag(1, 0, 0)));
            Assert.AreEqual(98, b.RenderTick, Eps, "starts DelayTicks (2 before a gap is known) behind");
            b.Add(Snap(102, Ag(1, 2, 0)));
            Assert.AreEqual(4, b.DelayTicks, Eps, "twice the snapshot gap");
            // Frames of 1/60 s at 30 Hz: half a tick each. Feed snapshots every 4 frames (2 ticks).
            ulong tick = 102;
            for (int frame = 1; frame <= 400; frame++)
            {
                if (frame % 4 == 0)
                {
                    tick += 2;
                    b.Add(Snap(tick, Ag(1, tick, 0)));
                }
                b.Advance(1.0 / 60.0);
            }
            double lag = b.Newest.Tick - b.RenderTick;
            Assert.AreEqual(4, lag, 1.0, "render time settles DelayTicks behind the newest snapshot");
            float x, y;
            Assert.IsTrue(b.TryGetPosition(1, out x, out y));
            Assert.AreEqual(b.RenderTick, x, 1e-3, "x was set equal to the tick, so it tracks render time");
        }

        [Test]
        public void RenderClockJumpsWhenFarBehind()
        {
            var b = new InterpolationBuffer();
            b.DelayTicks = 3;
            b.Add(Snap(10, Ag(1, 0, 0)));
            b.Add(Snap(500, Ag(1, 0, 0)));
            b.Advance(1.0 / 60.0);
            Assert.AreEqual(497, b.RenderTick, Eps);
        }
    }
}
