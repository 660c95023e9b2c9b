// BackoffTests.cs — reconnect delays double from the initial delay up to the
// cap, carry jitter in [0.5, 1) of the nominal value, and restart after Reset.
using System;
using Crowd.Client;
using NUnit.Framework;

namespace Crowd.Tests
{
    [TestFixture]
    public class BackoffTests
    {
        [Test]
        public void DoublesUpToTheCapWithJitter()
        {
            var b = new Backoff(0.25, 4, new Random(7));
            double[] nominal = { 0.25, 0.5, 1, 2, 4, 4, 4 };
            foreach (double n in nominal)
            {
                double d = b.NextDelaySeconds();
                Assert.IsTrue(d >= 0.5 * n && d < n, "delay " + d + " for nominal " + n);
            }
            Assert.AreEqual(7, b.Attempt);
            b.Reset();
            Assert.IsTrue(b.NextDelaySeconds() < 0.25);
        }

        [Test]
        public void ManyAttemptsDoNotOverflow()
        {
            var b = new Backoff(1, 10, new Random(1));
            for (int i = 0; i < 5000; i++) b.NextDelaySeconds();
            double d = b.NextDelaySeconds();
            Assert.IsTrue(d >= 5 && d < 10);
        }
    }
}
