// CrowdClient.cs — a crowd.v1 client over TCP or WebSocket for Unity (or any
// .NET/Mono program). A background thread connects, says Hello, reads and decodes
// frames, applies snapshots and reconnects with back-off (presenting the last
// Welcome's resume key, so the server can give this client its identity and
// agents back); everything it learns waits in a queue until the main thread calls
// Poll() (Unity's API is main-thread only). In WebGL builds (no threads) the same
// steps run inside Poll() over the browser's WebSocket (Transport.cs). Given
// several addresses (a primary and its standbys) it goes through them in turn:
// the next after one that failed or was lost, a back-off wait before each pass
// over the list and none inside it.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Threading;
using Crowd.V1;
#if UNITY_5_3_OR_NEWER
using Vector2 = UnityEngine.Vector2;
#else
using Vector2 = Crowd.Client.CrowdVector2;
#endif

namespace Crowd.Client
{
    public enum ConnectionState
    {
        Disconnected,       // not started, stopped by Disconnect, or given up (bad token, wrong version)
        Connecting,         // TCP or WebSocket connect in progress
        Connected,          // connection up, Hello sent, Welcome not yet received
        Ready,              // Welcome received: commands and snapshots flow
        WaitingToReconnect, // lost the connection; trying again after a back-off delay
    }

    public sealed class CrowdClientOptions
    {
        public string Token = "";
        public string ClientName = "unity";
        /// <summary>Hello.keep_agents_on_disconnect: this client's agents stay after it goes.</summary>
        public bool KeepAgentsOnDisconnect;
        public bool AutoReconnect = true;
        /// <summary>The wait before the first pass over the addresses after a loss (and before the
        /// second pass of a first Connect), doubled for each pass after it up to ReconnectMaxSeconds, times a
        /// jitter in [0.5, 1). Inside a pass the next address is tried at once.</summary>
        public double ReconnectInitialSeconds = 0.25;
        public double ReconnectMaxSeconds = 10;
        /// <summary>Failed attempts (one address each) since the last Welcome, or since Connect, before the
        /// client gives up: State Disconnected, GaveUp true, the reason "gave up after N attempts: …".
        /// 0 (the default): no limit.</summary>
        public int ReconnectMaxAttempts;
        /// <summary>A reconnect's Welcome that gives a new identity although a resume key was presented counts
        /// as a failed attempt, and the next address is tried: for address lists holding a standby that
        /// answers before it is promoted. Default false.</summary>
        public bool RequireResumed;
        public int ConnectTimeoutMs = 5000;
        /// <summary>&gt; 0: a connection that brings nothing for this long (the Welcome included) counts as lost, and
        /// the client reconnects: a server whose machine vanished sends no FIN. Keep it above the quietest gap
        /// (a subscriber gets a snapshot every divisor ticks; others should Ping). Default 0: off.</summary>
        public int IdleTimeoutMs;
        /// <summary>A send blocked this long (server not reading) drops the connection.</summary>
        public int SendTimeoutMs = 5000;
        /// <summary>Largest frame accepted from the server; a larger prefix drops the connection.</summary>
        public int MaxFrameBytes = 64 << 20;
        /// <summary>Snapshots waiting for Poll beyond this are dropped, oldest first (each is a whole world state).</summary>
        public int MaxQueuedSnapshots = 64;
        /// <summary>A Welcome.resume_key from an earlier run (saved by the game, e.g. in PlayerPrefs),
        /// presented in the first Hello: the server gives that client's id, role and agents back.</summary>
        public string ResumeKey = "";
        /// <summary>After a reconnect, present the last Welcome's resume key (CrowdClient.ResumeKey);
        /// false: every reconnect is a new client (options.ResumeKey still goes in the first Hello).</summary>
        public bool Resume = true;
        /// <summary>Minor 2: the world to join at Hello ("" = the server's "default"); after a JoinWorld the
        /// client comes back to that one when it reconnects.</summary>
        public string World = "";
        /// <summary>Which wire: Auto follows the address (ws:// and wss:// are WebSocket, HOST:PORT is TCP
        /// except in WebGL builds); WebSocket turns HOST:PORT into ws://HOST:PORT/ws.</summary>
        public CrowdTransport Transport = CrowdTransport.Auto;
        /// <summary>Tests: run the WebGL build's polled path over this socket factory instead of the browser's.</summary>
        internal PolledSocketFactory PolledSockets;
    }

    /// <summary>What CrowdClient.Reconnected reports.</summary>
    public sealed class ReconnectInfo
    {
        /// <summary>The address that answered.</summary>
        public CrowdAddress Address;
        /// <summary>The server took the resume key: the same ClientId, and the agents it owned.</summary>
        public bool Resumed;
        public uint ClientId;
        /// <summary>Attempts since the connection was lost, this one included.</summary>
        public int Attempt;
    }

    public sealed partial class CrowdClient : IDisposable
    {
        readonly CrowdAddress[] addresses;
        volatile int addressIndex;  // the address in use, or tried next
        int attempts;               // connection thread: attempts that failed since the last Welcome (or Connect)
        bool welcomedSinceConnect;  // connection thread: the next Welcome is a reconnect's
        volatile bool gaveUp;
        readonly CrowdClientOptions options;
        readonly PolledSocketFactory polledSockets; // non-null: no thread, Poll drives the connection

        // Connection thread state.
        Thread thread;
        readonly ManualResetEvent stopEvent = new ManualResetEvent(false);
        volatile bool stopRequested;
        volatile bool fatal; // the server refused us for good (bad token, version)
        volatile ConnectionState state = ConnectionState.Disconnected;
        int generation; // connection number, bumps on every connect attempt
        readonly SnapshotDecoder decoder = new SnapshotDecoder();
        uint precision = 1, tickRateHz;

        // Sending: main thread and connection thread, under sendLock.
        readonly object sendLock = new object();
        Link link;         // null unless connected
        int linkGeneration;
        Link connecting;   // while connecting, so Disconnect can abort it
        Subscribe subscription;
        SubscribeEvents eventSubscription; // null: the server's default (own agents' events)
        int nextRequestId;
        volatile string resumeKey; // the last Welcome's key, else options.ResumeKey
        bool welcomedOnce;         // connection thread: a Welcome came (options.ResumeKey has had its turn)
        bool welcomedHere;         // connection thread: a Welcome came on the current connection
        bool refusedHere;          // connection thread: the current connection's Hello was refused
        uint helloRequestId;       // connection thread: the current Hello's id, to tell its Error apart
        string presentedKey;       // connection thread: the key that Hello presented

        // Events for the main thread.
        sealed class QueuedEvent
        {
            public Action Action;
            public bool IsSnapshot;
        }

        readonly object queueLock = new object();
        readonly LinkedList<QueuedEvent> queue = new LinkedList<QueuedEvent>();
        int queuedSnapshots;

        // Main thread only.
        sealed class PendingRequest
        {
            public int Generation;
            public Action<Ack> OnAck;
            public Action<Paths> OnPaths;
            public Action<WorldList> OnWorldList;
            public Action<Error> OnError;
        }

        readonly Dictionary<uint, PendingRequest> pending = new Dictionary<uint, PendingRequest>();
        static readonly Stopwatch clock = Stopwatch.StartNew();

        // Counters (any thread).
        long snapshotsReceived, snapshotsDropped, protocolFaults, connections, bytesReceived;

        /// <summary>A client of the server's TCP listener (options.Transport WebSocket: of its HTTP
        /// listener, ws://host:port/ws).</summary>
        public CrowdClient(string host, int port, CrowdClientOptions options = null)
            : this(AddressOf(host, port, options), options)
        {
        }

        /// <summary>A client of "ws://HOST:PORT/ws" (the server's --http listener; wss:// too),
        /// "tcp://HOST:PORT" or "HOST:PORT" (its --listen port; in WebGL builds, ws://HOST:PORT/ws); or of
        /// several of them, comma-separated ("10.0.0.1:7777,10.0.0.2:7777").</summary>
        public CrowdClient(string address, CrowdClientOptions options = null)
            : this(ParseList(address != null ? address.Split(',') : null, options), options)
        {
        }

        /// <summary>A client of several servers (a primary and its standbys), tried in turn.</summary>
        public CrowdClient(IList<string> addresses, CrowdClientOptions options = null)
            : this(ParseList(addresses, options), options)
        {
        }

        public CrowdClient(CrowdAddress address, CrowdClientOptions options = null)
            : this(new[] { address }, options)
        {
        }

        public CrowdClient(IList<CrowdAddress> addresses, CrowdClientOptions options = null)
        {
            if (addresses == null || addresses.Count == 0) throw new ArgumentNullException("addresses");
            this.options = options ?? new CrowdClientOptions();
            polledSockets = this.options.PolledSockets;
            this.addresses = new CrowdAddress[addresses.Count];
            for (int i = 0; i < addresses.Count; i++)
            {
                var address = addresses[i];
                if (address == null) throw new ArgumentNullException("address");
                if (this.options.Transport == CrowdTransport.Tcp && address.Transport != CrowdTransport.Tcp)
                    throw new ArgumentException("crowd: " + address + " is a WebSocket address but the transport asked for is Tcp");
                if (this.options.Transport == CrowdTransport.WebSocket && address.Transport != CrowdTransport.WebSocket)
                    throw new ArgumentException("crowd: " + address + " is a TCP address but the transport asked for is WebSocket");
#if UNITY_WEBGL && !UNITY_EDITOR
                if (address.Transport != CrowdTransport.WebSocket)
                    throw new NotSupportedException("crowd: a WebGL build has no TCP: connect to the server's WebSocket, ws://HOST:HTTP_PORT/ws");
#endif
                if (polledSockets != null && address.Transport != CrowdTransport.WebSocket)
                    throw new ArgumentException("crowd: the polled transport is WebSocket only");
                this.addresses[i] = address;
            }
#if UNITY_WEBGL && !UNITY_EDITOR
            if (polledSockets == null) polledSockets = BrowserWebSocket.Open;
#endif
            resumeKey = this.options.ResumeKey ?? "";
            LastRoundTripMs = double.NaN;
        }

        static CrowdAddress[] ParseList(IList<string> list, CrowdClientOptions options)
        {
            if (list == null || list.Count == 0) throw new ArgumentNullException("address");
            var t = options != null ? options.Transport : CrowdTransport.Auto;
            var parsed = new CrowdAddress[list.Count];
            for (int i = 0; i < list.Count; i++) parsed[i] = CrowdAddress.Parse(list[i], t);
            return parsed;
        }

        static CrowdAddress AddressOf(string host, int port, CrowdClientOptions options)
        {
            if (string.IsNullOrEmpty(host)) throw new ArgumentNullException("host");
            if (port <= 0 || port > 65535) throw new ArgumentOutOfRangeException("port");
            var t = options != null ? options.Transport : CrowdTransport.Auto;
            if (t == CrowdTransport.Auto && !CrowdAddress.WebGL) t = CrowdTransport.Tcp;
            return CrowdAddress.Parse((host.IndexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + port, t);
        }

        /// <summary>The server this client talks to (or tries now), and over which wire.</summary>
        public CrowdAddress Address { get { return addresses[addressIndex]; } }
        /// <summary>Every address given, in the order they are tried.</summary>
        public IList<CrowdAddress> Addresses { get { return Array.AsReadOnly(addresses); } }
        /// <summary>ReconnectMaxAttempts attempts failed: the client stopped (State Disconnected).</summary>
        public bool GaveUp { get { return gaveUp; } }

        // ------------------------------------------------------------ main-thread view

        /// <summary>The connection thread's state right now.</summary>
        public ConnectionState State { get { return state; } }
        /// <summary>The last Welcome dispatched by Poll (null before the first).</summary>
        public Welcome Welcome { get; private set; }
        /// <summary>The newest snapshot dispatched by Poll.</summary>
        public WorldSnapshot LatestSnapshot { get; private set; }
        /// <summary>Round-trip time of the last Ping, in milliseconds (NaN before the first Pong).</summary>
        public double LastRoundTripMs { get; private set; }
        /// <summary>The last Welcome's resume key (minor 1; before any Welcome, options.ResumeKey): the
        /// next Hello presents it (unless options.Resume is false). Save it to take this identity back
        /// after the game restarts. Welcome.Resumed says whether the server honoured the key.</summary>
        public string ResumeKey { get { return resumeKey; } }

        public long SnapshotsReceived { get { return Interlocked.Read(ref snapshotsReceived); } }
        /// <summary>Snapshots dropped because Poll was not called often enough.</summary>
        public long SnapshotsDropped { get { return Interlocked.Read(ref snapshotsDropped); } }
        /// <summary>Frames that did not decode or snapshots that did not apply (each followed by a resubscribe).</summary>
        public long ProtocolFaults { get { return Interlocked.Read(ref protocolFaults); } }
        /// <summary>Connections made so far (1 + reconnects).</summary>
        public long Connections { get { return Interlocked.Read(ref connections); } }
        public long BytesReceived { get { return Interlocked.Read(ref bytesReceived); } }

        public event Action<ConnectionState, string> StateChanged;
        public event Action<Welcome> Welcomed;
        public event Action<WorldSnapshot> SnapshotReceived;
        /// <summary>Every Ack, after the request's own callback.</summary>
        public event Action<Ack> AckReceived;
        /// <summary>Every Error: the server's, and Code None for a request lost with its connection.</summary>
        public event Action<Error> ErrorReceived;
        public event Action<Pong> PongReceived;
        /// <summary>Every AgentEvents message (minor 1): what happened to agents during one tick,
        /// after that tick's snapshot. The per-kind events below run first, one per event.</summary>
        public event Action<AgentEvents> AgentEventsReceived;
        /// <summary>An agent reached its target (or, if it was unreachable, the point chosen); Point is where it is.</summary>
        public event Action<AgentEvent> AgentArrived;
        /// <summary>No path to the agent's Target: it walks to Point, the nearest reachable point.</summary>
        public event Action<AgentEvent> AgentUnreachable;
        /// <summary>No progress toward the target for the server's configured time; Point is where it is.</summary>
        public event Action<AgentEvent> AgentStuck;
        /// <summary>Every Paths answer, after the GetPaths request's own callback.</summary>
        public event Action<Paths> PathsReceived;
        /// <summary>Bad input from the server that the client survived (what it did about it in the text).</summary>
        public event Action<string> ProtocolFault;
        /// <summary>The server refused this client's Hello (bad token, wrong version, full, …), before ErrorReceived.</summary>
        public event Action<Error> HelloRefused;
        /// <summary>A Welcome after a lost connection (after Welcomed): which address answered, and whether
        /// the identity and its agents came back.</summary>
        public event Action<ReconnectInfo> Reconnected;

        // ------------------------------------------------------------ lifecycle

        /// <summary>Starts connecting in the background (returns at once). Idempotent.</summary>
        public void Connect()
        {
            if (polledSockets != null)
            {
                if (pumping) return;
                stopRequested = false;
                fatal = false;
                gaveUp = false;
                ResetRotation();
                pumping = true;
                pumpBackoff = new Backoff(options.ReconnectInitialSeconds, options.ReconnectMaxSeconds);
                StartPolledAttempt();
                return;
            }
            if (thread != null && thread.IsAlive) return;
            stopRequested = false;
            fatal = false;
            gaveUp = false;
            ResetRotation();
            stopEvent.Reset();
            thread = new Thread(Run) { IsBackground = true, Name = "crowd-client" };
            thread.Start();
        }

        /// <summary>Closes the connection and stops reconnecting. Requests in flight fail (Code None) at the next Poll.</summary>
        public void Disconnect()
        {
            stopRequested = true;
            stopEvent.Set();
            if (polledSockets != null)
            {
                if (pumping) EndPolled("disconnected by the client");
                return;
            }
            Link open, opening;
            lock (sendLock)
            {
                open = link;
                opening = connecting;
            }
            if (opening != null) opening.Abort();
            if (open != null)
            {
                lock (sendLock) open.Close(); // WebSocket: the close handshake; the reader then ends
            }
            var t = thread;
            if (t != null && t != Thread.CurrentThread && !t.Join(open != null ? 2000 : 5000))
            {
                if (open != null) open.Abort();
                t.Join(5000);
            }
        }

        public void Dispose() { Disconnect(); }

        /// <summary>Runs queued events on the calling thread (Unity: in Update). Returns how many ran.</summary>
        public int Poll(int maxEvents = int.MaxValue)
        {
            if (polledSockets != null) Pump();
            int n = 0;
            while (n < maxEvents)
            {
                QueuedEvent e;
                lock (queueLock)
                {
                    if (queue.Count == 0) break;
                    e = queue.First.Value;
                    queue.RemoveFirst();
                    if (e.IsSnapshot) queuedSnapshots--;
                }
                n++;
                e.Action();
            }
            return n;
        }

        // ------------------------------------------------------------ commands (main thread)

        /// <summary>Sends any ClientMessage; its RequestId is assigned here and returned. Exactly one of
        /// onAck/onError runs later in Poll (onError with Code None if the connection is lost first).</summary>
        public uint Send(ClientMessage msg, Action<Ack> onAck = null, Action<Error> onError = null)
        {
            return SendRequest(msg, onAck, null, onError);
        }

        uint SendRequest(ClientMessage msg, Action<Ack> onAck, Action<Paths> onPaths, Action<Error> onError,
                         Action<WorldList> onWorldList = null)
        {
            uint id = NextRequestId();
            msg.RequestId = id;
            int gen;
            if (TrySend(msg, out gen))
            {
                if (onAck != null || onPaths != null || onError != null || onWorldList != null)
                    pending[id] = new PendingRequest { Generation = gen, OnAck = onAck, OnPaths = onPaths, OnError = onError,
                                                       OnWorldList = onWorldList };
                return id;
            }
            var err = new Error { RequestId = id, Code = ErrorCode.None, Message = "not connected" };
            Enqueue(() =>
            {
                if (onError != null) onError(err);
                var h = ErrorReceived;
                if (h != null) h(err);
            }, false);
            return id;
        }

        /// <summary>Spawns agents; the Ack lists their ids in order.</summary>
        public uint Spawn(IList<AgentSpec> agents, Action<Ack> onAck = null, Action<Error> onError = null)
        {
            var m = new SpawnAgents();
            m.Agents.AddRange(agents);
            return Send(new ClientMessage { SpawnAgents = m }, onAck, onError);
        }

        /// <summary>One target for every id. steer (minor 1): Navigate walks a path around obstacles,
        /// Direct a straight line; Default is the server's choice (Navigate).</summary>
        public uint SetTarget(IList<uint> ids, float x, float y, Action<Ack> onAck = null, Action<Error> onError = null,
                              SteerMode steer = SteerMode.Default)
        {
            var m = new SetTargets { Steer = steer };
            m.Ids.AddRange(ids);
            m.X.Add(x);
            m.Y.Add(y);
            return Send(new ClientMessage { SetTargets = m }, onAck, onError);
        }

        /// <summary>One target for every id, as a vector (UnityEngine.Vector2 in Unity).</summary>
        public uint SetTarget(IList<uint> ids, Vector2 target, Action<Ack> onAck = null, Action<Error> onError = null,
                              SteerMode steer = SteerMode.Default)
        {
            return SetTarget(ids, target.x, target.y, onAck, onError, steer);
        }

        /// <summary>A target per id (parallel arrays); steer as in SetTarget.</summary>
        public uint SetTargets(IList<uint> ids, IList<float> x, IList<float> y, Action<Ack> onAck = null, Action<Error> onError = null,
                               SteerMode steer = SteerMode.Default)
        {
            var m = new SetTargets { Steer = steer };
            m.Ids.AddRange(ids);
            m.X.AddRange(x);
            m.Y.AddRange(y);
            return Send(new ClientMessage { SetTargets = m }, onAck, onError);
        }

        /// <summary>A target per id, as vectors.</summary>
        public uint SetTargets(IList<uint> ids, IList<Vector2> targets, Action<Ack> onAck = null, Action<Error> onError = null,
                               SteerMode steer = SteerMode.Default)
        {
            var m = new SetTargets { Steer = steer };
            m.Ids.AddRange(ids);
            foreach (var t in targets)
            {
                m.X.Add(t.x);
                m.Y.Add(t.y);
            }
            return Send(new ClientMessage { SetTargets = m }, onAck, onError);
        }

        public uint SetVelocities(IList<uint> ids, IList<float> vx, IList<float> vy, Action<Ack> onAck = null, Action<Error> onError = null)
        {
            var m = new SetVelocities();
            m.Ids.AddRange(ids);
            m.Vx.AddRange(vx);
            m.Vy.AddRange(vy);
            return Send(new ClientMessage { SetVelocities = m }, onAck, onError);
        }

        /// <summary>A velocity per id, as vectors (world units per second).</summary>
        public uint SetVelocities(IList<uint> ids, IList<Vector2> velocities, Action<Ack> onAck = null, Action<Error> onError = null)
        {
            var m = new SetVelocities();
            m.Ids.AddRange(ids);
            foreach (var v in velocities)
            {
                m.Vx.Add(v.x);
                m.Vy.Add(v.y);
            }
            return Send(new ClientMessage { SetVelocities = m }, onAck, onError);
        }

        public uint RemoveAgents(IList<uint> ids, Action<Ack> onAck = null, Action<Error> onError = null)
        {
            var m = new RemoveAgents();
            m.Ids.AddRange(ids);
            return Send(new ClientMessage { RemoveAgents = m }, onAck, onError);
        }

        /// <summary>Admin only; the Ack holds the obstacle id.</summary>
        public uint AddObstacle(IList<float> x, IList<float> y, Action<Ack> onAck = null, Action<Error> onError = null)
        {
            var m = new AddObstacle();
            m.X.AddRange(x);
            m.Y.AddRange(y);
            return Send(new ClientMessage { AddObstacle = m }, onAck, onError);
        }

        /// <summary>Admin only: a polygon from its vertices as vectors; the Ack holds the obstacle id.</summary>
        public uint AddObstacle(IList<Vector2> vertices, Action<Ack> onAck = null, Action<Error> onError = null)
        {
            var m = new AddObstacle();
            foreach (var v in vertices)
            {
                m.X.Add(v.x);
                m.Y.Add(v.y);
            }
            return Send(new ClientMessage { AddObstacle = m }, onAck, onError);
        }

        public uint RemoveObstacle(uint id, Action<Ack> onAck = null, Action<Error> onError = null)
        {
            return Send(new ClientMessage { RemoveObstacle = new RemoveObstacle { Id = id } }, onAck, onError);
        }

        /// <summary>Subscribes to snapshots (area null: the whole world; divisor 0: the server's default).
        /// Remembered, and sent again after every reconnect. May be called before Connect (then it
        /// returns 0 and the callbacks never run: the subscribe goes out with the Hello).</summary>
        public uint Subscribe(Rect area = null, uint divisor = 0, Action<Ack> onAck = null, Action<Error> onError = null)
        {
            var sub = new Subscribe { Area = area, Divisor = divisor };
            bool connected;
            lock (sendLock)
            {
                // Decided under the lock the connection thread holds while it sends Hello and the
                // stored subscription: either that send already happened (send this one now) or
                // it will send this one itself.
                subscription = sub;
                connected = link != null;
            }
            if (!connected) return 0;
            return Send(new ClientMessage { Subscribe = sub }, onAck, onError);
        }

        /// <summary>Stops snapshots, now and after reconnects. Returns 0 when not connected.</summary>
        public uint Unsubscribe(Action<Ack> onAck = null, Action<Error> onError = null)
        {
            bool connected;
            lock (sendLock)
            {
                subscription = null;
                connected = link != null;
            }
            if (!connected) return 0;
            return Send(new ClientMessage { Subscribe = new Subscribe { Unsubscribe = true } }, onAck, onError);
        }

        /// <summary>Minor 1: which agents' events arrive (allAgents: every agent's, admin only; the
        /// default without asking is this client's own). Remembered, and sent again after every
        /// reconnect; before Connect it returns 0 and goes out with the Hello.</summary>
        public uint SubscribeEvents(bool allAgents = false, Action<Ack> onAck = null, Action<Error> onError = null)
        {
            return SendEventSubscription(new SubscribeEvents { AllAgents = allAgents }, onAck, onError);
        }

        /// <summary>Minor 1: no agent events at all, now and after reconnects.</summary>
        public uint UnsubscribeEvents(Action<Ack> onAck = null, Action<Error> onError = null)
        {
            return SendEventSubscription(new SubscribeEvents { Unsubscribe = true }, onAck, onError);
        }

        uint SendEventSubscription(SubscribeEvents m, Action<Ack> onAck, Action<Error> onError)
        {
            bool connected;
            lock (sendLock)
            {
                eventSubscription = m; // decided under the lock, as in Subscribe
                connected = link != null;
            }
            if (!connected) return 0;
            return Send(new ClientMessage { SubscribeEvents = m }, onAck, onError);
        }

        /// <summary>Minor 1: the current path of each agent (own agents, or any for an admin), answered by
        /// one Paths message (onPaths) or an Error (onError; Code None if the connection is lost first).</summary>
        public uint GetPaths(IList<uint> ids, Action<Paths> onPaths, Action<Error> onError = null)
        {
            var m = new GetPaths();
            m.Ids.AddRange(ids);
            return SendRequest(new ClientMessage { GetPaths = m }, null, onPaths, onError);
        }

        /// <summary>Measures the round trip; the answer updates LastRoundTripMs and raises PongReceived.</summary>
        public uint Ping(Action<Ack> onAck = null, Action<Error> onError = null)
        {
            ulong us = (ulong)(clock.Elapsed.TotalMilliseconds * 1000.0);
            return Send(new ClientMessage { Ping = new Ping { ClientTimeUs = us } }, onAck, onError);
        }

        // ------------------------------------------------------------ sending

        uint NextRequestId()
        {
            uint id = (uint)Interlocked.Increment(ref nextRequestId);
            if (id == 0) id = (uint)Interlocked.Increment(ref nextRequestId); // 0 means "unasked"
            return id;
        }

        bool TrySend(ClientMessage msg, out int gen)
        {
            lock (sendLock)
            {
                gen = linkGeneration;
                if (link == null) return false;
                try
                {
                    link.Send(msg);
                    return true;
                }
                catch (Exception)
                {
                    // The reader sees the closed connection and reconnects.
                    link.Abort();
                    link = null;
                    return false;
                }
            }
        }

        // ------------------------------------------------------------ main-thread queue

        void Enqueue(Action action, bool isSnapshot)
        {
            lock (queueLock)
            {
                queue.AddLast(new QueuedEvent { Action = action, IsSnapshot = isSnapshot });
                if (!isSnapshot) return;
                queuedSnapshots++;
                if (queuedSnapshots <= Math.Max(1, options.MaxQueuedSnapshots)) return;
                // Each snapshot is a whole world state: the oldest is the one nobody will miss.
                for (var node = queue.First; node != null; node = node.Next)
                {
                    if (!node.Value.IsSnapshot) continue;
                    queue.Remove(node);
                    queuedSnapshots--;
                    Interlocked.Increment(ref snapshotsDropped);
                    break;
                }
            }
        }

        void SetState(ConnectionState s, string reason)
        {
            state = s;
            Enqueue(() => { var h = StateChanged; if (h != null) h(s, reason); }, false);
        }

        void Fault(string what)
        {
            Interlocked.Increment(ref protocolFaults);
            Enqueue(() => { var h = ProtocolFault; if (h != null) h(what); }, false);
        }

        void DispatchAck(Ack ack)
        {
            PendingRequest p;
            if (pending.TryGetValue(ack.RequestId, out p))
            {
                pending.Remove(ack.RequestId);
                if (p.OnAck != null) p.OnAck(ack);
            }
            var h = AckReceived;
            if (h != null) h(ack);
        }

        void DispatchPaths(Paths paths)
        {
            PendingRequest p;
            if (paths.RequestId != 0 && pending.TryGetValue(paths.RequestId, out p))
            {
                pending.Remove(paths.RequestId);
                if (p.OnPaths != null) p.OnPaths(paths);
            }
            var h = PathsReceived;
            if (h != null) h(paths);
        }

        void DispatchAgentEvents(AgentEvents events)
        {
            foreach (var e in events.Events)
            {
                Action<AgentEvent> h = null;
                switch (e.Kind)
                {
                    case AgentEventKind.Arrived: h = AgentArrived; break;
                    case AgentEventKind.Unreachable: h = AgentUnreachable; break;
                    case AgentEventKind.Stuck: h = AgentStuck; break;
                }
                if (h != null) h(e); // a kind from a newer server: only AgentEventsReceived sees it
            }
            var all = AgentEventsReceived;
            if (all != null) all(events);
        }

        void DispatchError(Error err)
        {
            PendingRequest p;
            if (err.RequestId != 0 && pending.TryGetValue(err.RequestId, out p))
            {
                pending.Remove(err.RequestId);
                if (p.OnError != null) p.OnError(err);
            }
            var h = ErrorReceived;
            if (h != null) h(err);
        }

        // Requests sent on a connection that is gone will never be answered.
        void FailPending(int gen)
        {
            var lost = new List<uint>();
            foreach (var kv in pending)
                if (kv.Value.Generation <= gen) lost.Add(kv.Key);
            lost.Sort();
            foreach (uint id in lost)
                DispatchError(new Error { RequestId = id, Code = ErrorCode.None, Message = "connection lost" });
        }

        // ------------------------------------------------------------ connection thread

        void Run()
        {
            var backoff = new Backoff(options.ReconnectInitialSeconds, options.ReconnectMaxSeconds);
            while (!stopRequested)
            {
                int gen = Interlocked.Increment(ref generation);
                var address = addresses[addressIndex];
                welcomedHere = refusedHere = false;
                SetState(ConnectionState.Connecting, address.ToString());
                string reason = null;
                ThreadedLink l = address.Transport == CrowdTransport.WebSocket
                    ? (ThreadedLink)new WebSocketLink(address, options)
                    : new TcpLink(address, options);
                bool opened = false;
                lock (sendLock)
                {
                    if (!stopRequested) connecting = l;
                }
                if (!stopRequested)
                {
                    try
                    {
                        l.Open();
                        opened = true;
                    }
                    catch (Exception e)
                    {
                        reason = "connect failed: " + e.Message;
                    }
                }
                lock (sendLock) connecting = null;
                if (opened)
                {
                    Interlocked.Increment(ref connections);
                    try
                    {
                        reason = Session(l, gen, backoff);
                    }
                    catch (Exception e)
                    {
                        reason = stopRequested ? "disconnected by the client" : "connection lost: " + e.Message;
                    }
                    if (!welcomedHere && !refusedHere && !stopRequested && !fatal && address.Transport == CrowdTransport.Tcp)
                        reason += " before any Welcome (is " + address + " crowd-server's TCP port, --listen? its --http port takes ws://…/ws)";
                    lock (sendLock)
                    {
                        if (link == l) link = null;
                    }
                    int lostGen = gen;
                    Enqueue(() => FailPending(lostGen), false);
                }
                l.Abort();
                if (stopRequested || fatal || !options.AutoReconnect)
                {
                    SetState(ConnectionState.Disconnected, stopRequested ? "disconnected by the client" : reason);
                    return;
                }
                double delay;
                if (!NextAttempt(backoff, ref reason, out delay))
                {
                    SetState(ConnectionState.Disconnected, reason);
                    return;
                }
                SetState(ConnectionState.WaitingToReconnect, reason);
                if (stopEvent.WaitOne(TimeSpan.FromSeconds(delay)))
                {
                    SetState(ConnectionState.Disconnected, "disconnected by the client");
                    return;
                }
            }
            SetState(ConnectionState.Disconnected, "disconnected by the client");
        }

        // A new connection: Hello, then the subscriptions, under sendLock (Subscribe decides under
        // it whether to send itself). False when Disconnect came first.
        bool Greet(Link l, int gen)
        {
            decoder.Reset();
            presentedKey = !welcomedOnce || options.Resume ? resumeKey ?? "" : "";
            helloRequestId = NextRequestId();
            var hello = new ClientMessage
            {
                RequestId = helloRequestId,
                Hello = new Hello
                {
                    Token = options.Token ?? "",
                    ClientName = options.ClientName ?? "",
                    KeepAgentsOnDisconnect = options.KeepAgentsOnDisconnect,
                    ResumeKey = presentedKey,
                    World = HelloWorld,
                },
            };
            lock (sendLock)
            {
                if (stopRequested) return false;
                link = l;
                linkGeneration = gen;
                l.Send(hello);
                if (subscription != null)
                    l.Send(new ClientMessage { RequestId = NextRequestId(), Subscribe = subscription });
                if (eventSubscription != null)
                    l.Send(new ClientMessage { RequestId = NextRequestId(), SubscribeEvents = eventSubscription });
            }
            SetState(ConnectionState.Connected, Address.ToString());
            return true;
        }

        void ResetRotation()
        {
            addressIndex = 0;
            attempts = 0;
            welcomedSinceConnect = false;
        }

        // A connection or an attempt ended: the next address, and the wait before it (a back-off wait
        // before each pass over the list, none inside it). False when the client gives up.
        bool NextAttempt(Backoff backoff, ref string reason, out double delay)
        {
            delay = 0;
            if (!welcomedHere) attempts++; // a loss after a Welcome starts counting afresh (attempts is 0)
            if (options.ReconnectMaxAttempts > 0 && attempts >= options.ReconnectMaxAttempts)
            {
                gaveUp = true;
                reason = "gave up after " + attempts + " attempts: " + reason;
                return false;
            }
            addressIndex = (addressIndex + 1) % addresses.Length;
            if (attempts % addresses.Length == 0) delay = backoff.NextDelaySeconds();
            return true;
        }

        // One connection: Hello, the subscription, then frames until it ends. Returns why it ended.
        string Session(ThreadedLink l, int gen, Backoff backoff)
        {
            if (!Greet(l, gen)) return "disconnected by the client";
            return l.ReadFrames((frame, off, len) => HandleFrame(frame, off, len, l, backoff),
                                () => stopRequested,
                                n => Interlocked.Add(ref bytesReceived, n),
                                Fault);
        }

        // ------------------------------------------------------------ polled connection (WebGL; main thread)

        bool pumping;        // Connect ran and Disconnect did not, nor did the client give up
        PolledLink pumpLink; // the current attempt's socket
        bool pumpOpened;     // it opened and the Hello went out
        int pumpGeneration;
        double pumpStartedMs, pumpRetryAtMs, pumpLastInputMs;
        Backoff pumpBackoff;

        void StartPolledAttempt()
        {
            pumpGeneration = Interlocked.Increment(ref generation);
            var address = addresses[addressIndex];
            welcomedHere = refusedHere = false;
            SetState(ConnectionState.Connecting, address.ToString());
            pumpOpened = false;
            pumpStartedMs = clock.Elapsed.TotalMilliseconds;
            try
            {
                pumpLink = new PolledLink(polledSockets(address.Uri, CrowdAddress.SubProtocol));
            }
            catch (Exception e)
            {
                pumpLink = null;
                EndPolled("connect failed: " + e.Message);
            }
        }

        // What the connection thread does, in steps: called by Poll before it runs the queue.
        void Pump()
        {
            if (!pumping) return;
            if (pumpLink == null)
            {
                if (clock.Elapsed.TotalMilliseconds >= pumpRetryAtMs) StartPolledAttempt();
                if (pumpLink == null) return;
            }
            var sock = pumpLink.Socket;
            if (!pumpOpened)
            {
                int st = sock.ReadyState;
                if (st == 0)
                {
                    if (clock.Elapsed.TotalMilliseconds - pumpStartedMs > options.ConnectTimeoutMs) EndPolled("connect failed: connect timed out");
                    return;
                }
                if (st != 1)
                {
                    EndPolled("connect failed: " + Describe(sock.Reason, "the WebSocket closed"));
                    return;
                }
                pumpOpened = true;
                pumpLastInputMs = clock.Elapsed.TotalMilliseconds;
                Interlocked.Increment(ref connections);
                try
                {
                    Greet(pumpLink, pumpGeneration);
                }
                catch (Exception e)
                {
                    EndPolled("connection lost: " + e.Message);
                    return;
                }
            }
            // Read the state before the queue: whatever came before a close is handled first.
            bool closed = sock.ReadyState == 3;
            for (;;)
            {
                byte[] m = sock.NextMessage();
                if (m == null) break;
                pumpLastInputMs = clock.Elapsed.TotalMilliseconds;
                Interlocked.Add(ref bytesReceived, m.Length);
                string end;
                if (m.Length > options.MaxFrameBytes)
                {
                    Fault("message of " + m.Length + " bytes, more than " + options.MaxFrameBytes + ": reconnecting");
                    end = "message too big";
                }
                else end = HandleFrame(m, 0, m.Length, pumpLink, pumpBackoff);
                if (end != null)
                {
                    EndPolled(end);
                    return;
                }
                if (pumpLink == null || pumpLink.Socket != sock) return; // a handler called Disconnect
            }
            if (closed) EndPolled("closed by the server: " + Describe(sock.Reason, "closed"));
            else if (options.IdleTimeoutMs > 0 && clock.Elapsed.TotalMilliseconds - pumpLastInputMs > options.IdleTimeoutMs)
                EndPolled("nothing from the server for " + options.IdleTimeoutMs + " ms");
        }

        static string Describe(string reason, string otherwise)
        {
            return string.IsNullOrEmpty(reason) ? otherwise : reason;
        }

        // The polled connection ended (or Disconnect): as Run does after a session.
        void EndPolled(string reason)
        {
            var l = pumpLink;
            pumpLink = null;
            if (l != null)
            {
                lock (sendLock)
                {
                    if (link == l) link = null;
                }
                l.Abort();
                if (pumpOpened)
                {
                    int lostGen = pumpGeneration;
                    Enqueue(() => FailPending(lostGen), false);
                }
            }
            pumpOpened = false;
            double delay = 0;
            if (stopRequested || fatal || !options.AutoReconnect || !NextAttempt(pumpBackoff, ref reason, out delay))
            {
                pumping = false;
                SetState(ConnectionState.Disconnected, stopRequested ? "disconnected by the client" : reason);
                return;
            }
            SetState(ConnectionState.WaitingToReconnect, reason);
            pumpRetryAtMs = clock.Elapsed.TotalMilliseconds + delay * 1000.0;
        }

        // Refusals that say nothing about the key: the same Hello may succeed later.
        static bool Passing(ErrorCode c)
        {
            switch (c)
            {
                case ErrorCode.ShuttingDown:
                case ErrorCode.ServerFull:
                case ErrorCode.RateLimited:
                case ErrorCode.SlowConsumer:
                case ErrorCode.Internal:
                case ErrorCode.StorageUnavailable:
                case ErrorCode.HelloTimeout:
                    return true;
                default:
                    return false;
            }
        }

        // Decodes and queues one frame; returns non-null when the connection must end.
        string HandleFrame(byte[] frame, int off, int len, Link l, Backoff backoff)
        {
            ServerMessage m;
            try
            {
                m = ProtoMessage.Parse<ServerMessage>(frame, off, len);
            }
            catch (ProtoException e)
            {
                Fault("malformed frame skipped: " + e.Message);
                return null;
            }
            switch (m.MsgCase)
            {
                case ServerMessage.MsgOneofCase.Welcome:
                {
                    var w = m.Welcome;
                    if (w.ProtocolMajor != Protocol.Major)
                    {
                        fatal = true;
                        return "server speaks protocol " + w.ProtocolMajor + ", this client " + Protocol.Major;
                    }
                    bool again = welcomedSinceConnect;
                    if (again && options.RequireResumed && !string.IsNullOrEmpty(presentedKey) && !w.Resumed)
                        return "the server at " + Address + " gave a new identity instead of resuming (RequireResumed): trying the next address";
                    precision = w.Precision == 0 ? 1 : w.Precision;
                    tickRateHz = w.TickRateHz;
                    // A server without a journal (or before minor 1) sends no key: nothing to resume.
                    resumeKey = w.ResumeKey;
                    welcomedOnce = true;
                    welcomedHere = true;
                    welcomedSinceConnect = true;
                    var info = again ? new ReconnectInfo { Address = Address, Resumed = w.Resumed, ClientId = w.ClientId, Attempt = attempts + 1 } : null;
                    attempts = 0;
                    backoff.Reset();
                    state = ConnectionState.Ready;
                    Enqueue(() =>
                    {
                        Welcome = w;
                        var h = StateChanged;
                        if (h != null) h(ConnectionState.Ready, "welcome from " + w.ServerVersion);
                        var hw = Welcomed;
                        if (hw != null) hw(w);
                        var hr = Reconnected;
                        if (info != null && hr != null) hr(info);
                    }, false);
                    return null;
                }
                case ServerMessage.MsgOneofCase.Snapshot:
                {
                    var snap = m.Snapshot;
                    QuantizedAgent[] view;
                    try
                    {
                        view = decoder.Apply(snap);
                    }
                    catch (SnapshotMismatchException e)
                    {
                        // Our view no longer matches the server's baseline: a fresh subscribe brings a keyframe.
                        Fault("snapshot at tick " + snap.Tick + " did not apply (" + e.Message + "): resubscribing");
                        Subscribe sub;
                        lock (sendLock) sub = subscription;
                        if (sub != null)
                        {
                            lock (sendLock)
                            {
                                if (link == l) l.Send(new ClientMessage { RequestId = NextRequestId(), Subscribe = sub });
                            }
                        }
                        return null;
                    }
                    Interlocked.Increment(ref snapshotsReceived);
                    var ws = WorldSnapshot.FromView(snap, view, decoder.Obstacles, decoder.LastRemoved, precision, tickRateHz, len);
                    Enqueue(() =>
                    {
                        LatestSnapshot = ws;
                        var h = SnapshotReceived;
                        if (h != null) h(ws);
                    }, true);
                    return null;
                }
                case ServerMessage.MsgOneofCase.Ack:
                {
                    var ack = m.Ack;
                    Enqueue(() => DispatchAck(ack), false);
                    return null;
                }
                case ServerMessage.MsgOneofCase.Error:
                {
                    var err = m.Error;
                    if (err.Code == ErrorCode.BadToken || err.Code == ErrorCode.UnsupportedVersion) fatal = true;
                    // The Hello that presented a key was refused for a reason that is not passing:
                    // the key may be why, so the next attempt starts a fresh identity rather than
                    // being refused forever.
                    bool refusedHello = err.RequestId == helloRequestId;
                    if (refusedHello && FinalWorldRefusal(err.Code)) fatal = true;
                    if (refusedHello) refusedHere = true;
                    // With several addresses one server's refusal says nothing of the key at another (a
                    // standby not promoted yet): keep it, and try the next address.
                    bool several = addresses.Length > 1;
                    if (refusedHello && !several && presentedKey.Length > 0 && resumeKey == presentedKey && !Passing(err.Code)) resumeKey = "";
                    Enqueue(() =>
                    {
                        if (refusedHello)
                        {
                            var hr = HelloRefused;
                            if (hr != null) hr(err);
                        }
                        DispatchError(err);
                    }, false);
                    if (refusedHello && several && !fatal)
                        return "the server at " + Address + " refused the Hello (" + err.Code + "): trying the next address";
                    return null;
                }
                case ServerMessage.MsgOneofCase.Pong:
                {
                    var pong = m.Pong;
                    Enqueue(() =>
                    {
                        LastRoundTripMs = clock.Elapsed.TotalMilliseconds - pong.ClientTimeUs / 1000.0;
                        CompletePing(pong);
                        var h = PongReceived;
                        if (h != null) h(pong);
                    }, false);
                    return null;
                }
                case ServerMessage.MsgOneofCase.AgentEvents:
                {
                    var events = m.AgentEvents;
                    Enqueue(() => DispatchAgentEvents(events), false);
                    return null;
                }
                case ServerMessage.MsgOneofCase.Paths:
                {
                    var paths = m.Paths;
                    Enqueue(() => DispatchPaths(paths), false);
                    return null;
                }
                case ServerMessage.MsgOneofCase.WorldList:
                {
                    var list = m.WorldList;
                    Enqueue(() => DispatchWorldList(list), false);
                    return null;
                }
                default:
                    Fault("server message with no known case skipped");
                    return null;
            }
        }
    }
}
