// WorldSnapshot.cs — one decoded snapshot as the main thread sees it: every agent
// in view with world-unit floats, immutable, so the receive thread can hand it
// over without locks and the interpolation buffer can keep it.
using System.Collections.Generic;
using Crowd.V1;
#if UNITY_5_3_OR_NEWER
using Vector2 = UnityEngine.Vector2;
#else
using Vector2 = Crowd.Client.CrowdVector2;
#endif

namespace Crowd.Client
{
    /// <summary>One agent in world units (fixed point divided by Welcome.precision).</summary>
    public struct CrowdAgent
    {
        public uint Id;
        public float X, Y;
        public float Vx, Vy;
        public float Radius;
        /// <summary>Welcome.client_id of the spawner; 0 = the server or nobody.</summary>
        public uint Owner;

        /// <summary>(X, Y) as a vector: UnityEngine.Vector2 in Unity, CrowdVector2 elsewhere.</summary>
        public Vector2 Position { get { return new Vector2(X, Y); } }
        /// <summary>(Vx, Vy) as a vector, world units per second.</summary>
        public Vector2 Velocity { get { return new Vector2(Vx, Vy); } }
    }

    public sealed class WorldSnapshot
    {
        public ulong Tick { get; private set; }
        public ulong StateHash { get; private set; }
        public bool Keyframe { get; private set; }
        public uint WorldAgentCount { get; private set; }
        /// <summary>Ticks per second of the server (Welcome.tick_rate_hz), to turn ticks into seconds.</summary>
        public uint TickRateHz { get; private set; }
        /// <summary>Agents in view, ascending id.</summary>
        public CrowdAgent[] Agents { get; private set; }
        /// <summary>The complete obstacle set as of this snapshot.</summary>
        public IList<Obstacle> Obstacles { get; private set; }
        /// <summary>True when this snapshot replaced the obstacle set.</summary>
        public bool ObstaclesChanged { get; private set; }
        /// <summary>Ids the server listed as having left the view since the previous snapshot.</summary>
        public IList<uint> RemovedIds { get; private set; }
        /// <summary>Size of the frame on the wire, without its length prefix.</summary>
        public int WireBytes { get; private set; }

        public WorldSnapshot(ulong tick, ulong stateHash, bool keyframe, uint worldAgentCount, uint tickRateHz,
                             CrowdAgent[] agents, IList<Obstacle> obstacles, bool obstaclesChanged,
                             IList<uint> removedIds, int wireBytes)
        {
            Tick = tick;
            StateHash = stateHash;
            Keyframe = keyframe;
            WorldAgentCount = worldAgentCount;
            TickRateHz = tickRateHz;
            Agents = agents ?? new CrowdAgent[0];
            Obstacles = obstacles ?? new List<Obstacle>();
            ObstaclesChanged = obstaclesChanged;
            RemovedIds = removedIds ?? new List<uint>();
            WireBytes = wireBytes;
        }

        /// <summary>Builds the main-thread form of a decoder's view.</summary>
        public static WorldSnapshot FromView(Snapshot header, QuantizedAgent[] view, IList<Obstacle> obstacles,
                                             IList<uint> removed, uint precision, uint tickRateHz, int wireBytes)
        {
            // Division, not a reciprocal multiply: correctly rounded, so 1500 / 1000 is exactly 1.5.
            float p = precision == 0 ? 1f : precision;
            var agents = new CrowdAgent[view.Length];
            for (int i = 0; i < view.Length; i++)
            {
                var q = view[i];
                agents[i] = new CrowdAgent
                {
                    Id = q.Id,
                    X = q.X / p,
                    Y = q.Y / p,
                    Vx = q.Vx / p,
                    Vy = q.Vy / p,
                    Radius = q.Radius / p,
                    Owner = q.Owner,
                };
            }
            return new WorldSnapshot(header.Tick, header.StateHash, header.Keyframe, header.WorldAgentCount, tickRateHz,
                                     agents, new List<Obstacle>(obstacles).AsReadOnly(), header.ObstaclesChanged,
                                     new List<uint>(removed).AsReadOnly(), wireBytes);
        }

        /// <summary>Binary search by id.</summary>
        public bool TryGetAgent(uint id, out CrowdAgent agent)
        {
            int i = IndexOf(id);
            if (i >= 0)
            {
                agent = Agents[i];
                return true;
            }
            agent = default(CrowdAgent);
            return false;
        }

        public int IndexOf(uint id)
        {
            int lo = 0, hi = Agents.Length;
            while (lo < hi)
            {
                int mid = lo + (hi - lo) / 2;
                if (Agents[mid].Id < id) lo = mid + 1;
                else hi = mid;
            }
            return lo < Agents.Length && Agents[lo].Id == id ? lo : -1;
        }
    }
}
