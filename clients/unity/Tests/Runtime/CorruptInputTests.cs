// CorruptInputTests.cs — hostile server bytes: every truncation and thousands
// of bit flips of real frames, and random garbage streams, may only ever end in
// ProtoException or SnapshotMismatchException, never in another exception.
using System;
using System.Collections.Generic;
using Crowd.V1;
using NUnit.Framework;

namespace Crowd.Tests
{
    [TestFixture]
    public class CorruptInputTests
    {
        static List<byte[]> SampleFrames(out SnapshotDecoder primed, out byte[] delta)
        {
            var frames = new List<byte[]>();
            frames.Add(ProtoMessage.ToByteArray(new ServerMessage { Welcome = new Welcome { ProtocolMajor = 1, ServerVersion = "0.1.0", ClientId = 2, Role = Role.Player, TickRateHz = 30, Precision = 1000, WorldBounds = new Rect(-10, -10, 10, 10), Tick = 5 } }));
            var ack = new Ack { RequestId = 3 };
            ack.Ids.AddRange(new uint[] { 1, 2, 3 });
            frames.Add(ProtoMessage.ToByteArray(new ServerMessage { Ack = ack }));
            frames.Add(ProtoMessage.ToByteArray(new ServerMessage { Error = new Error { RequestId = 4, Code = ErrorCode.InvalidArgument, Message = "x is NaN", Index = 1 } }));
            frames.Add(ProtoMessage.ToByteArray(new ServerMessage { Pong = new Pong { ClientTimeUs = 123456789, ServerTick = 77 } }));
            var enc = new SnapshotEncoder();
            var o = new Obstacle { Id = 1 };
            o.X.AddRange(new[] { 0f, 1f, 1f }); o.Y.AddRange(new[] { 0f, 0f, 1f });
            var agents = new[] { SnapshotEncoder.Agent(1, 100, 200, 3, 4), SnapshotEncoder.Agent(4, -100, 50, 0, 0, 300, 2), SnapshotEncoder.Agent(9, 7, 7) };
            var key = SnapshotEncoder.Frame(enc.Encode(10, true, agents, new List<Obstacle> { o }));
            frames.Add(key);
            primed = new SnapshotDecoder();
            primed.Apply(ProtoMessage.Parse<ServerMessage>(key).Snapshot);
            agents[0].X += 40;
            agents[1].Vy -= 9;
            delta = SnapshotEncoder.Frame(enc.Encode(11, false, new[] { agents[0], agents[1], SnapshotEncoder.Agent(12, 1, 1) }));
            frames.Add(delta);
            return frames;
        }

        // Decode as the client does: parse, and apply a snapshot to a copy of the primed view.
        static bool Survives(byte[] data, int len, SnapshotDecoder primed, out string failure)
        {
            failure = null;
            try
            {
                var m = ProtoMessage.Parse<ServerMessage>(data, 0, len);
                if (m.MsgCase == ServerMessage.MsgOneofCase.Snapshot)
                {
                    var d = new SnapshotDecoder();
                    if (!m.Snapshot.Keyframe) d.Apply(CloneKeyframe(primed));
                    d.Apply(m.Snapshot);
                }
                return true;
            }
            catch (ProtoException) { return false; }
            catch (SnapshotMismatchException) { return false; }
            catch (Exception e)
            {
                failure = e.GetType().Name + ": " + e.Message;
                return false;
            }
        }

        // A keyframe reproducing the primed view, so every case starts from the same baseline.
        static Snapshot CloneKeyframe(SnapshotDecoder primed)
        {
            return new SnapshotEncoder().Encode(10, true, primed.View);
        }

        [Test]
        public void EveryTruncationIsSurvived()
        {
            SnapshotDecoder primed;
            byte[] delta;
            int refused = 0;
            foreach (var frame in SampleFrames(out primed, out delta))
            {
                for (int len = 0; len < frame.Length; len++)
                {
                    string failure;
                    if (!Survives(frame, len, primed, out failure)) refused++;
                    Assert.IsNull(failure, "truncated at " + len + " of " + frame.Length);
                }
            }
            Assert.IsTrue(refused > 0, "truncations must be noticed");
        }

        [Test]
        public void BitFlipsAreSurvived()
        {
            SnapshotDecoder primed;
            byte[] delta;
            var rng = new Random(42);
            int refused = 0, runs = 0;
            foreach (var frame in SampleFrames(out primed, out delta))
            {
                for (int i = 0; i < 1500; i++)
                {
                    var copy = (byte[])frame.Clone();
                    int flips = 1 + rng.Next(4);
                    for (int f = 0; f < flips; f++) copy[rng.Next(copy.Length)] ^= (byte)(1 << rng.Next(8));
                    string failure;
                    if (!Survives(copy, copy.Length, primed, out failure)) refused++;
                    runs++;
                    Assert.IsNull(failure, "flip run " + i);
                }
            }
            Assert.IsTrue(refused > 0 && refused < runs, "some flips are refused, some still decode (" + refused + "/" + runs + ")");
        }

        [Test]
        public void GarbageStreamsThroughTheSplitterAreSurvived()
        {
            SnapshotDecoder primed;
            byte[] delta;
            SampleFrames(out primed, out delta);
            var rng = new Random(9);
            for (int run = 0; run < 300; run++)
            {
                var s = new FrameSplitter(1 << 16);
                var junk = new byte[rng.Next(1, 400)];
                rng.NextBytes(junk);
                s.Push(junk, 0, junk.Length);
                for (;;)
                {
                    byte[] buf;
                    int off, len;
                    var r = s.Next(out buf, out off, out len);
                    if (r != FrameResult.Ready) break;
                    var body = new byte[len];
                    Buffer.BlockCopy(buf, off, body, 0, len);
                    string failure;
                    Survives(body, len, primed, out failure);
                    Assert.IsNull(failure, "garbage run " + run);
                }
            }
        }

        [Test]
        public void ADeltaAgainstTheWrongBaselineIsRefused()
        {
            SnapshotDecoder primed;
            byte[] delta;
            SampleFrames(out primed, out delta);
            var fresh = new SnapshotDecoder(); // never saw the keyframe
            var snap = ProtoMessage.Parse<ServerMessage>(delta).Snapshot;
            Assert.Throws<SnapshotMismatchException>(() => fresh.Apply(snap));
            Assert.AreEqual(3, primed.Apply(snap).Length);
        }
    }
}
