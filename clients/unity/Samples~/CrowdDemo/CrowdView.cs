// CrowdView.cs — sample: mirrors the agents of a crowd-server subscription as
// pooled GameObjects (one prefab per owner), positioned from the interpolation
// buffer every frame. The server's 2-D plane (x, y) maps to Unity's (x, z).
using System.Collections.Generic;
using Crowd.Client;
using UnityEngine;

namespace Crowd.Samples
{
    public class CrowdView : MonoBehaviour
    {
        [System.Serializable]
        public class OwnerPrefab
        {
            [Tooltip("Welcome.client_id of the spawning client (0: server or nobody)")]
            public uint owner;
            public GameObject prefab;
        }

        [Header("Server")]
        [Tooltip("When set, used instead of host and port: ws://HOST:8080/ws (the server's --http port; WebGL builds need this form) or tcp://HOST:7777")]
        public string address = "";
        [Tooltip("The server's TCP port (--listen); in WebGL builds use Address")]
        public string host = "127.0.0.1";
        public int port = 7777;
        public string token = "";

        [Header("Look")]
        [Tooltip("Used when an agent's owner has no entry below; none: a capsule primitive")]
        public GameObject defaultPrefab;
        [Tooltip("This client's own agents (overrides Owner Prefabs)")]
        public GameObject ownAgentPrefab;
        public List<OwnerPrefab> ownerPrefabs = new List<OwnerPrefab>();
        [Tooltip("Scale each instance to the agent's diameter")]
        public bool scaleByRadius = true;

        public CrowdClient Client { get; private set; }
        public InterpolationBuffer Buffer { get; private set; }

        // id -> (instance, prefab key it came from)
        readonly Dictionary<uint, GameObject> live = new Dictionary<uint, GameObject>();
        readonly Dictionary<uint, int> liveKey = new Dictionary<uint, int>();
        readonly Dictionary<int, Stack<GameObject>> pools = new Dictionary<int, Stack<GameObject>>();
        readonly List<CrowdAgent> frame = new List<CrowdAgent>();
        readonly HashSet<uint> seen = new HashSet<uint>();
        readonly List<uint> gone = new List<uint>();

        void Awake()
        {
            Buffer = new InterpolationBuffer();
            var options = new CrowdClientOptions { Token = token, ClientName = "unity-crowdview" };
            Client = string.IsNullOrEmpty(address) ? new CrowdClient(host, port, options) : new CrowdClient(address, options);
            Client.SnapshotReceived += s => Buffer.Add(s);
            Client.StateChanged += (state, why) => Debug.Log("crowd: " + state + " (" + why + ")");
            Client.ErrorReceived += e => Debug.LogWarning("crowd: " + e);
            Client.ProtocolFault += what => Debug.LogWarning("crowd: " + what);
            Client.Subscribe(); // the whole world; re-sent on every reconnect
        }

        void OnEnable() { Client.Connect(); }

        void OnDisable() { Client.Disconnect(); }

        void OnDestroy() { Client.Dispose(); }

        /// <summary>Ids of the agents this client spawned, as of the newest snapshot.</summary>
        public List<uint> OwnAgentIds(List<uint> into)
        {
            into.Clear();
            var snap = Client.LatestSnapshot;
            if (snap == null || Client.Welcome == null) return into;
            foreach (var a in snap.Agents)
                if (a.Owner == Client.Welcome.ClientId) into.Add(a.Id);
            return into;
        }

        void Update()
        {
            Client.Poll();
            Buffer.Advance(Time.deltaTime);
            Buffer.Sample(frame);
            seen.Clear();
            foreach (var a in frame)
            {
                seen.Add(a.Id);
                GameObject prefab = PrefabFor(a.Owner);
                int key = prefab != null ? prefab.GetInstanceID() : 0;
                GameObject go;
                int had;
                if (live.TryGetValue(a.Id, out go) && liveKey.TryGetValue(a.Id, out had) && had != key)
                {
                    Release(a.Id);
                    go = null;
                }
                if (go == null)
                {
                    go = Acquire(prefab, key);
                    live[a.Id] = go;
                    liveKey[a.Id] = key;
                }
                go.transform.localPosition = new Vector3(a.X, 0f, a.Y);
                if (scaleByRadius) go.transform.localScale = Vector3.one * (2f * a.Radius);
                if (a.Vx * a.Vx + a.Vy * a.Vy > 1e-6f)
                    go.transform.localRotation = Quaternion.LookRotation(new Vector3(a.Vx, 0f, a.Vy));
            }
            gone.Clear();
            foreach (var id in live.Keys)
                if (!seen.Contains(id)) gone.Add(id);
            foreach (var id in gone) Release(id);
        }

        GameObject PrefabFor(uint owner)
        {
            if (ownAgentPrefab != null && Client.Welcome != null && owner == Client.Welcome.ClientId && owner != 0)
                return ownAgentPrefab;
            foreach (var p in ownerPrefabs)
                if (p.owner == owner && p.prefab != null) return p.prefab;
            return defaultPrefab;
        }

        GameObject Acquire(GameObject prefab, int key)
        {
            Stack<GameObject> pool;
            if (pools.TryGetValue(key, out pool) && pool.Count > 0)
            {
                var pooled = pool.Pop();
                pooled.SetActive(true);
                return pooled;
            }
            if (prefab != null) return Instantiate(prefab, transform);
            var made = GameObject.CreatePrimitive(PrimitiveType.Capsule);
            made.transform.SetParent(transform, false);
            return made;
        }

        void Release(uint id)
        {
            GameObject go = live[id];
            int key = liveKey[id];
            live.Remove(id);
            liveKey.Remove(id);
            go.SetActive(false);
            Stack<GameObject> pool;
            if (!pools.TryGetValue(key, out pool)) pools[key] = pool = new Stack<GameObject>();
            pool.Push(go);
        }
    }
}
