// ProtoWireTests.cs — the hand-written protobuf wire layer: varints, zigzag,
// packed and unpacked repeated fields, unknown fields, and hostile bytes.
using System.Collections.Generic;
using Crowd.V1;
using NUnit.Framework;

namespace Crowd.Tests
{
    [TestFixture]
    public class ProtoWireTests
    {
        static byte[] Bytes(params int[] b)
        {
            var r = new byte[b.Length];
            for (int i = 0; i < b.Length; i++) r[i] = (byte)b[i];
            return r;
        }

        [Test]
        public void VarintRoundTripsAtEveryLengthBoundary()
        {
            var values = new List<ulong> { 0, 1, 127, 128, 16383, 16384, uint.MaxValue, (ulong)uint.MaxValue + 1, ulong.MaxValue };
            foreach (ulong v in values)
            {
                var w = new ProtoWriter();
                w.WriteVarint(v);
                var r = new ProtoReader(w.ToArray(), 0, w.Length);
                Assert.AreEqual(v, r.ReadVarint());
                Assert.IsTrue(r.AtEnd);
            }
            var max = new ProtoWriter();
            max.WriteVarint(ulong.MaxValue);
            Assert.AreEqual(10, max.Length);
        }

        [Test]
        public void VarintPast64BitsIsRefused()
        {
            // 10th byte carrying more than the 64th bit
            var eleven = Bytes(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02);
            Assert.Throws<ProtoException>(() => new ProtoReader(eleven, 0, eleven.Length).ReadVarint());
            var tooLong = Bytes(0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01);
            Assert.Throws<ProtoException>(() => new ProtoReader(tooLong, 0, tooLong.Length).ReadVarint());
            var truncated = Bytes(0x80, 0x80);
            Assert.Throws<ProtoException>(() => new ProtoReader(truncated, 0, truncated.Length).ReadVarint());
        }

        [Test]
        public void ZigZagMatchesProtobuf()
        {
            Assert.AreEqual(0UL, ProtoWriter.EncodeSInt32(0));
            Assert.AreEqual(1UL, ProtoWriter.EncodeSInt32(-1));
            Assert.AreEqual(2UL, ProtoWriter.EncodeSInt32(1));
            Assert.AreEqual(4294967294UL, ProtoWriter.EncodeSInt32(int.MaxValue));
            Assert.AreEqual(4294967295UL, ProtoWriter.EncodeSInt32(int.MinValue));
            foreach (int v in new[] { 0, 1, -1, 1000, -1000, int.MaxValue, int.MinValue })
                Assert.AreEqual(v, ProtoReader.DecodeSInt32(ProtoWriter.EncodeSInt32(v)));
            Assert.Throws<ProtoException>(() => ProtoReader.DecodeSInt32(1UL << 33));
        }

        [Test]
        public void Uint32PastRangeIsRefused()
        {
            var w = new ProtoWriter();
            w.WriteTag(1, WireType.Varint);
            w.WriteVarint(1UL << 32);
            byte[] b = w.ToArray();
            Assert.Throws<ProtoException>(() => ProtoMessage.Parse<RemoveObstacle>(b));
        }

        [Test]
        public void RepeatedScalarsDecodePackedAndUnpacked()
        {
            var w = new ProtoWriter();
            w.WriteTag(1, WireType.Varint); w.WriteVarint(5);        // unpacked
            w.WriteTag(1, WireType.LengthDelimited); w.WriteVarint(2); w.WriteVarint(6); w.WriteVarint(7); // packed
            w.WriteTag(2, WireType.Fixed32); w.WriteFixed32(ProtoWriter.FloatToBits(1.5f));
            w.WriteTag(2, WireType.LengthDelimited); w.WriteVarint(4); w.WriteFixed32(ProtoWriter.FloatToBits(2.5f));
            var m = ProtoMessage.Parse<SetTargets>(w.ToArray());
            Assert.AreEqual(3, m.Ids.Count);
            Assert.AreEqual(5u, m.Ids[0]);
            Assert.AreEqual(7u, m.Ids[2]);
            Assert.AreEqual(2, m.X.Count);
            Assert.AreEqual(2.5f, m.X[1]);
        }

        [Test]
        public void PackedRunsThatEndMidElementAreRefused()
        {
            var w = new ProtoWriter();
            w.WriteTag(2, WireType.LengthDelimited); w.WriteVarint(3); w.WriteFixed32(0); // 3 bytes of a float, then one more
            Assert.Throws<ProtoException>(() => ProtoMessage.Parse<SetTargets>(w.ToArray()));
            var v = new ProtoWriter();
            v.WriteTag(1, WireType.LengthDelimited); v.WriteVarint(1); v.WriteRawByte(0x80); // a varint cut by the packed length
            Assert.Throws<ProtoException>(() => ProtoMessage.Parse<SetTargets>(v.ToArray()));
        }

        [Test]
        public void SixtyFourBitAndSignedHelpersRoundTrip()
        {
            foreach (long v in new[] { 0L, -1L, 1L, long.MinValue, long.MaxValue })
                Assert.AreEqual(v, ProtoReader.DecodeSInt64(ProtoWriter.EncodeSInt64(v)));
            foreach (double d in new[] { 0.0, -0.0, 1.5, double.MaxValue })
                Assert.AreEqual(ProtoWriter.DoubleToBits(d), ProtoWriter.DoubleToBits(ProtoReader.BitsToDouble(ProtoWriter.DoubleToBits(d))));
            Assert.AreEqual(-1, ProtoReader.CheckInt32(ulong.MaxValue), "int32 -1 comes as ten bytes, sign-extended");
            Assert.Throws<ProtoException>(() => ProtoReader.CheckInt32(1UL << 31));
        }

        [Test]
        public void UnknownFieldsAreSkippedAndCounted()
        {
            var w = new ProtoWriter();
            w.WriteTag(1, WireType.Varint); w.WriteVarint(42);
            w.WriteTag(99, WireType.Fixed64); w.WriteFixed64(7);
            w.WriteTag(100, WireType.LengthDelimited); w.WriteVarint(2); w.WriteRawByte(1); w.WriteRawByte(2);
            w.WriteTag(101, WireType.Fixed32); w.WriteFixed32(3);
            var r = new ProtoReader(w.ToArray(), 0, w.Length);
            var m = new RemoveObstacle();
            m.MergeFrom(r);
            Assert.AreEqual(42u, m.Id);
            Assert.AreEqual(3, r.UnknownFields);
        }

        [Test]
        public void WrongWireTypeForAKnownFieldIsRefused()
        {
            var w = new ProtoWriter();
            w.WriteTag(1, WireType.Fixed32); w.WriteFixed32(1); // RemoveObstacle.id is a varint
            byte[] b = w.ToArray();
            Assert.Throws<ProtoException>(() => ProtoMessage.Parse<RemoveObstacle>(b));
        }

        [Test]
        public void GroupsFieldZeroAndOverlongLengthsAreRefused()
        {
            Assert.Throws<ProtoException>(() => ProtoMessage.Parse<Ping>(Bytes(0x0b, 0x0c)));   // start group
            Assert.Throws<ProtoException>(() => ProtoMessage.Parse<Ping>(Bytes(0x00, 0x01)));   // field 0
            Assert.Throws<ProtoException>(() => ProtoMessage.Parse<Error>(Bytes(0x1a, 0x05, 0x41))); // string runs past end
            Assert.Throws<ProtoException>(() => ProtoMessage.Parse<Vec2>(Bytes(0x0d, 0x00, 0x00))); // truncated float
        }

        [Test]
        public void Proto3DefaultsAreNotWrittenButPresenceIs()
        {
            Assert.AreEqual(0, ProtoMessage.ToByteArray(new Vec2()).Length);
            Assert.AreEqual(5, ProtoMessage.ToByteArray(new Vec2(-0f, 0f)).Length, "-0.0 differs from the default");
            var spec = new AgentSpec { Radius = 0f, MaxNeighbors = 0 };
            var back = ProtoMessage.Parse<AgentSpec>(ProtoMessage.ToByteArray(spec));
            Assert.IsTrue(back.Radius.HasValue && back.Radius.Value == 0f, "optional 0 stays present");
            Assert.IsTrue(back.MaxNeighbors.HasValue);
            Assert.IsFalse(back.MaxSpeed.HasValue);
        }
    }
}
