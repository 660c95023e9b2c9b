// HeldPool.cs — the runtime's thread pool held across a reconnect, in the fake-server
// scenarios (TCP and WebSocket).
using System;
using System.Threading;

namespace Crowd.Harness
{
    // The thread pool held until Dispose, so work queued to it waits, as on a machine so loaded
    // that the pool runs late: no more workers allowed than its minimum, and more blocking items
    // queued than it can ever have had workers. A pool that has grown past its minimum keeps those
    // workers: each takes one item and blocks, and work queued later waits behind the rest.
    public sealed class HeldPool : IDisposable
    {
        readonly ManualResetEvent release = new ManualResetEvent(false);
        readonly int maxWorkers, maxIo;
        bool released;

        public HeldPool()
        {
            int minWorkers, minIo;
            ThreadPool.GetMinThreads(out minWorkers, out minIo);
            ThreadPool.GetMaxThreads(out maxWorkers, out maxIo);
            if (!ThreadPool.SetMaxThreads(minWorkers, minIo)) throw new InvalidOperationException("ThreadPool.SetMaxThreads refused");
            var started = new CountdownEvent(minWorkers);
            int running = 0;
            for (int i = 0; i <= maxWorkers; i++)
                ThreadPool.QueueUserWorkItem(_ =>
                {
                    if (Interlocked.Increment(ref running) <= minWorkers) started.Signal();
                    release.WaitOne();
                });
            started.Wait();
        }

        public void Dispose()
        {
            if (released) return;
            released = true;
            release.Set();
            ThreadPool.SetMaxThreads(maxWorkers, maxIo);
        }
    }
}
