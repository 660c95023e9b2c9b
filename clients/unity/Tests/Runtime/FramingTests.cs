// FramingTests.cs — varint-delimited frames cut correctly from any split or
// coalescing of reads; an oversized or broken prefix stops the stream for good.
using System.Collections.Generic;
using Crowd.V1;
using NUnit.Framework;

namespace Crowd.Tests
{
    [TestFixture]
    public class FramingTests
    {
        static List<byte[]> Drain(FrameSplitter s, out FrameResult last)
        {
            var frames = new List<byte[]>();
            for (;;)
            {
                byte[] buf;
                int off, len;
                last = s.Next(out buf, out off, out len);
                if (last != FrameResult.Ready) return frames;
                var f = new byte[len];
                System.Buffer.BlockCopy(buf, off, f, 0, len);
                frames.Add(f);
            }
        }

        static byte[] Stream(out List<byte[]> bodies)
        {
            bodies = new List<byte[]>();
            var all = new List<byte>();
            var msgs = new IProtoMessage[]
            {
                new ServerMessage { Pong = new Pong { ServerTick = 1 } },
                new ServerMessage(), // an empty frame: length 0
                new ServerMessage { Error = new Error { Message = new string('x', 300) } }, // 2-byte prefix
            };
            foreach (var m in msgs)
            {
                bodies.Add(ProtoMessage.ToByteArray(m));
                all.AddRange(FrameSplitter.Delimit(m));
            }
            return all.ToArray();
        }

        [Test]
        public void EverySplitPointGivesTheSameFrames()
        {
            List<byte[]> bodies;
            byte[] stream = Stream(out bodies);
            for (int cut = 0; cut <= stream.Length; cut++)
            {
                var s = new FrameSplitter(1 << 20);
                FrameResult last;
                s.Push(stream, 0, cut);
                var frames = Drain(s, out last);
                s.Push(stream, cut, stream.Length - cut);
                frames.AddRange(Drain(s, out last));
                Assert.AreEqual(FrameResult.NeedMore, last);
                Assert.AreEqual(bodies.Count, frames.Count, "cut at " + cut);
                for (int i = 0; i < bodies.Count; i++)
                    Assert.AreEqual(System.Convert.ToBase64String(bodies[i]), System.Convert.ToBase64String(frames[i]));
                Assert.AreEqual(0, s.Pending);
            }
        }

        [Test]
        public void ByteByByteGivesTheSameFrames()
        {
            List<byte[]> bodies;
            byte[] stream = Stream(out bodies);
            var s = new FrameSplitter(1 << 20);
            var frames = new List<byte[]>();
            FrameResult last;
            for (int i = 0; i < stream.Length; i++)
            {
                s.Push(stream, i, 1);
                frames.AddRange(Drain(s, out last));
            }
            Assert.AreEqual(bodies.Count, frames.Count);
        }

        [Test]
        public void OversizedPrefixIsStickyTooLarge()
        {
            var s = new FrameSplitter(100);
            var w = new ProtoWriter();
            w.WriteVarint(101);
            s.Push(w.ToArray(), 0, w.Length);
            FrameResult last;
            Drain(s, out last);
            Assert.AreEqual(FrameResult.TooLarge, last);
            s.Push(new byte[] { 0 }, 0, 1);
            Drain(s, out last);
            Assert.AreEqual(FrameResult.TooLarge, last);
        }

        [Test]
        public void OverlongPrefixIsBadPrefix()
        {
            var s = new FrameSplitter(100);
            var junk = new byte[] { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 };
            s.Push(junk, 0, junk.Length);
            FrameResult last;
            Drain(s, out last);
            Assert.AreEqual(FrameResult.BadPrefix, last);
        }
    }
}
