// snapshot.js — applies one crowd.v1 Snapshot to the receiver's view, exactly as
// proto/crowd.proto documents it (the C reference is proto/wire/src/snapshot.c).
// The one JavaScript implementation: the client's World and the viewer use it.

export const FIELD_X = 1, FIELD_Y = 2, FIELD_VX = 4, FIELD_VY = 8, FIELD_NEW = 16;

/** A uint64 as a number: protobufjs gives numbers, or Long objects when long.js is loaded. */
export function num(v) {
  if (typeof v === 'number') return v;
  if (v && typeof v.toNumber === 'function') return v.toNumber();
  return Number(v);
}

function arr(a) { return a || []; }

/** An int32 sum that wraps like the C decoder's (int32_t)((int64_t)a + d). */
function add32(a, d) { return (a + d) | 0; }

/** A snapshot that does not fit the view it is applied to; the cure is a keyframe. */
export class SnapshotError extends Error {
  constructor(message) { super('snapshot: ' + message); this.name = 'SnapshotError'; }
}

/**
 * Apply `snap` (a decoded crowd.v1.Snapshot) to `view` (Map id -> agent, the
 * result of the previous snapshot; ignored for a keyframe). Returns a new Map
 * id -> {id, x, y, vx, vy, radius, owner} in fixed point, listing exactly the
 * agents of this snapshot, the removed ids, and how many agents entered.
 * Throws SnapshotError on any inconsistency (the caller then asks for a keyframe).
 */
export function applySnapshot(view, snap) {
  const keyframe = !!snap.keyframe;
  const entries = arr(snap.entries), xs = arr(snap.x), ys = arr(snap.y), vxs = arr(snap.vx), vys = arr(snap.vy);
  const radii = arr(snap.radius), owners = arr(snap.owner);
  let ix = 0, iy = 0, ivx = 0, ivy = 0, inew = 0;
  const next = new Map();
  let id = 0;
  for (let i = 0; i < entries.length; i++) {
    const e = num(entries[i]);
    const delta = Math.floor(e / 32);
    const bits = e % 32;
    if (delta === 0) throw new SnapshotError('ids not ascending');
    id += delta;
    if (id > 0xffffffff) throw new SnapshotError('id out of range');
    let a;
    if (bits & FIELD_NEW) {
      if (inew >= radii.length || inew >= owners.length) throw new SnapshotError('missing radius/owner');
      a = { id, x: 0, y: 0, vx: 0, vy: 0, radius: num(radii[inew]), owner: num(owners[inew]) };
      inew++;
    } else {
      const o = keyframe ? undefined : view.get(id);
      if (!o) throw new SnapshotError('delta for unknown agent ' + id);
      a = { id, x: o.x, y: o.y, vx: o.vx, vy: o.vy, radius: o.radius, owner: o.owner };
    }
    if (bits & FIELD_X) { if (ix >= xs.length) throw new SnapshotError('x short'); a.x = add32(a.x, xs[ix++]); }
    if (bits & FIELD_Y) { if (iy >= ys.length) throw new SnapshotError('y short'); a.y = add32(a.y, ys[iy++]); }
    if (bits & FIELD_VX) { if (ivx >= vxs.length) throw new SnapshotError('vx short'); a.vx = add32(a.vx, vxs[ivx++]); }
    if (bits & FIELD_VY) { if (ivy >= vys.length) throw new SnapshotError('vy short'); a.vy = add32(a.vy, vys[ivy++]); }
    next.set(id, a);
  }
  if (ix !== xs.length || iy !== ys.length || ivx !== vxs.length || ivy !== vys.length ||
      inew !== radii.length || inew !== owners.length)
    throw new SnapshotError('arrays of the wrong length');
  const removed = [];
  let rid = 0;
  const deltas = arr(snap.removedIdDeltas);
  for (let k = 0; k < deltas.length; k++) {
    const d = num(deltas[k]);
    if (d === 0) throw new SnapshotError('removed ids not ascending');
    rid += d;
    removed.push(rid);
  }
  return { view: next, removed, entered: inew };
}
