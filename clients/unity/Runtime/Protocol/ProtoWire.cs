// ProtoWire.cs — the protobuf wire format by hand (varints, zigzag, fixed32,
// length-delimited), just enough for crowd.v1, so the package needs no NuGet
// dependency. Every read is bounds-checked: hostile bytes raise ProtoException.
using System;
using System.Collections.Generic;
using System.Text;

namespace Crowd.V1
{
    /// <summary>Protobuf wire types (the low 3 bits of a tag).</summary>
    public enum WireType
    {
        Varint = 0,
        Fixed64 = 1,
        LengthDelimited = 2,
        StartGroup = 3,
        EndGroup = 4,
        Fixed32 = 5,
    }

    /// <summary>The bytes did not decode: truncated, malformed or inconsistent input.</summary>
    public sealed class ProtoException : Exception
    {
        public ProtoException(string message) : base(message) { }
    }

    /// <summary>A message of crowd.v1 that can write itself and merge fields from a reader.</summary>
    public interface IProtoMessage
    {
        void WriteTo(ProtoWriter w);
        void MergeFrom(ProtoReader r);
    }

    /// <summary>Reads protobuf fields from a byte range. Not thread-safe; one per message.</summary>
    public sealed class ProtoReader
    {
        // Deeper nesting than crowd.v1 ever uses is hostile input.
        const int MaxDepth = 16;

        readonly byte[] buf;
        int pos;
        readonly int end;
        readonly int depth;
        WireType lastWireType;

        public ProtoReader(byte[] buffer, int offset, int count) : this(buffer, offset, count, 0) { }

        ProtoReader(byte[] buffer, int offset, int count, int depth)
        {
            if (buffer == null) throw new ArgumentNullException("buffer");
            if (offset < 0 || count < 0 || offset > buffer.Length - count)
                throw new ArgumentOutOfRangeException("count");
            if (depth > MaxDepth) throw new ProtoException("messages nested too deeply");
            buf = buffer;
            pos = offset;
            end = offset + count;
            this.depth = depth;
        }

        /// <summary>Fields skipped because this codec does not know their number (the schema test wants 0).</summary>
        public int UnknownFields { get; private set; }

        public bool AtEnd { get { return pos >= end; } }

        public int Remaining { get { return end - pos; } }

        /// <summary>The wire type of the field last returned by NextField.</summary>
        public WireType FieldWireType { get { return lastWireType; } }

        /// <summary>Reads the next tag; false at the end of the message.</summary>
        public bool NextField(out int fieldNumber)
        {
            if (pos >= end)
            {
                fieldNumber = 0;
                return false;
            }
            ulong tag = ReadVarint();
            ulong number = tag >> 3;
            int wt = (int)(tag & 7);
            if (number == 0 || number > 536870911) throw new ProtoException("invalid field number");
            if (wt == 3 || wt == 4 || wt > 5) throw new ProtoException("invalid or unsupported wire type " + wt);
            fieldNumber = (int)number;
            lastWireType = (WireType)wt;
            return true;
        }

        public ulong ReadVarint()
        {
            ulong result = 0;
            for (int i = 0; i < 10; i++)
            {
                if (pos >= end) throw new ProtoException("truncated varint");
                byte b = buf[pos++];
                if (i == 9 && b > 1) throw new ProtoException("varint overflows 64 bits");
                result |= (ulong)(b & 0x7f) << (7 * i);
                if ((b & 0x80) == 0) return result;
            }
            throw new ProtoException("varint longer than 10 bytes");
        }

        public uint ReadFixed32()
        {
            if (end - pos < 4) throw new ProtoException("truncated fixed32");
            uint v = (uint)(buf[pos] | buf[pos + 1] << 8 | buf[pos + 2] << 16 | buf[pos + 3] << 24);
            pos += 4;
            return v;
        }

        public ulong ReadFixed64()
        {
            ulong lo = ReadFixed32();
            ulong hi = ReadFixed32();
            return lo | hi << 32;
        }

        void Expect(WireType wt)
        {
            if (lastWireType != wt)
                throw new ProtoException("field has wire type " + lastWireType + ", expected " + wt);
        }

        /// <summary>uint32; a value past 32 bits is malformed (nanopb, the server's decoder, refuses it too).</summary>
        public uint ReadUInt32() { Expect(WireType.Varint); return CheckUInt32(ReadVarint()); }

        static uint CheckUInt32(ulong v)
        {
            if (v > uint.MaxValue) throw new ProtoException("uint32 out of range");
            return (uint)v;
        }

        public ulong ReadUInt64() { Expect(WireType.Varint); return ReadVarint(); }

        public bool ReadBool() { Expect(WireType.Varint); return ReadVarint() != 0; }

        /// <summary>An enum value; unknown numbers are kept (proto3 open enums).</summary>
        public int ReadEnum()
        {
            Expect(WireType.Varint);
            long v = (long)ReadVarint();
            if (v < int.MinValue || v > int.MaxValue) throw new ProtoException("enum out of range");
            return (int)v;
        }

        public int ReadSInt32() { Expect(WireType.Varint); return DecodeSInt32(ReadVarint()); }

        public float ReadFloat() { Expect(WireType.Fixed32); return BitsToFloat(ReadFixed32()); }

        public string ReadString()
        {
            Expect(WireType.LengthDelimited);
            int n = ReadLength();
            string s = Encoding.UTF8.GetString(buf, pos, n);
            pos += n;
            return s;
        }

        /// <summary>A reader over the body of the current length-delimited field.</summary>
        public ProtoReader ReadSubReader()
        {
            Expect(WireType.LengthDelimited);
            int n = ReadLength();
            var sub = new ProtoReader(buf, pos, n, depth + 1);
            pos += n;
            return sub;
        }

        public T ReadMessage<T>() where T : IProtoMessage, new()
        {
            var sub = ReadSubReader();
            var msg = new T();
            msg.MergeFrom(sub);
            UnknownFields += sub.UnknownFields;
            return msg;
        }

        /// <summary>Merges the current field into an existing message (protobuf's rule for a repeated occurrence).</summary>
        public T MergeMessage<T>(T existing) where T : class, IProtoMessage, new()
        {
            var sub = ReadSubReader();
            var msg = existing ?? new T();
            msg.MergeFrom(sub);
            UnknownFields += sub.UnknownFields;
            return msg;
        }

        int ReadLength()
        {
            ulong n = ReadVarint();
            if (n > (ulong)(end - pos)) throw new ProtoException("length-delimited field runs past the end");
            return (int)n;
        }

        /// <summary>Skips a field this codec does not know, and counts it.</summary>
        public void SkipUnknown()
        {
            UnknownFields++;
            Skip();
        }

        public void Skip()
        {
            switch (lastWireType)
            {
                case WireType.Varint: ReadVarint(); break;
                case WireType.Fixed64: ReadFixed64(); break;
                case WireType.Fixed32: ReadFixed32(); break;
                case WireType.LengthDelimited:
                {
                    int n = ReadLength(); // before the addition: ReadLength moves pos
                    pos += n;
                    break;
                }
                default: throw new ProtoException("cannot skip wire type " + lastWireType);
            }
        }

        // Repeated scalars: packed (proto3's default) or one element per tag; parsers must accept both.

        public void ReadRepeatedUInt32(List<uint> into)
        {
            if (lastWireType == WireType.LengthDelimited)
            {
                int n = ReadLength();
                int stop = pos + n;
                var sub = new ProtoReader(buf, pos, n, depth + 1);
                while (!sub.AtEnd) into.Add(CheckUInt32(sub.ReadVarint()));
                pos = stop;
            }
            else into.Add(ReadUInt32());
        }

        public void ReadRepeatedUInt64(List<ulong> into)
        {
            if (lastWireType == WireType.LengthDelimited)
            {
                int n = ReadLength();
                var sub = new ProtoReader(buf, pos, n, depth + 1);
                while (!sub.AtEnd) into.Add(sub.ReadVarint());
                pos += n;
            }
            else into.Add(ReadUInt64());
        }

        public void ReadRepeatedSInt32(List<int> into)
        {
            if (lastWireType == WireType.LengthDelimited)
            {
                int n = ReadLength();
                var sub = new ProtoReader(buf, pos, n, depth + 1);
                while (!sub.AtEnd) into.Add(DecodeSInt32(sub.ReadVarint()));
                pos += n;
            }
            else into.Add(ReadSInt32());
        }

        public void ReadRepeatedFloat(List<float> into)
        {
            if (lastWireType == WireType.LengthDelimited)
            {
                int n = ReadLength();
                if (n % 4 != 0) throw new ProtoException("packed float field is not a multiple of 4 bytes");
                var sub = new ProtoReader(buf, pos, n, depth + 1);
                while (!sub.AtEnd) into.Add(BitsToFloat(sub.ReadFixed32()));
                pos += n;
            }
            else into.Add(ReadFloat());
        }

        /// <summary>sint32: zigzag; a value outside the int32 range is malformed (as nanopb's decoder rules).</summary>
        public static int DecodeSInt32(ulong raw)
        {
            long v = (long)(raw >> 1) ^ -(long)(raw & 1);
            if (v < int.MinValue || v > int.MaxValue) throw new ProtoException("sint32 out of range");
            return (int)v;
        }

        public static float BitsToFloat(uint bits)
        {
            return BitConverter.ToSingle(BitConverter.GetBytes(bits), 0);
        }
    }

    /// <summary>Writes protobuf fields into a growable buffer. proto3 rules: scalar fields
    /// at their default are not written; repeated scalars are packed.</summary>
    public sealed class ProtoWriter
    {
        byte[] buf;
        int len;

        public ProtoWriter(int capacity = 64)
        {
            buf = new byte[Math.Max(16, capacity)];
        }

        public int Length { get { return len; } }

        public byte[] ToArray()
        {
            var result = new byte[len];
            Buffer.BlockCopy(buf, 0, result, 0, len);
            return result;
        }

        public void Clear() { len = 0; }

        void Reserve(int extra)
        {
            if (len + extra <= buf.Length) return;
            int cap = buf.Length;
            while (cap < len + extra) cap *= 2;
            Array.Resize(ref buf, cap);
        }

        public void WriteRawByte(byte b)
        {
            Reserve(1);
            buf[len++] = b;
        }

        public void WriteRawBytes(byte[] data, int offset, int count)
        {
            Reserve(count);
            Buffer.BlockCopy(data, offset, buf, len, count);
            len += count;
        }

        public void WriteVarint(ulong v)
        {
            Reserve(10);
            while (v >= 0x80)
            {
                buf[len++] = (byte)(v | 0x80);
                v >>= 7;
            }
            buf[len++] = (byte)v;
        }

        public void WriteFixed32(uint v)
        {
            Reserve(4);
            buf[len++] = (byte)v;
            buf[len++] = (byte)(v >> 8);
            buf[len++] = (byte)(v >> 16);
            buf[len++] = (byte)(v >> 24);
        }

        public void WriteFixed64(ulong v)
        {
            WriteFixed32((uint)v);
            WriteFixed32((uint)(v >> 32));
        }

        public void WriteTag(int field, WireType wt) { WriteVarint((ulong)((uint)field << 3 | (uint)wt)); }

        public static ulong EncodeSInt32(int v) { return (uint)((v << 1) ^ (v >> 31)); }

        public static uint FloatToBits(float f)
        {
            return BitConverter.ToUInt32(BitConverter.GetBytes(f), 0);
        }

        public void WriteUInt32(int field, uint v)
        {
            if (v == 0) return;
            WriteTag(field, WireType.Varint);
            WriteVarint(v);
        }

        public void WriteUInt64(int field, ulong v)
        {
            if (v == 0) return;
            WriteTag(field, WireType.Varint);
            WriteVarint(v);
        }

        public void WriteBool(int field, bool v)
        {
            if (!v) return;
            WriteTag(field, WireType.Varint);
            WriteVarint(1);
        }

        /// <summary>Enums are int32 on the wire: a negative value takes 10 bytes.</summary>
        public void WriteEnum(int field, int v)
        {
            if (v == 0) return;
            WriteTag(field, WireType.Varint);
            WriteVarint((ulong)(long)v);
        }

        public void WriteFloat(int field, float v)
        {
            uint bits = FloatToBits(v);
            if (bits == 0) return; // +0.0 is the default; -0.0 is written
            WriteTag(field, WireType.Fixed32);
            WriteFixed32(bits);
        }

        /// <summary>A proto3 `optional` field: written whenever present, even at 0.</summary>
        public void WriteOptionalFloat(int field, float? v)
        {
            if (!v.HasValue) return;
            WriteTag(field, WireType.Fixed32);
            WriteFixed32(FloatToBits(v.Value));
        }

        public void WriteOptionalUInt32(int field, uint? v)
        {
            if (!v.HasValue) return;
            WriteTag(field, WireType.Varint);
            WriteVarint(v.Value);
        }

        public void WriteString(int field, string v)
        {
            if (string.IsNullOrEmpty(v)) return;
            byte[] bytes = Encoding.UTF8.GetBytes(v);
            WriteTag(field, WireType.LengthDelimited);
            WriteVarint((ulong)bytes.Length);
            WriteRawBytes(bytes, 0, bytes.Length);
        }

        /// <summary>A sub-message; null is absent. An empty message is still written (it is present).</summary>
        public void WriteMessage(int field, IProtoMessage m)
        {
            if (m == null) return;
            var sub = new ProtoWriter();
            m.WriteTo(sub);
            WriteTag(field, WireType.LengthDelimited);
            WriteVarint((ulong)sub.len);
            WriteRawBytes(sub.buf, 0, sub.len);
        }

        public void WritePackedUInt32(int field, List<uint> values)
        {
            if (values == null || values.Count == 0) return;
            var sub = new ProtoWriter(values.Count * 2);
            foreach (uint v in values) sub.WriteVarint(v);
            WriteLengthDelimited(field, sub);
        }

        public void WritePackedUInt64(int field, List<ulong> values)
        {
            if (values == null || values.Count == 0) return;
            var sub = new ProtoWriter(values.Count * 2);
            foreach (ulong v in values) sub.WriteVarint(v);
            WriteLengthDelimited(field, sub);
        }

        public void WritePackedSInt32(int field, List<int> values)
        {
            if (values == null || values.Count == 0) return;
            var sub = new ProtoWriter(values.Count * 2);
            foreach (int v in values) sub.WriteVarint(EncodeSInt32(v));
            WriteLengthDelimited(field, sub);
        }

        public void WritePackedFloat(int field, List<float> values)
        {
            if (values == null || values.Count == 0) return;
            WriteTag(field, WireType.LengthDelimited);
            WriteVarint((ulong)values.Count * 4);
            foreach (float v in values) WriteFixed32(FloatToBits(v));
        }

        void WriteLengthDelimited(int field, ProtoWriter sub)
        {
            WriteTag(field, WireType.LengthDelimited);
            WriteVarint((ulong)sub.len);
            WriteRawBytes(sub.buf, 0, sub.len);
        }
    }
}
