// test_snapshot.mjs — the JavaScript snapshot decoder (clients/js/src/snapshot.js,
// which the viewer uses) against the C codec: the package decodes each
// ServerMessage the C encoder made (from its embedded crowd.proto, as the page
// does) and applySnapshot must give exactly the view the C decoder gave.
// Usage: node test_snapshot.mjs VECTORS.jsonl CLIENTS_JS_DIR
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [vectorsPath, jsDir] = process.argv.slice(2);
const { applySnapshot, ServerMessage } = await import(pathToFileURL(path.resolve(jsDir, 'src', 'index.js')).href);

test('JS snapshot decoder matches the C decoder on every snapshot', async () => {
  const lines = readFileSync(vectorsPath, 'utf8').trim().split('\n');
  assert.ok(lines.length >= 50, 'enough vectors');
  let view = new Map();
  let sawKeyframe = 0, sawEntered = 0, sawRemoved = 0;
  for (const line of lines) {
    const v = JSON.parse(line);
    const msg = ServerMessage.decode(Buffer.from(v.hex, 'hex'));
    assert.equal(msg.msg, 'snapshot');
    assert.equal(Number(msg.snapshot.tick), v.tick);
    assert.equal(!!msg.snapshot.keyframe, v.keyframe);
    const r = applySnapshot(view, msg.snapshot);
    view = r.view;
    if (v.keyframe) sawKeyframe++;
    sawEntered += r.entered;
    sawRemoved += r.removed.length;
    const got = [...view.values()].map(a => [a.id, a.x, a.y, a.vx, a.vy, a.radius, a.owner]);
    assert.deepEqual(got, v.agents, `tick ${v.tick}`);
  }
  assert.ok(sawKeyframe >= 2 && sawEntered > 0 && sawRemoved > 0, 'the stream exercised keyframes, entries and removals');
});

test('a delta for an agent the view lacks is refused', async () => {
  assert.throws(() => applySnapshot(new Map(), { keyframe: false, entries: [5 * 32 + 1], x: [3] }));
  assert.throws(() => applySnapshot(new Map(), { keyframe: true, entries: [0 * 32 + 31] }));
});
