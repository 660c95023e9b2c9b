// CrowdClient.Async.cs — Task-returning forms of the client's requests, beside the
// callbacks: each Task completes when Poll() dispatches the request's answer (its
// Ack, Paths or Pong), or fails with a CrowdException carrying the Error's code
// (ErrorCode.None: not connected, or the connection was lost before the answer).
// Poll() must keep running (Unity: Update) for them to complete; awaited in a
// MonoBehaviour, the continuation comes back on the main thread.
using System;
using System.Collections.Generic;
using System.Threading.Tasks;
using Crowd.V1;
#if UNITY_5_3_OR_NEWER
using Vector2 = UnityEngine.Vector2;
#else
using Vector2 = Crowd.Client.CrowdVector2;
#endif

namespace Crowd.Client
{
    /// <summary>A request the server refused (Code, Index and the server's Message), or one that never reached it
    /// or lost its connection (Code None).</summary>
    public sealed class CrowdException : Exception
    {
        public CrowdException(Error error)
            : base("crowd: " + error.Code + (error.RequestId != 0 ? " (request " + error.RequestId + (error.Index != 0 ? ", index " + error.Index : "") + ")" : "") +
                   (string.IsNullOrEmpty(error.Message) ? "" : ": " + error.Message))
        {
            Error = error;
        }

        /// <summary>The Error as received (Code None: made by the client, not the server).</summary>
        public Error Error { get; private set; }
        public ErrorCode Code { get { return Error.Code; } }
        public uint RequestId { get { return Error.RequestId; } }
        /// <summary>Which item of a batch was refused.</summary>
        public uint Index { get { return Error.Index; } }
    }

    public sealed partial class CrowdClient
    {
        /// <summary>Connects (as Connect) and completes with the first Welcome. keepTrying false: the first
        /// failure — refused, closed, not a crowd server, timed out, the Hello refused — fails the Task with a
        /// CrowdException (the Hello's Error, or Code None and what the connection met) and stops the client;
        /// true: it completes at the first Welcome however many attempts that takes, and fails only when the
        /// client gives up (a bad token, another protocol major, AutoReconnect off). Already Ready: the current
        /// Welcome at once.</summary>
        public Task<Welcome> ConnectAsync(bool keepTrying = false)
        {
            var tcs = new TaskCompletionSource<Welcome>();
            if (State == ConnectionState.Ready && Welcome != null && (thread != null && thread.IsAlive || pumping))
            {
                tcs.SetResult(Welcome);
                return tcs.Task;
            }
            Error refusal = null;
            Action<Welcome> onWelcome = null;
            Action<Error> onRefused = null;
            Action<ConnectionState, string> onState = null;
            Action detach = () =>
            {
                Welcomed -= onWelcome;
                HelloRefused -= onRefused;
                StateChanged -= onState;
            };
            onWelcome = w =>
            {
                detach();
                tcs.TrySetResult(w);
            };
            onRefused = e => refusal = e;
            onState = (st, why) =>
            {
                bool failed = st == ConnectionState.Disconnected || (!keepTrying && st == ConnectionState.WaitingToReconnect);
                if (!failed) return;
                detach();
                if (st != ConnectionState.Disconnected) Disconnect();
                tcs.TrySetException(new CrowdException(refusal ?? new Error { Code = ErrorCode.None, Message = why ?? "disconnected" }));
            };
            Welcomed += onWelcome;
            HelloRefused += onRefused;
            StateChanged += onState;
            Connect();
            return tcs.Task;
        }

        /// <summary>Any request; completes with its Ack.</summary>
        public Task<Ack> SendAsync(ClientMessage msg)
        {
            var tcs = new TaskCompletionSource<Ack>();
            Send(msg, a => tcs.TrySetResult(a), e => tcs.TrySetException(new CrowdException(e)));
            return tcs.Task;
        }

        // remembered: Subscribe and friends return 0 and answer nothing when not connected (the request
        // is only remembered, and goes out with the Hello): the Task then completes at once with null.
        Task<Ack> AckTask(Func<Action<Ack>, Action<Error>, uint> send, bool remembered = false)
        {
            var tcs = new TaskCompletionSource<Ack>();
            uint id = send(a => tcs.TrySetResult(a), e => tcs.TrySetException(new CrowdException(e)));
            if (remembered && id == 0) tcs.TrySetResult(null);
            return tcs.Task;
        }

        /// <summary>Spawns agents; the Ack's Ids are theirs, in order.</summary>
        public Task<Ack> SpawnAsync(IList<AgentSpec> agents)
        {
            return AckTask((a, e) => Spawn(agents, a, e));
        }

        public Task<Ack> SetTargetAsync(IList<uint> ids, float x, float y, SteerMode steer = SteerMode.Default)
        {
            return AckTask((a, e) => SetTarget(ids, x, y, a, e, steer));
        }

        public Task<Ack> SetTargetAsync(IList<uint> ids, Vector2 target, SteerMode steer = SteerMode.Default)
        {
            return AckTask((a, e) => SetTarget(ids, target, a, e, steer));
        }

        public Task<Ack> SetTargetsAsync(IList<uint> ids, IList<float> x, IList<float> y, SteerMode steer = SteerMode.Default)
        {
            return AckTask((a, e) => SetTargets(ids, x, y, a, e, steer));
        }

        public Task<Ack> SetTargetsAsync(IList<uint> ids, IList<Vector2> targets, SteerMode steer = SteerMode.Default)
        {
            return AckTask((a, e) => SetTargets(ids, targets, a, e, steer));
        }

        public Task<Ack> SetVelocitiesAsync(IList<uint> ids, IList<float> vx, IList<float> vy)
        {
            return AckTask((a, e) => SetVelocities(ids, vx, vy, a, e));
        }

        public Task<Ack> SetVelocitiesAsync(IList<uint> ids, IList<Vector2> velocities)
        {
            return AckTask((a, e) => SetVelocities(ids, velocities, a, e));
        }

        public Task<Ack> RemoveAgentsAsync(IList<uint> ids)
        {
            return AckTask((a, e) => RemoveAgents(ids, a, e));
        }

        /// <summary>Admin only; the Ack's Ids hold the obstacle id.</summary>
        public Task<Ack> AddObstacleAsync(IList<float> x, IList<float> y)
        {
            return AckTask((a, e) => AddObstacle(x, y, a, e));
        }

        public Task<Ack> AddObstacleAsync(IList<Vector2> vertices)
        {
            return AckTask((a, e) => AddObstacle(vertices, a, e));
        }

        public Task<Ack> RemoveObstacleAsync(uint id)
        {
            return AckTask((a, e) => RemoveObstacle(id, a, e));
        }

        /// <summary>As Subscribe; when not connected it completes at once with null (the subscription goes out
        /// with the Hello).</summary>
        public Task<Ack> SubscribeAsync(Rect area = null, uint divisor = 0)
        {
            return AckTask((a, e) => Subscribe(area, divisor, a, e), true);
        }

        public Task<Ack> UnsubscribeAsync()
        {
            return AckTask((a, e) => Unsubscribe(a, e), true);
        }

        public Task<Ack> SubscribeEventsAsync(bool allAgents = false)
        {
            return AckTask((a, e) => SubscribeEvents(allAgents, a, e), true);
        }

        public Task<Ack> UnsubscribeEventsAsync()
        {
            return AckTask((a, e) => UnsubscribeEvents(a, e), true);
        }

        /// <summary>Minor 1: the agents' current paths, in one Paths.</summary>
        public Task<Paths> GetPathsAsync(IList<uint> ids)
        {
            var tcs = new TaskCompletionSource<Paths>();
            GetPaths(ids, p => tcs.TrySetResult(p), e => tcs.TrySetException(new CrowdException(e)));
            return tcs.Task;
        }

        readonly Dictionary<ulong, PingWaiter> pingWaiters = new Dictionary<ulong, PingWaiter>();

        sealed class PingWaiter
        {
            public uint RequestId;
            public TaskCompletionSource<Pong> Task;
        }

        /// <summary>A Ping; completes with its Pong (LastRoundTripMs is updated first).</summary>
        public Task<Pong> PingAsync()
        {
            var w = new PingWaiter { Task = new TaskCompletionSource<Pong>() };
            ulong us = (ulong)(clock.Elapsed.TotalMilliseconds * 1000.0);
            while (pingWaiters.ContainsKey(us)) us++; // the Pong is matched by the time it echoes
            pingWaiters[us] = w;
            w.RequestId = Send(new ClientMessage { Ping = new Ping { ClientTimeUs = us } }, null, e =>
            {
                pingWaiters.Remove(us);
                w.Task.TrySetException(new CrowdException(e));
            });
            return w.Task.Task;
        }

        // Poll, on a Pong: the PingAsync that sent it completes (a Ping has no Ack: its pending entry goes too).
        void CompletePing(Pong pong)
        {
            PingWaiter w;
            if (!pingWaiters.TryGetValue(pong.ClientTimeUs, out w)) return;
            pingWaiters.Remove(pong.ClientTimeUs);
            pending.Remove(w.RequestId);
            w.Task.TrySetResult(pong);
        }
    }
}
