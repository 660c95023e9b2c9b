// Messages.cs — the hand-written side of the crowd.v1 messages. The messages and
// enums themselves (fields, WriteTo, MergeFrom) are generated from
// proto/crowd.proto into Messages.g.cs by Generator~/crowd_csharp.py; this file
// adds what a .proto cannot say: the protocol version a Hello starts with,
// convenience constructors, conversions to vectors, and the encode/decode entry points.
using Crowd.Client;
#if UNITY_5_3_OR_NEWER
using Vector2 = UnityEngine.Vector2;
#else
using Vector2 = Crowd.Client.CrowdVector2;
#endif

namespace Crowd.V1
{
    /// <summary>The protocol version this client speaks (proto/crowd.proto's header comment).</summary>
    public static class Protocol
    {
        public const uint Major = 1;
        /// <summary>Minor 1: SteerMode, agent events, paths and resume keys. Minor 2: worlds.</summary>
        public const uint Minor = 2;
    }

    /// <summary>Encode/decode helpers shared by every message.</summary>
    public static class ProtoMessage
    {
        public static byte[] ToByteArray(IProtoMessage m)
        {
            var w = new ProtoWriter();
            m.WriteTo(w);
            return w.ToArray();
        }

        public static T Parse<T>(byte[] data, int offset, int count) where T : IProtoMessage, new()
        {
            var msg = new T();
            msg.MergeFrom(new ProtoReader(data, offset, count));
            return msg;
        }

        public static T Parse<T>(byte[] data) where T : IProtoMessage, new()
        {
            return Parse<T>(data, 0, data.Length);
        }
    }

    public sealed partial class Vec2
    {
        public Vec2() { }
        public Vec2(float x, float y) { X = x; Y = y; }
        public Vec2(Vector2 v) { X = v.x; Y = v.y; }

        /// <summary>UnityEngine.Vector2 in Unity (CrowdVector2 elsewhere); an absent Vec2 (null) is the origin.</summary>
        public static implicit operator Vector2(Vec2 v) { return v == null ? new Vector2(0f, 0f) : new Vector2(v.X, v.Y); }
        public static implicit operator Vec2(Vector2 v) { return new Vec2(v.x, v.y); }
    }

    public sealed partial class Rect
    {
        public Rect() { }
        public Rect(float minX, float minY, float maxX, float maxY) { MinX = minX; MinY = minY; MaxX = maxX; MaxY = maxY; }
    }

    public sealed partial class Hello
    {
        /// <summary>A Hello says this client's protocol version unless told otherwise.</summary>
        public Hello()
        {
            ProtocolMajor = Protocol.Major;
            ProtocolMinor = Protocol.Minor;
        }
    }

    public sealed partial class Error
    {
        public override string ToString()
        {
            return "Error " + Code + " (request " + RequestId + ", index " + Index + "): " + Message;
        }
    }
}
