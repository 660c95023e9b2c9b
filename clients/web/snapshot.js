/* snapshot.js — applies one crowd.v1 Snapshot to the receiver's view, exactly as
 * proto/crowd.proto documents it (the C reference is proto/wire/src/snapshot.c).
 * Shared by the viewer (browser global `crowdSnapshot`) and the Node tests. */
(function (exports) {
  'use strict';

  var FIELD_X = 1, FIELD_Y = 2, FIELD_VX = 4, FIELD_VY = 8, FIELD_NEW = 16;

  // uint64 values arrive as numbers (no Long.js loaded) or as Long objects.
  function num(v) {
    if (typeof v === 'number') return v;
    if (v && typeof v.toNumber === 'function') return v.toNumber();
    return Number(v);
  }

  function arr(a) { return a || []; }

  /** An int32 sum that wraps like the C decoder's (int32_t)((int64_t)a + d). */
  function add32(a, d) { return (a + d) | 0; }

  /**
   * Apply `snap` (a decoded crowd.v1.Snapshot) to `view` (Map id -> agent, the
   * result of the previous snapshot; ignored for a keyframe). Returns a new Map
   * id -> {id, x, y, vx, vy, radius, owner} in fixed point, listing exactly the
   * agents of this snapshot, plus the removed ids. Throws on any inconsistency
   * (the caller then waits for a keyframe).
   */
  function applySnapshot(view, snap) {
    var keyframe = !!snap.keyframe;
    var entries = arr(snap.entries), xs = arr(snap.x), ys = arr(snap.y), vxs = arr(snap.vx), vys = arr(snap.vy);
    var radii = arr(snap.radius), owners = arr(snap.owner);
    var ix = 0, iy = 0, ivx = 0, ivy = 0, inew = 0;
    var next = new Map();
    var id = 0;
    for (var i = 0; i < entries.length; i++) {
      var e = num(entries[i]);
      var delta = Math.floor(e / 32);
      var bits = e % 32;
      if (delta === 0) throw new Error('snapshot: ids not ascending');
      id += delta;
      if (id > 0xffffffff) throw new Error('snapshot: id out of range');
      var a;
      if (bits & FIELD_NEW) {
        if (inew >= radii.length || inew >= owners.length) throw new Error('snapshot: missing radius/owner');
        a = { id: id, x: 0, y: 0, vx: 0, vy: 0, radius: num(radii[inew]), owner: num(owners[inew]) };
        inew++;
      } else {
        var o = keyframe ? undefined : view.get(id);
        if (!o) throw new Error('snapshot: delta for unknown agent ' + id);
        a = { id: id, x: o.x, y: o.y, vx: o.vx, vy: o.vy, radius: o.radius, owner: o.owner };
      }
      if (bits & FIELD_X) { if (ix >= xs.length) throw new Error('snapshot: x short'); a.x = add32(a.x, xs[ix++]); }
      if (bits & FIELD_Y) { if (iy >= ys.length) throw new Error('snapshot: y short'); a.y = add32(a.y, ys[iy++]); }
      if (bits & FIELD_VX) { if (ivx >= vxs.length) throw new Error('snapshot: vx short'); a.vx = add32(a.vx, vxs[ivx++]); }
      if (bits & FIELD_VY) { if (ivy >= vys.length) throw new Error('snapshot: vy short'); a.vy = add32(a.vy, vys[ivy++]); }
      next.set(id, a);
    }
    if (ix !== xs.length || iy !== ys.length || ivx !== vxs.length || ivy !== vys.length ||
        inew !== radii.length || inew !== owners.length)
      throw new Error('snapshot: arrays of the wrong length');
    var removed = [];
    var rid = 0;
    var deltas = arr(snap.removedIdDeltas);
    for (var k = 0; k < deltas.length; k++) {
      var d = num(deltas[k]);
      if (d === 0) throw new Error('snapshot: removed ids not ascending');
      rid += d;
      removed.push(rid);
    }
    return { view: next, removed: removed, entered: inew };
  }

  exports.applySnapshot = applySnapshot;
  exports.FIELD_X = FIELD_X;
  exports.FIELD_Y = FIELD_Y;
  exports.FIELD_VX = FIELD_VX;
  exports.FIELD_VY = FIELD_VY;
  exports.FIELD_NEW = FIELD_NEW;
})(typeof module !== 'undefined' && module.exports ? module.exports : (this.crowdSnapshot = {}));
