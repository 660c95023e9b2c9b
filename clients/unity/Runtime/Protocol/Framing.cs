// Framing.cs — crowd.v1 over TCP: every message is preceded by its length as a
// protobuf varint (the "delimited" convention). FrameSplitter cuts a byte stream
// into frames whatever the reads' split or coalescing (mirrors proto/wire's C splitter).
using System;

namespace Crowd.V1
{
    public enum FrameResult
    {
        NeedMore = 0,   // no whole frame buffered yet
        Ready = 1,      // one frame returned
        TooLarge = -1,  // the length prefix exceeds the limit: the stream is unusable
        BadPrefix = -2, // the varint is longer than 10 bytes or overflows
    }

    public sealed class FrameSplitter
    {
        byte[] buf = new byte[4096];
        int start; // first unread byte
        int len;   // end of buffered bytes
        FrameResult error;

        public FrameSplitter(int maxFrame)
        {
            if (maxFrame <= 0) throw new ArgumentOutOfRangeException("maxFrame");
            MaxFrame = maxFrame;
        }

        public int MaxFrame { get; private set; }

        /// <summary>Bytes buffered but not yet returned as frames.</summary>
        public int Pending { get { return len - start; } }

        public void Reset()
        {
            start = len = 0;
            error = FrameResult.NeedMore;
        }

        /// <summary>Appends received bytes. Frames returned before stay valid only until this call.</summary>
        public void Push(byte[] data, int offset, int count)
        {
            if (start > 0)
            {
                Buffer.BlockCopy(buf, start, buf, 0, len - start);
                len -= start;
                start = 0;
            }
            if (len + count > buf.Length)
            {
                int cap = buf.Length;
                while (cap < len + count) cap *= 2;
                Array.Resize(ref buf, cap);
            }
            Buffer.BlockCopy(data, offset, buf, len, count);
            len += count;
        }

        /// <summary>The next whole frame as (buffer, offset, count). Once an error is returned it is returned again.</summary>
        public FrameResult Next(out byte[] frame, out int offset, out int count)
        {
            frame = buf;
            offset = count = 0;
            if (error != FrameResult.NeedMore) return error;
            ulong body = 0;
            int avail = len - start;
            int i = 0;
            for (;; i++)
            {
                if (i >= 10) return error = FrameResult.BadPrefix;
                if (i >= avail) return FrameResult.NeedMore;
                byte b = buf[start + i];
                if (i == 9 && b > 1) return error = FrameResult.BadPrefix;
                body |= (ulong)(b & 0x7f) << (7 * i);
                if ((b & 0x80) == 0) break;
            }
            int prefix = i + 1;
            if (body > (ulong)MaxFrame) return error = FrameResult.TooLarge;
            if ((ulong)(avail - prefix) < body) return FrameResult.NeedMore;
            offset = start + prefix;
            count = (int)body;
            start += prefix + count;
            return FrameResult.Ready;
        }

        /// <summary>One message preceded by its varint length, ready for a socket.</summary>
        public static byte[] Delimit(IProtoMessage m)
        {
            var body = new ProtoWriter();
            m.WriteTo(body);
            var w = new ProtoWriter(body.Length + 10);
            w.WriteVarint((ulong)body.Length);
            byte[] b = body.ToArray();
            w.WriteRawBytes(b, 0, b.Length);
            return w.ToArray();
        }
    }
}
