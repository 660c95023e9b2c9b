// ProtoWire.cs — the protobuf wire format by hand (varints, zigzag, fixed32/64,
// length-delimited), so the package needs no NuGet dependency. This is the
// runtime the generated codec (Messages.g.cs, from proto/crowd.proto by
// Generator~/crowd_csharp.py) calls, as nanopb's generated C calls pb_decode.c.
// Every read is bounds-checked: hostile bytes raise ProtoException.
using System;
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

        /// <summary>Throws unless the field last returned by NextField has this wire type.</summary>
        public void Expect(WireType wt)
        {
            if (lastWireType != wt)
                throw new ProtoException("field has wire type " + lastWireType + ", expected " + wt);
        }

        /// <summary>uint32; a value past 32 bits is malformed (nanopb, the server's decoder, refuses it too).</summary>
        public uint ReadUInt32() { Expect(WireType.Varint); return CheckUInt32(ReadVarint()); }

        public static uint CheckUInt32(ulong v)
        {
            if (v > uint.MaxValue) throw new ProtoException("uint32 out of range");
            return (uint)v;
        }

        public bool ReadBool() { Expect(WireType.Varint); return ReadVarint() != 0; }

        /// <summary>An enum value; unknown numbers are kept (proto3 open enums).</summary>
        public int ReadEnum() { Expect(WireType.Varint); return CheckInt32(ReadVarint()); }

        /// <summary>int32 and enums: negative values come sign-extended to 64 bits; past the int32 range is malformed.</summary>
        public static int CheckInt32(ulong raw)
        {
            long v = (long)raw;
            if (v < int.MinValue || v > int.MaxValue) throw new ProtoException("int32 out of range");
            return (int)v;
        }

        public string ReadString()
        {
            Expect(WireType.LengthDelimited);
            int n = ReadLength();
            string s = Encoding.UTF8.GetString(buf, pos, n);
            pos += n;
            return s;
        }

        public byte[] ReadBytes()
        {
            Expect(WireType.LengthDelimited);
            int n = ReadLength();
            var b = new byte[n];
            Buffer.BlockCopy(buf, pos, b, 0, n);
            pos += n;
            return b;
        }

        /// <summary>The elements of one occurrence of a repeated scalar field, as a reader to read them
        /// from until AtEnd: the packed body (proto3's default), or the single element that follows the
        /// tag (parsers must accept both). `element` is the wire type of one element.</summary>
        public ProtoReader ReadElements(WireType element)
        {
            if (lastWireType == WireType.LengthDelimited) return ReadSubReader();
            Expect(element);
            int start = pos;
            switch (element)
            {
                case WireType.Varint: ReadVarint(); break;
                case WireType.Fixed32: ReadFixed32(); break;
                case WireType.Fixed64: ReadFixed64(); break;
                default: throw new ProtoException("wire type " + element + " is not a scalar element");
            }
            return new ProtoReader(buf, start, pos - start, depth + 1);
        }

        /// <summary>A reader over the body of the current length-delimited field (a sub-message or a packed array).</summary>
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

        /// <summary>sint32: zigzag; a value outside the int32 range is malformed (as nanopb's decoder rules).</summary>
        public static int DecodeSInt32(ulong raw)
        {
            long v = (long)(raw >> 1) ^ -(long)(raw & 1);
            if (v < int.MinValue || v > int.MaxValue) throw new ProtoException("sint32 out of range");
            return (int)v;
        }

        public static long DecodeSInt64(ulong raw) { return (long)(raw >> 1) ^ -(long)(raw & 1); }

        public static double BitsToDouble(ulong bits) { return BitConverter.Int64BitsToDouble((long)bits); }

        public static float BitsToFloat(uint bits)
        {
            return BitConverter.ToSingle(BitConverter.GetBytes(bits), 0);
        }
    }

    /// <summary>Writes protobuf fields into a growable buffer. Which fields are present (proto3:
    /// scalars at their default are not written, repeated scalars are packed) is the generated
    /// code's business; this writes what it is told.</summary>
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

        public static ulong EncodeSInt64(long v) { return (ulong)((v << 1) ^ (v >> 63)); }

        public static ulong DoubleToBits(double d) { return (ulong)BitConverter.DoubleToInt64Bits(d); }

        public static uint FloatToBits(float f)
        {
            return BitConverter.ToUInt32(BitConverter.GetBytes(f), 0);
        }

        /// <summary>A string field, written even when empty (the caller decides presence).</summary>
        public void WriteString(int field, string v)
        {
            byte[] bytes = Encoding.UTF8.GetBytes(v);
            WriteTag(field, WireType.LengthDelimited);
            WriteVarint((ulong)bytes.Length);
            WriteRawBytes(bytes, 0, bytes.Length);
        }

        public void WriteBytes(int field, byte[] v)
        {
            WriteTag(field, WireType.LengthDelimited);
            WriteVarint((ulong)v.Length);
            WriteRawBytes(v, 0, v.Length);
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

        /// <summary>The bytes of another writer as one length-delimited field (a packed array).</summary>
        public void WriteLengthDelimited(int field, ProtoWriter sub)
        {
            WriteTag(field, WireType.LengthDelimited);
            WriteVarint((ulong)sub.len);
            WriteRawBytes(sub.buf, 0, sub.len);
        }
    }
}
