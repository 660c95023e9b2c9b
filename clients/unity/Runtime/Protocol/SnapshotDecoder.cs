// SnapshotDecoder.cs — applies crowd.v1 Snapshots, delta-coded per subscriber,
// to the receiver's copy of what it was sent. The rules are proto/wire's C
// decoder (proto/wire/src/snapshot.c) rule for rule: any inconsistency fails and
// leaves the view unchanged, so the caller can ask for a keyframe.
using System;
using System.Collections.Generic;

namespace Crowd.V1
{
    /// <summary>One agent as a snapshot carries it: fixed point, round(value * precision).</summary>
    public struct QuantizedAgent
    {
        public uint Id;
        public int X, Y, Vx, Vy;
        public uint Radius;
        public uint Owner;
    }

    /// <summary>The snapshot did not apply to the view (arrays of the wrong length, ids not
    /// ascending, a delta for an agent the view lacks).</summary>
    public sealed class SnapshotMismatchException : Exception
    {
        public SnapshotMismatchException(string message) : base(message) { }
    }

    public sealed class SnapshotDecoder
    {
        public const int BitX = 1, BitY = 2, BitVx = 4, BitVy = 8, BitNew = 16, BitsAll = 31;
        public const int EntryShift = 5;

        QuantizedAgent[] view = new QuantizedAgent[0];
        List<Obstacle> obstacles = new List<Obstacle>();

        /// <summary>The receiver's view after the last snapshot applied, ascending id. Do not modify.</summary>
        public QuantizedAgent[] View { get { return view; } }

        /// <summary>The current obstacle set (replaced whole when a snapshot says it changed). Do not modify.</summary>
        public List<Obstacle> Obstacles { get { return obstacles; } }

        /// <summary>Ids listed in removed_id_deltas by the last snapshot applied.</summary>
        public List<uint> LastRemoved = new List<uint>();

        /// <summary>Agents new to the receiver in the last snapshot applied.</summary>
        public int LastEntered { get; private set; }

        /// <summary>Forget everything (a new connection starts with a keyframe).</summary>
        public void Reset()
        {
            view = new QuantizedAgent[0];
            obstacles = new List<Obstacle>();
            LastRemoved.Clear();
            LastEntered = 0;
        }

        /// <summary>Applies s to the view. The new view is a fresh array (the old one is never
        /// modified, so it can be handed to another thread). Throws SnapshotMismatchException
        /// and changes nothing when s does not apply.</summary>
        public QuantizedAgent[] Apply(Snapshot s)
        {
            var entries = s.Entries;
            var next = new QuantizedAgent[entries.Count];
            int ix = 0, iy = 0, ivx = 0, ivy = 0, inew = 0;
            ulong id = 0;
            int entered = 0;
            int cursor = 0; // entries ascend, so the old view is searched forward only
            for (int i = 0; i < entries.Count; i++)
            {
                ulong delta = entries[i] >> EntryShift;
                int bits = (int)(entries[i] & BitsAll);
                if (delta == 0) throw new SnapshotMismatchException("ids not strictly ascending (or id 0)");
                id += delta;
                if (id > uint.MaxValue) throw new SnapshotMismatchException("id past 32 bits");
                var a = new QuantizedAgent();
                a.Id = (uint)id;
                if ((bits & BitNew) != 0)
                {
                    if (inew >= s.Radius.Count || inew >= s.Owner.Count)
                        throw new SnapshotMismatchException("radius/owner arrays too short");
                    a.Radius = s.Radius[inew];
                    a.Owner = s.Owner[inew];
                    inew++;
                    entered++;
                }
                else
                {
                    if (s.Keyframe) throw new SnapshotMismatchException("keyframe entry without the new bit");
                    while (cursor < view.Length && view[cursor].Id < a.Id) cursor++;
                    if (cursor >= view.Length || view[cursor].Id != a.Id)
                        throw new SnapshotMismatchException("delta for agent " + a.Id + " which the view lacks");
                    a = view[cursor];
                }
                // Differences wrap in 32 bits exactly as the C decoder's int64 -> int32 conversion.
                if ((bits & BitX) != 0)
                {
                    if (ix >= s.X.Count) throw new SnapshotMismatchException("x array too short");
                    a.X = unchecked((int)((long)a.X + s.X[ix++]));
                }
                if ((bits & BitY) != 0)
                {
                    if (iy >= s.Y.Count) throw new SnapshotMismatchException("y array too short");
                    a.Y = unchecked((int)((long)a.Y + s.Y[iy++]));
                }
                if ((bits & BitVx) != 0)
                {
                    if (ivx >= s.Vx.Count) throw new SnapshotMismatchException("vx array too short");
                    a.Vx = unchecked((int)((long)a.Vx + s.Vx[ivx++]));
                }
                if ((bits & BitVy) != 0)
                {
                    if (ivy >= s.Vy.Count) throw new SnapshotMismatchException("vy array too short");
                    a.Vy = unchecked((int)((long)a.Vy + s.Vy[ivy++]));
                }
                next[i] = a;
            }
            if (ix != s.X.Count || iy != s.Y.Count || ivx != s.Vx.Count || ivy != s.Vy.Count ||
                inew != s.Radius.Count || inew != s.Owner.Count)
                throw new SnapshotMismatchException("value arrays longer than the entries use");
            var removed = new List<uint>(s.RemovedIdDeltas.Count);
            ulong removedId = 0;
            foreach (uint d in s.RemovedIdDeltas)
            {
                if (d == 0) throw new SnapshotMismatchException("removed ids not strictly ascending");
                removedId += d;
                if (removedId > uint.MaxValue) throw new SnapshotMismatchException("removed id past 32 bits");
                removed.Add((uint)removedId);
            }
            foreach (var o in s.Obstacles)
                if (o.X.Count != o.Y.Count) throw new SnapshotMismatchException("obstacle x and y differ in length");

            // Everything checked: commit.
            view = next;
            if (s.ObstaclesChanged) obstacles = new List<Obstacle>(s.Obstacles);
            LastRemoved = removed;
            LastEntered = entered;
            return next;
        }

        /// <summary>Quantize as the server does (crowd_quantize): saturating at +-2^30, NaN gives 0.</summary>
        public static int Quantize(float value, float precision)
        {
            double scaled = (double)value * precision;
            if (double.IsNaN(scaled)) return 0;
            const double limit = 1073741824.0;
            if (scaled >= limit) return (int)limit;
            if (scaled <= -limit) return -(int)limit;
            return (int)Math.Round(scaled, MidpointRounding.ToEven); // lrint under the default rounding mode
        }
    }
}
