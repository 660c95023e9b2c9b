// VectorTests.cs — the vector helpers: CrowdAgent.Position/Velocity, Vec2 to and
// from a vector (an absent Vec2 is the origin), InterpolationBuffer positions as
// vectors, and (outside Unity) CrowdVector2's arithmetic. In Unity the vector
// type is UnityEngine.Vector2; these tests read the same there.
using System.Collections.Generic;
using Crowd.Client;
using Crowd.V1;
using NUnit.Framework;
#if UNITY_5_3_OR_NEWER
using Vector2 = UnityEngine.Vector2;
#else
using Vector2 = Crowd.Client.CrowdVector2;
#endif

namespace Crowd.Tests
{
    [TestFixture]
    public class VectorTests
    {
        [Test]
        public void AgentPositionAndVelocityAreItsFloats()
        {
            var a = new CrowdAgent { X = 1.25f, Y = -3.5f, Vx = 0.5f, Vy = 2f };
            Assert.AreEqual(1.25f, a.Position.x);
            Assert.AreEqual(-3.5f, a.Position.y);
            Assert.AreEqual(0.5f, a.Velocity.x);
            Assert.AreEqual(2f, a.Velocity.y);
        }

        [Test]
        public void Vec2ConvertsBothWays()
        {
            Vec2 w = new Vector2(1.5f, -2f);
            Assert.AreEqual(1.5f, w.X);
            Assert.AreEqual(-2f, w.Y);
            Vector2 back = w;
            Assert.AreEqual(1.5f, back.x);
            Assert.AreEqual(-2f, back.y);
            Vec2 absent = null;
            Vector2 origin = absent;
            Assert.AreEqual(0f, origin.x);
            Assert.AreEqual(0f, origin.y);
            Assert.AreEqual(0f, absent.ToVector2().x);
            Assert.AreEqual(7f, new Vector2(7f, 8f).ToVec2().X);
            Assert.AreEqual(8f, new Vec2(new Vector2(7f, 8f)).Y);
        }

        [Test]
        public void AgentSpecFromAVectorEncodesAsFromFloats()
        {
            var fromVector = new AgentSpec { Position = new Vector2(3f, 4f), Radius = 0.5f };
            var fromFloats = new AgentSpec { Position = new Vec2(3f, 4f), Radius = 0.5f };
            CollectionAssertEqual(ProtoMessage.ToByteArray(fromFloats), ProtoMessage.ToByteArray(fromVector));
        }

        [Test]
        public void InterpolatedPositionAsAVector()
        {
            var buffer = new InterpolationBuffer();
            buffer.Add(Snapshot(10, 0f, 0f));
            buffer.Add(Snapshot(20, 10f, 4f));
            Vector2 p;
            float x, y;
            Assert.IsTrue(buffer.TryGetPosition(1, 15.0, out p));
            Assert.IsTrue(buffer.TryGetPosition(1, 15.0, out x, out y));
            Assert.AreEqual(x, p.x);
            Assert.AreEqual(y, p.y);
            Assert.AreEqual(5f, p.x, 1e-5);
            Assert.AreEqual(2f, p.y, 1e-5);
            Assert.IsFalse(buffer.TryGetPosition(2, 15.0, out p), "an agent not in the buffer");
        }

#if !UNITY_5_3_OR_NEWER
        [Test]
        public void CrowdVector2Arithmetic()
        {
            var a = new CrowdVector2(3f, 4f);
            var b = new CrowdVector2(1f, -1f);
            Assert.AreEqual(5f, a.magnitude);
            Assert.AreEqual(25f, a.sqrMagnitude);
            Assert.IsTrue(a + b == new CrowdVector2(4f, 3f));
            Assert.IsTrue(a - b == new CrowdVector2(2f, 5f));
            Assert.IsTrue(a * 2f == new CrowdVector2(6f, 8f) && 2f * a == a * 2f);
            Assert.IsTrue(a / 2f == new CrowdVector2(1.5f, 2f));
            Assert.IsTrue(-a == new CrowdVector2(-3f, -4f));
            Assert.AreEqual(0.6f, a.normalized.x, 1e-6);
            Assert.IsTrue(CrowdVector2.zero.normalized == CrowdVector2.zero, "zero stays zero");
            Assert.AreEqual(-1f, CrowdVector2.Dot(a, b));
            Assert.AreEqual(5f, CrowdVector2.Distance(a, CrowdVector2.zero));
            Assert.IsTrue(CrowdVector2.Lerp(CrowdVector2.zero, a, 2f) == a, "t clamped to 1");
            Assert.IsTrue(CrowdVector2.Lerp(CrowdVector2.zero, a, 0.5f) == new CrowdVector2(1.5f, 2f));
            Assert.IsTrue(a.Equals(new CrowdVector2(3f, 4f)) && a != b);
            Assert.AreEqual("(3.00, 4.00)", a.ToString());
        }
#endif

        static WorldSnapshot Snapshot(ulong tick, float x, float y)
        {
            var agents = new[] { new CrowdAgent { Id = 1, X = x, Y = y, Radius = 0.5f } };
            return new WorldSnapshot(tick, 0, true, 1, 30, agents, null, false, null, 0);
        }

        static void CollectionAssertEqual(byte[] expected, byte[] actual)
        {
            Assert.AreEqual(expected.Length, actual.Length, "length");
            for (int i = 0; i < expected.Length; i++) Assert.AreEqual(expected[i], actual[i], "byte " + i);
        }
    }
}
