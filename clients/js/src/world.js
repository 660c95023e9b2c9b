// world.js — the world as this client sees it: the agents of the last snapshot
// (delta-decoded by snapshot.js) in world units, the obstacles, and helpers to
// draw agents gliding between snapshots.
import { applySnapshot, num } from './snapshot.js';

export class World {
  constructor() {
    this.precision = 100;        // fixed-point units per world unit (Welcome.precision)
    this.interval = 1000 / 30;   // ms between snapshots: estimated from their arrival
    this.reset();
  }

  /** Forget everything (a new connection); the next snapshot must be a keyframe. */
  reset() {
    this.view = new Map();       // id -> agent in fixed point, as decoded
    this.agents = new Map();     // id -> {id, x, y, vx, vy, radius, owner, fromX, fromY} in world units
    this.obstacles = [];         // [{id, x: [], y: []}], the server's complete set
    this.tick = 0;
    this.stateHash = 0n;
    this.worldAgentCount = 0;
    this.keyframe = false;
    this.receivedAt = 0;
    this.snapshots = 0;
    this.keyframes = 0;
  }

  get size() { return this.agents.size; }

  /**
   * Apply one decoded crowd.v1.Snapshot received at `now` (ms, performance.now()).
   * Throws SnapshotError, leaving the world as it was, when it does not fit.
   */
  apply(snap, now = performance.now()) {
    const result = applySnapshot(this.view, snap);
    const p = this.precision;
    const agents = new Map();
    for (const [id, a] of result.view) {
      const old = this.agents.get(id);
      const x = a.x / p, y = a.y / p;
      let fromX = x, fromY = y;
      if (old) [fromX, fromY] = this.#at(old, now);
      agents.set(id, { id, x, y, vx: a.vx / p, vy: a.vy / p, radius: a.radius / p, owner: a.owner, fromX, fromY });
    }
    if (this.receivedAt) {
      const gap = now - this.receivedAt;
      if (gap > 0 && gap < 1000) this.interval = this.interval * 0.8 + gap * 0.2;
    }
    this.view = result.view;
    this.agents = agents;
    this.receivedAt = now;
    this.tick = num(snap.tick);
    this.stateHash = BigInt.asUintN(64, BigInt(String(snap.stateHash ?? 0)));
    this.worldAgentCount = snap.worldAgentCount || 0;
    this.keyframe = !!snap.keyframe;
    this.snapshots++;
    if (this.keyframe) this.keyframes++;
    if (snap.obstaclesChanged)
      this.obstacles = (snap.obstacles || []).map((o) => ({ id: o.id, x: [...(o.x || [])], y: [...(o.y || [])] }));
    return { removed: result.removed, entered: result.entered, keyframe: this.keyframe };
  }

  #at(a, now) {
    const t = Math.min(1, Math.max(0, (now - this.receivedAt) / this.interval));
    return [a.fromX + (a.x - a.fromX) * t, a.fromY + (a.y - a.fromY) * t];
  }

  /**
   * Where to draw agent `a` (or the agent with that id) at `now`: it glides from
   * where it was drawn when the last snapshot came to its new position over one
   * snapshot interval, so motion is smooth and never jumps back.
   */
  positionAt(a, now = performance.now()) {
    const agent = typeof a === 'number' ? this.agents.get(a) : a;
    if (!agent) return null;
    const [x, y] = this.#at(agent, now);
    return { x, y };
  }

  /** Calls fn(agent, x, y) for every agent at its interpolated position at `now`. */
  forEachAt(now, fn) {
    for (const a of this.agents.values()) {
      const [x, y] = this.#at(a, now);
      fn(a, x, y);
    }
  }

  /** Agents whose interpolated position at `now` lies in the rectangle. */
  agentsIn(rect, now = performance.now()) {
    const out = [];
    this.forEachAt(now, (a, x, y) => {
      if (x >= rect.minX && x <= rect.maxX && y >= rect.minY && y <= rect.maxY) out.push(a);
    });
    return out;
  }
}
