// SnapshotDecoderTests.cs — the per-subscriber delta coding of Snapshot,
// decoded exactly as proto/wire's C decoder: keyframes, deltas with omitted
// fields, entering and leaving agents, and every inconsistency refused whole.
using System;
using System.Collections.Generic;
using Crowd.V1;
using NUnit.Framework;

namespace Crowd.Tests
{
    [TestFixture]
    public class SnapshotDecoderTests
    {
        static QuantizedAgent A(uint id, int x, int y, int vx = 0, int vy = 0, uint r = 500, uint owner = 0)
        {
            return SnapshotEncoder.Agent(id, x, y, vx, vy, r, owner);
        }

        static void AssertView(QuantizedAgent[] expected, QuantizedAgent[] actual)
        {
            Assert.AreEqual(expected.Length, actual.Length, "agents in view");
            for (int i = 0; i < expected.Length; i++)
            {
                Assert.AreEqual(expected[i].Id, actual[i].Id);
                Assert.AreEqual(expected[i].X, actual[i].X, "x of " + expected[i].Id);
                Assert.AreEqual(expected[i].Y, actual[i].Y, "y of " + expected[i].Id);
                Assert.AreEqual(expected[i].Vx, actual[i].Vx);
                Assert.AreEqual(expected[i].Vy, actual[i].Vy);
                Assert.AreEqual(expected[i].Radius, actual[i].Radius);
                Assert.AreEqual(expected[i].Owner, actual[i].Owner);
            }
        }

        [Test]
        public void HandBuiltKeyframeDecodes()
        {
            // Independent of SnapshotEncoder: ids 3 and 10, all bits, absolute values.
            var s = new Snapshot { Tick = 5, Keyframe = true };
            s.Entries.Add(3UL << 5 | 31);
            s.Entries.Add(7UL << 5 | 31);
            s.X.AddRange(new[] { 1500, -2000 });
            s.Y.AddRange(new[] { 0, 7 });
            s.Vx.AddRange(new[] { 10, 0 });
            s.Vy.AddRange(new[] { -10, 1 });
            s.Radius.AddRange(new uint[] { 500, 250 });
            s.Owner.AddRange(new uint[] { 1, 0 });
            var d = new SnapshotDecoder();
            var bytes = SnapshotEncoder.Frame(s);
            var view = d.Apply(ProtoMessage.Parse<ServerMessage>(bytes).Snapshot);
            AssertView(new[] { A(3, 1500, 0, 10, -10, 500, 1), A(10, -2000, 7, 0, 1, 250, 0) }, view);
            Assert.AreEqual(2, d.LastEntered);
        }

        [Test]
        public void HandBuiltDeltaAddsDifferencesAndKeepsOmittedFields()
        {
            var d = new SnapshotDecoder();
            var enc = new SnapshotEncoder();
            d.Apply(enc.Encode(1, true, new[] { A(3, 100, 200, 1, 2), A(10, 0, 0) }));
            var s = new Snapshot { Tick = 2 };
            s.Entries.Add(3UL << 5 | 1);      // id 3: x only
            s.Entries.Add(7UL << 5 | 0);      // id 10: unchanged
            s.X.Add(-150);
            var view = d.Apply(s);
            AssertView(new[] { A(3, -50, 200, 1, 2), A(10, 0, 0) }, view);
        }

        [Test]
        public void EncoderDecoderAgreeOverARandomWalk()
        {
            var rng = new Random(1234);
            var enc = new SnapshotEncoder();
            var dec = new SnapshotDecoder();
            var agents = new SortedDictionary<uint, QuantizedAgent>();
            uint nextId = 1;
            for (int tick = 1; tick <= 300; tick++)
            {
                // Agents come, go, move, some stand still, one changes radius now and then.
                if (rng.Next(3) == 0 || agents.Count < 3) { agents[nextId] = A(nextId, rng.Next(-100000, 100000), rng.Next(-100000, 100000), 0, 0, (uint)rng.Next(1, 2000), (uint)rng.Next(0, 4)); nextId += (uint)rng.Next(1, 5); }
                if (rng.Next(4) == 0 && agents.Count > 0) { var ids = new List<uint>(agents.Keys); agents.Remove(ids[rng.Next(ids.Count)]); }
                foreach (var id in new List<uint>(agents.Keys))
                {
                    var a = agents[id];
                    if (rng.Next(5) != 0) { a.Vx = rng.Next(-3000, 3000); a.X += a.Vx / 30; }
                    if (rng.Next(5) != 0) { a.Vy = rng.Next(-3000, 3000); a.Y += a.Vy / 30; }
                    if (rng.Next(50) == 0) a.Radius++;
                    agents[id] = a;
                }
                var next = new List<QuantizedAgent>(agents.Values).ToArray();
                var snap = enc.Encode((ulong)tick, tick % 40 == 1, next);
                var parsed = ProtoMessage.Parse<ServerMessage>(SnapshotEncoder.Frame(snap)).Snapshot;
                AssertView(next, dec.Apply(parsed));
            }
        }

        [Test]
        public void RemovedIdsAreDeltaCoded()
        {
            var enc = new SnapshotEncoder();
            var dec = new SnapshotDecoder();
            dec.Apply(enc.Encode(1, true, new[] { A(2, 0, 0), A(5, 0, 0), A(9, 0, 0) }));
            var s = enc.Encode(2, false, new[] { A(5, 0, 0) });
            Assert.AreEqual(2u, s.RemovedIdDeltas[0]);
            Assert.AreEqual(7u, s.RemovedIdDeltas[1]);
            dec.Apply(s);
            Assert.AreEqual(2, dec.LastRemoved.Count);
            Assert.AreEqual(9u, dec.LastRemoved[1]);
            Assert.AreEqual(1, dec.View.Length);
        }

        [Test]
        public void ValuesWrapIn32BitsLikeTheCDecoder()
        {
            var enc = new SnapshotEncoder();
            var dec = new SnapshotDecoder();
            dec.Apply(enc.Encode(1, true, new[] { A(1, int.MaxValue - 1, int.MinValue + 1) }));
            var view = dec.Apply(enc.Encode(2, false, new[] { A(1, int.MinValue + 1, int.MaxValue - 1) }));
            Assert.AreEqual(int.MinValue + 1, view[0].X);
            Assert.AreEqual(int.MaxValue - 1, view[0].Y);
        }

        [Test]
        public void ObstaclesReplaceOnlyWhenChanged()
        {
            var enc = new SnapshotEncoder();
            var dec = new SnapshotDecoder();
            var o = new Obstacle { Id = 4 };
            o.X.AddRange(new[] { 0f, 1f }); o.Y.AddRange(new[] { 0f, 0f });
            dec.Apply(enc.Encode(1, true, new[] { A(1, 0, 0) }, new List<Obstacle> { o }));
            Assert.AreEqual(1, dec.Obstacles.Count);
            dec.Apply(enc.Encode(2, false, new[] { A(1, 1, 0) }));
            Assert.AreEqual(1, dec.Obstacles.Count, "unchanged set kept");
            dec.Apply(enc.Encode(3, true, new[] { A(1, 1, 0) }));
            Assert.AreEqual(1, dec.Obstacles.Count, "a keyframe without obstacles_changed keeps them (as the C decoder)");
            dec.Apply(enc.Encode(4, false, new[] { A(1, 1, 0) }, new List<Obstacle>()));
            Assert.AreEqual(0, dec.Obstacles.Count);
        }

        static void AssertRefusedAndUnchanged(SnapshotDecoder dec, Snapshot bad, string why)
        {
            var before = dec.View;
            Assert.Throws<SnapshotMismatchException>(() => dec.Apply(bad), why);
            Assert.IsTrue(ReferenceEquals(before, dec.View), why + ": view unchanged");
        }

        [Test]
        public void InconsistentSnapshotsAreRefusedWhole()
        {
            var enc = new SnapshotEncoder();
            var dec = new SnapshotDecoder();
            dec.Apply(enc.Encode(1, true, new[] { A(1, 0, 0), A(2, 5, 5) }));

            var s = new Snapshot { Tick = 2 };
            s.Entries.Add(7UL << 5 | 1); s.X.Add(1);
            AssertRefusedAndUnchanged(dec, s, "delta for an agent the view lacks");

            s = new Snapshot { Tick = 2, Keyframe = true };
            s.Entries.Add(1UL << 5 | 1); s.X.Add(1);
            AssertRefusedAndUnchanged(dec, s, "keyframe entry without the new bit");

            s = new Snapshot { Tick = 2 };
            s.Entries.Add(1UL << 5); s.Entries.Add(0UL << 5);
            AssertRefusedAndUnchanged(dec, s, "id delta 0");

            s = new Snapshot { Tick = 2 };
            s.Entries.Add(1UL << 5 | 3); s.X.Add(1);
            AssertRefusedAndUnchanged(dec, s, "y array too short");

            s = new Snapshot { Tick = 2 };
            s.Entries.Add(1UL << 5 | 1); s.X.Add(1); s.X.Add(2);
            AssertRefusedAndUnchanged(dec, s, "x array too long");

            s = new Snapshot { Tick = 2 };
            s.Entries.Add(1UL << 5 | 31); s.X.Add(1); s.Y.Add(1); s.Vx.Add(1); s.Vy.Add(1); s.Radius.Add(1);
            AssertRefusedAndUnchanged(dec, s, "owner missing for a new agent");

            s = new Snapshot { Tick = 2 };
            s.Entries.Add((ulong)uint.MaxValue << 5 | 31); s.Entries.Add(5UL << 5 | 31);
            for (int i = 0; i < 2; i++) { s.X.Add(0); s.Y.Add(0); s.Vx.Add(0); s.Vy.Add(0); s.Radius.Add(1); s.Owner.Add(0); }
            AssertRefusedAndUnchanged(dec, s, "id past 32 bits");

            s = new Snapshot { Tick = 2 };
            s.Entries.Add(1UL << 5); s.RemovedIdDeltas.Add(2); s.RemovedIdDeltas.Add(0);
            AssertRefusedAndUnchanged(dec, s, "removed delta 0");

            s = new Snapshot { Tick = 2, ObstaclesChanged = true };
            s.Entries.Add(1UL << 5);
            var o = new Obstacle(); o.X.Add(1);
            s.Obstacles.Add(o);
            AssertRefusedAndUnchanged(dec, s, "obstacle x/y lengths differ");

            // The view still decodes the next good delta.
            var view = dec.Apply(enc.Encode(3, false, new[] { A(1, 1, 0), A(2, 5, 5) }));
            Assert.AreEqual(1, view[0].X);
        }

        [Test]
        public void QuantizeMatchesTheServer()
        {
            Assert.AreEqual(1500, SnapshotDecoder.Quantize(1.5f, 1000));
            Assert.AreEqual(-1500, SnapshotDecoder.Quantize(-1.5f, 1000));
            Assert.AreEqual(2, SnapshotDecoder.Quantize(2.5f, 1), "lrint rounds half to even");
            Assert.AreEqual(0, SnapshotDecoder.Quantize(float.NaN, 1000));
            Assert.AreEqual(1 << 30, SnapshotDecoder.Quantize(float.PositiveInfinity, 1000));
            Assert.AreEqual(-(1 << 30), SnapshotDecoder.Quantize(-1e30f, 1000));
        }
    }
}
