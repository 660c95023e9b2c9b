// test_version.mjs — one version number for the project: CMake's
// project(crowd VERSION x.y.z) (the server's), the JavaScript package's
// (package.json and its lock file) and the Unity package's.
// Usage: node --test test_version.mjs  (CROWD_SOURCE_DIR defaults to the repository)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const top = process.env.CROWD_SOURCE_DIR || path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const read = (f) => readFileSync(path.join(top, f), 'utf8');

test('the JS package, its lock file and the Unity package carry CMake\'s project version', () => {
  const m = /^\s*project\(\s*crowd\s+VERSION\s+(\d+\.\d+\.\d+)\b/m.exec(read('CMakeLists.txt'));
  assert.ok(m, 'project(crowd VERSION x.y.z) in CMakeLists.txt');
  const version = m[1];
  const js = JSON.parse(read('clients/js/package.json'));
  const lock = JSON.parse(read('clients/js/package-lock.json'));
  const unity = JSON.parse(read('clients/unity/package.json'));
  assert.equal(js.name, '@crowd-sim/client');
  assert.equal(js.version, version, 'clients/js/package.json');
  assert.equal(lock.version, version, 'clients/js/package-lock.json');
  assert.equal(lock.packages[''].version, version, 'clients/js/package-lock.json packages[""]');
  assert.equal(unity.version, version, 'clients/unity/package.json');
});
