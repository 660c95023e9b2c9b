// CrowdClient.Worlds.cs — worlds (crowd.v1 minor 2): the world a Hello joins
// (CrowdClientOptions.World, then the last JoinWorld's, so a reconnect comes back
// to it), CreateWorld / CloseWorld (admin), ListWorlds and JoinWorld, with
// callbacks answered in Poll() and Task forms beside them.
using System;
using System.Threading.Tasks;
using Crowd.V1;

namespace Crowd.Client
{
    public sealed partial class CrowdClient
    {
        volatile string joinedWorld; // the last JoinWorld's world; null: options.World

        // The world the next Hello names ("" = the server's default).
        string HelloWorld { get { return joinedWorld ?? options.World ?? ""; } }

        /// <summary>The world this client is in: the last Welcome's (Welcome.World), or the last
        /// JoinWorld's; "" before a Welcome.</summary>
        public string WorldName
        {
            get
            {
                if (Welcome == null) return "";
                if (joinedWorld != null) return joinedWorld;
                return string.IsNullOrEmpty(Welcome.World) ? "default" : Welcome.World;
            }
        }

        // A refusal of the Hello's world is final, like a bad token: the same Hello fails again.
        static bool FinalWorldRefusal(ErrorCode code)
        {
            return code == ErrorCode.NoSuchWorld || code == ErrorCode.WorldForbidden || code == ErrorCode.BadWorldName;
        }

        /// <summary>Admin: opens a world (settings null or fields left 0: the server's own). Refused with
        /// WorldExists, BadWorldName, BadWorldSettings, LimitWorlds or WorldForbidden.</summary>
        public uint CreateWorld(string name, WorldSettings settings = null, Action<Ack> onAck = null, Action<Error> onError = null)
        {
            return Send(new ClientMessage { CreateWorld = new CreateWorld { Name = name ?? "", Settings = settings } }, onAck, onError);
        }

        /// <summary>Admin: closes a world; its clients get WorldClosed. Its data stays on disk unless deleteData.</summary>
        public uint CloseWorld(string name, bool deleteData = false, Action<Ack> onAck = null, Action<Error> onError = null)
        {
            return Send(new ClientMessage { CloseWorld = new CloseWorld { Name = name ?? "", DeleteData = deleteData } }, onAck, onError);
        }

        /// <summary>The open worlds (name, agents, clients, tick rate, lateness p99, …) and the server's
        /// --max-worlds, in one WorldList (onList) or an Error.</summary>
        public uint ListWorlds(Action<WorldList> onList, Action<Error> onError = null)
        {
            return SendRequest(new ClientMessage { ListWorlds = new ListWorlds() }, null, null, onError, onList);
        }

        /// <summary>Moves this connection to another world. The server resets its subscriptions there, and so
        /// does the client: Subscribe again in onAck. Refused (InvalidArgument) while this client owns
        /// agents; NoSuchWorld, WorldForbidden. Later reconnects come back to this world.</summary>
        public uint JoinWorld(string name, Action<Ack> onAck = null, Action<Error> onError = null)
        {
            string world = name ?? "";
            return Send(new ClientMessage { JoinWorld = new JoinWorld { Name = world } }, ack =>
            {
                joinedWorld = world;
                lock (sendLock)
                {
                    subscription = null;
                    eventSubscription = null;
                }
                LatestSnapshot = null;
                if (onAck != null) onAck(ack);
            }, onError);
        }

        public Task<Ack> CreateWorldAsync(string name, WorldSettings settings = null)
        {
            return AckTask((a, e) => CreateWorld(name, settings, a, e));
        }

        public Task<Ack> CloseWorldAsync(string name, bool deleteData = false)
        {
            return AckTask((a, e) => CloseWorld(name, deleteData, a, e));
        }

        public Task<WorldList> ListWorldsAsync()
        {
            var tcs = new TaskCompletionSource<WorldList>();
            ListWorlds(l => tcs.TrySetResult(l), e => tcs.TrySetException(new CrowdException(e)));
            return tcs.Task;
        }

        public Task<Ack> JoinWorldAsync(string name)
        {
            return AckTask((a, e) => JoinWorld(name, a, e));
        }

        void DispatchWorldList(WorldList list)
        {
            PendingRequest p;
            if (list.RequestId != 0 && pending.TryGetValue(list.RequestId, out p))
            {
                pending.Remove(list.RequestId);
                if (p.OnWorldList != null) p.OnWorldList(list);
            }
            var h = WorldListReceived;
            if (h != null) h(list);
        }

        /// <summary>Every WorldList (minor 2), after the ListWorlds callback that asked for it.</summary>
        public event Action<WorldList> WorldListReceived;
    }
}
