// SnapshotEncoder.cs — test support: the server side of the snapshot delta
// coding, ported from proto/wire's crowd_snapshot_encode rule for rule, so the
// tests (and the harness's fake server) can make the frames a real server sends.
using System;
using System.Collections.Generic;
using Crowd.V1;

namespace Crowd.Tests
{
    public sealed class SnapshotEncoder
    {
        QuantizedAgent[] baseline = new QuantizedAgent[0];

        /// <summary>A Snapshot taking a receiver holding the last encoded view to `next` (ascending ids).</summary>
        public Snapshot Encode(ulong tick, bool keyframe, QuantizedAgent[] next, List<Obstacle> obstacles = null)
        {
            var s = new Snapshot { Tick = tick, StateHash = tick * 0x9E3779B97F4A7C15UL, Keyframe = keyframe, WorldAgentCount = (uint)next.Length };
            int baseCount = keyframe ? 0 : baseline.Length;
            int b = 0;
            uint previous = 0;
            foreach (var a in next)
            {
                if (a.Id <= previous) throw new ArgumentException("ids must ascend and not be 0");
                while (b < baseCount && baseline[b].Id < a.Id) b++;
                bool had = b < baseCount && baseline[b].Id == a.Id;
                QuantizedAgent old = had ? baseline[b++] : default(QuantizedAgent);
                int bits;
                if (!had || old.Radius != a.Radius || old.Owner != a.Owner)
                {
                    bits = SnapshotDecoder.BitsAll;
                    old = default(QuantizedAgent);
                }
                else
                {
                    bits = (a.X != old.X ? SnapshotDecoder.BitX : 0) | (a.Y != old.Y ? SnapshotDecoder.BitY : 0) |
                           (a.Vx != old.Vx ? SnapshotDecoder.BitVx : 0) | (a.Vy != old.Vy ? SnapshotDecoder.BitVy : 0);
                }
                s.Entries.Add((ulong)(a.Id - previous) << SnapshotDecoder.EntryShift | (uint)bits);
                if ((bits & SnapshotDecoder.BitX) != 0) s.X.Add(unchecked((int)((long)a.X - old.X)));
                if ((bits & SnapshotDecoder.BitY) != 0) s.Y.Add(unchecked((int)((long)a.Y - old.Y)));
                if ((bits & SnapshotDecoder.BitVx) != 0) s.Vx.Add(unchecked((int)((long)a.Vx - old.Vx)));
                if ((bits & SnapshotDecoder.BitVy) != 0) s.Vy.Add(unchecked((int)((long)a.Vy - old.Vy)));
                if ((bits & SnapshotDecoder.BitNew) != 0)
                {
                    s.Radius.Add(a.Radius);
                    s.Owner.Add(a.Owner);
                }
                previous = a.Id;
            }
            uint prevRemoved = 0;
            int j = 0;
            for (int k = 0; k < baseCount; k++)
            {
                uint id = baseline[k].Id;
                while (j < next.Length && next[j].Id < id) j++;
                if (j < next.Length && next[j].Id == id) continue;
                s.RemovedIdDeltas.Add(id - prevRemoved);
                prevRemoved = id;
            }
            if (obstacles != null)
            {
                s.ObstaclesChanged = true;
                s.Obstacles.AddRange(obstacles);
            }
            baseline = (QuantizedAgent[])next.Clone();
            return s;
        }

        public static QuantizedAgent Agent(uint id, int x, int y, int vx = 0, int vy = 0, uint radius = 500, uint owner = 0)
        {
            return new QuantizedAgent { Id = id, X = x, Y = y, Vx = vx, Vy = vy, Radius = radius, Owner = owner };
        }

        public static byte[] Frame(Snapshot s)
        {
            return ProtoMessage.ToByteArray(new ServerMessage { Snapshot = s });
        }
    }
}
