// NUnitShim.cs — the few NUnit attributes and asserts the package's Tests/ use,
// so the same test files run in Unity's Test Runner (real NUnit) and here under
// Mono, where tests/unity/harness finds [Test] methods by reflection.
using System;

namespace NUnit.Framework
{
    [AttributeUsage(AttributeTargets.Class)] public sealed class TestFixtureAttribute : Attribute { }
    [AttributeUsage(AttributeTargets.Method)] public sealed class TestAttribute : Attribute { }
    [AttributeUsage(AttributeTargets.Method)] public sealed class TimeoutAttribute : Attribute { public TimeoutAttribute(int ms) { } }

    public delegate void TestDelegate();

    public sealed class AssertionException : Exception
    {
        public AssertionException(string message) : base(message) { }
    }

    public static class Assert
    {
        static string With(string what, string message) { return message == null ? what : what + ": " + message; }

        static bool IsNumeric(object o)
        {
            return o is sbyte || o is byte || o is short || o is ushort || o is int || o is uint || o is long ||
                   o is ulong || o is float || o is double || o is decimal;
        }

        public static void AreEqual(object expected, object actual, string message = null)
        {
            bool equal;
            if (IsNumeric(expected) && IsNumeric(actual))
            {
                if (expected is float || expected is double || actual is float || actual is double)
                    equal = Convert.ToDouble(expected) == Convert.ToDouble(actual);
                else
                    equal = Convert.ToDecimal(expected) == Convert.ToDecimal(actual);
            }
            else equal = Equals(expected, actual);
            if (!equal) throw new AssertionException(With("expected <" + expected + "> but was <" + actual + ">", message));
        }

        public static void AreEqual(double expected, double actual, double delta, string message = null)
        {
            if (!(Math.Abs(expected - actual) <= delta))
                throw new AssertionException(With("expected " + expected + " +/- " + delta + " but was " + actual, message));
        }

        public static void AreNotEqual(object notExpected, object actual, string message = null)
        {
            if (Equals(notExpected, actual)) throw new AssertionException(With("did not expect <" + actual + ">", message));
        }

        public static void IsTrue(bool condition, string message = null)
        {
            if (!condition) throw new AssertionException(With("expected true", message));
        }

        public static void IsFalse(bool condition, string message = null)
        {
            if (condition) throw new AssertionException(With("expected false", message));
        }

        public static void IsNull(object o, string message = null)
        {
            if (o != null) throw new AssertionException(With("expected null but was <" + o + ">", message));
        }

        public static void IsNotNull(object o, string message = null)
        {
            if (o == null) throw new AssertionException(With("expected not null", message));
        }

        public static void Fail(string message) { throw new AssertionException(message); }

        public static T Throws<T>(TestDelegate code, string message = null) where T : Exception
        {
            try
            {
                code();
            }
            catch (Exception e)
            {
                if (e.GetType() == typeof(T)) return (T)e;
                throw new AssertionException(With("expected " + typeof(T).Name + " but got " + e.GetType().Name + ": " + e.Message, message));
            }
            throw new AssertionException(With("expected " + typeof(T).Name + " but nothing was thrown", message));
        }
    }
}
