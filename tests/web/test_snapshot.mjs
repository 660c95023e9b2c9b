// test_snapshot.mjs — the viewer's snapshot decoder (clients/web/snapshot.js)
// against the C codec: protobufjs decodes each ServerMessage the C encoder made
// (from crowd.proto, as the page does) and applySnapshot must give exactly the
// view the C decoder gave. Usage: node test_snapshot.mjs VECTORS.jsonl WEB_DIR
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const [vectorsPath, webDir] = process.argv.slice(2);
const require = createRequire(path.join(webDir, 'package.json'));
const protobuf = require('protobufjs');
const { applySnapshot } = require(path.join(webDir, 'snapshot.js'));
const protoPath = path.join(webDir, '..', '..', 'proto', 'crowd.proto');

test('JS snapshot decoder matches the C decoder on every snapshot', async () => {
  const root = await protobuf.load(protoPath);
  const ServerMessage = root.lookupType('crowd.v1.ServerMessage');
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
