// Vectors.cs — positions and velocities as 2-D vectors beside the float fields.
// In Unity they are UnityEngine.Vector2; elsewhere (a .NET/Mono program, this
// repository's tests) CrowdVector2, a small struct with the same members the
// client uses (x, y, arithmetic, magnitude), so code written against .x/.y reads
// the same in both. The server's plane (x, y) is the crowd's; the samples put it
// on Unity's ground plane (x, z).
using System;
using Crowd.V1;
#if UNITY_5_3_OR_NEWER
using Vector2 = UnityEngine.Vector2;
#else
using Vector2 = Crowd.Client.CrowdVector2;
#endif

namespace Crowd.Client
{
#if !UNITY_5_3_OR_NEWER
    /// <summary>A 2-D vector outside Unity (in Unity the client's vectors are UnityEngine.Vector2).</summary>
    [Serializable]
    public struct CrowdVector2 : IEquatable<CrowdVector2>
    {
        public float x, y;

        public CrowdVector2(float x, float y)
        {
            this.x = x;
            this.y = y;
        }

        public static CrowdVector2 zero { get { return new CrowdVector2(0f, 0f); } }
        public float sqrMagnitude { get { return x * x + y * y; } }
        public float magnitude { get { return (float)Math.Sqrt(x * x + y * y); } }

        /// <summary>This vector scaled to length 1 (zero stays zero).</summary>
        public CrowdVector2 normalized
        {
            get
            {
                float m = magnitude;
                return m > 1e-5f ? new CrowdVector2(x / m, y / m) : zero;
            }
        }

        public static float Dot(CrowdVector2 a, CrowdVector2 b) { return a.x * b.x + a.y * b.y; }
        public static float Distance(CrowdVector2 a, CrowdVector2 b) { return (a - b).magnitude; }

        /// <summary>a + (b - a) * t, t clamped to [0, 1].</summary>
        public static CrowdVector2 Lerp(CrowdVector2 a, CrowdVector2 b, float t)
        {
            t = t < 0f ? 0f : t > 1f ? 1f : t;
            return new CrowdVector2(a.x + (b.x - a.x) * t, a.y + (b.y - a.y) * t);
        }

        public static CrowdVector2 operator +(CrowdVector2 a, CrowdVector2 b) { return new CrowdVector2(a.x + b.x, a.y + b.y); }
        public static CrowdVector2 operator -(CrowdVector2 a, CrowdVector2 b) { return new CrowdVector2(a.x - b.x, a.y - b.y); }
        public static CrowdVector2 operator -(CrowdVector2 a) { return new CrowdVector2(-a.x, -a.y); }
        public static CrowdVector2 operator *(CrowdVector2 a, float d) { return new CrowdVector2(a.x * d, a.y * d); }
        public static CrowdVector2 operator *(float d, CrowdVector2 a) { return new CrowdVector2(a.x * d, a.y * d); }
        public static CrowdVector2 operator /(CrowdVector2 a, float d) { return new CrowdVector2(a.x / d, a.y / d); }
        /// <summary>Exact comparison (Unity's Vector2 == is approximate; use Distance for tolerance).</summary>
        public static bool operator ==(CrowdVector2 a, CrowdVector2 b) { return a.x == b.x && a.y == b.y; }
        public static bool operator !=(CrowdVector2 a, CrowdVector2 b) { return !(a == b); }

        public bool Equals(CrowdVector2 o) { return x.Equals(o.x) && y.Equals(o.y); }
        public override bool Equals(object o) { return o is CrowdVector2 && Equals((CrowdVector2)o); }
        public override int GetHashCode() { return x.GetHashCode() ^ (y.GetHashCode() << 2); }

        public override string ToString()
        {
            return "(" + x.ToString("F2", System.Globalization.CultureInfo.InvariantCulture) + ", " +
                   y.ToString("F2", System.Globalization.CultureInfo.InvariantCulture) + ")";
        }
    }
#endif

    /// <summary>Conversions between the wire's Vec2 (a message class, null when absent) and vectors.</summary>
    public static class CrowdVectors
    {
        /// <summary>The vector of a Vec2; an absent one (null) is the origin, as proto3 reads it.</summary>
        public static Vector2 ToVector2(this Vec2 v) { return v == null ? new Vector2(0f, 0f) : new Vector2(v.X, v.Y); }
        public static Vec2 ToVec2(this Vector2 v) { return new Vec2(v.x, v.y); }
    }
}
