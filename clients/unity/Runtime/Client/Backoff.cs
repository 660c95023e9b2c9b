// Backoff.cs — reconnect delays: exponential from an initial delay up to a cap,
// with jitter so many clients cut off together do not return together.
using System;

namespace Crowd.Client
{
    public sealed class Backoff
    {
        readonly double initialSeconds;
        readonly double maxSeconds;
        readonly Random random;

        public Backoff(double initialSeconds, double maxSeconds, Random random = null)
        {
            if (initialSeconds <= 0 || maxSeconds < initialSeconds) throw new ArgumentOutOfRangeException("maxSeconds");
            this.initialSeconds = initialSeconds;
            this.maxSeconds = maxSeconds;
            this.random = random ?? new Random();
        }

        /// <summary>Failed attempts since the last Reset.</summary>
        public int Attempt { get; private set; }

        /// <summary>The delay before the next attempt: initial * 2^attempt capped at max, times a
        /// jitter factor in [0.5, 1).</summary>
        public double NextDelaySeconds()
        {
            double d = initialSeconds * Math.Pow(2, Math.Min(Attempt, 30));
            if (d > maxSeconds) d = maxSeconds;
            Attempt++;
            return d * (0.5 + 0.5 * random.NextDouble());
        }

        /// <summary>After a successful session (Welcome received).</summary>
        public void Reset() { Attempt = 0; }
    }
}
