// test_enums.mjs — index.d.ts against proto/crowd.proto: every enum of the proto
// (read by protobufjs from the proto file itself, not the package's embedded
// copy) is declared in index.d.ts with exactly its names and values, with a type
// of the same name; the fields that carry them are typed by them. A value added
// to the proto fails this test until index.d.ts has it too.
// Usage: node --test test_enums.mjs  (CROWD_JS_DIR, CROWD_PROTO default to the repository's)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const jsDir = process.env.CROWD_JS_DIR || path.join(here, '..', '..', 'clients', 'js');
const protoPath = process.env.CROWD_PROTO || path.join(here, '..', '..', 'proto', 'crowd.proto');
const require = createRequire(path.join(jsDir, 'package.json'));
const protobuf = require('protobufjs');
const ts = require('typescript');

/** {EnumName: {VALUE_NAME: number}} for every enum anywhere in the proto. */
function protoEnums() {
  const root = protobuf.parse(readFileSync(protoPath, 'utf8'), { keepCase: true }).root;
  const out = {};
  const walk = (ns) => {
    for (const item of ns.nestedArray || []) {
      if (item instanceof protobuf.Enum) out[item.name] = { ...item.values };
      else walk(item);
    }
  };
  walk(root);
  return out;
}

/** What index.d.ts declares: enum-like consts, type aliases, interface and class members' types. */
function declarations() {
  const file = path.join(jsDir, 'index.d.ts');
  const sf = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
  const consts = {}, aliases = {}, members = {};
  const literalMembers = (type) => {
    // Readonly<{ A: 0; B: 1 }> or { A: 0; B: 1 }
    if (ts.isTypeReferenceNode(type) && type.typeName.getText(sf) === 'Readonly' && type.typeArguments?.length === 1)
      type = type.typeArguments[0];
    if (!ts.isTypeLiteralNode(type)) return null;
    const values = {};
    for (const m of type.members) {
      if (!ts.isPropertySignature(m) || !m.type || !ts.isLiteralTypeNode(m.type) || !ts.isNumericLiteral(m.type.literal))
        throw new Error(`index.d.ts: ${m.getText(sf)}: not NAME: NUMBER`);
      values[m.name.getText(sf)] = Number(m.type.literal.text);
    }
    return values;
  };
  for (const st of sf.statements) {
    if (ts.isVariableStatement(st)) {
      for (const d of st.declarationList.declarations) {
        const values = d.type && literalMembers(d.type);
        if (values) consts[d.name.getText(sf)] = values;
      }
    } else if (ts.isTypeAliasDeclaration(st)) {
      aliases[st.name.text] = st.type.getText(sf).replace(/\s+/g, ' ');
    } else if (ts.isInterfaceDeclaration(st) || ts.isClassDeclaration(st)) {
      const m = (members[st.name.text] = {});
      for (const x of st.members) if (x.name && x.type) m[x.name.getText(sf)] = x.type.getText(sf);
    }
  }
  return { consts, aliases, members };
}

const enums = protoEnums();
const decl = declarations();

test('the proto has the enums this test knows of (the parse worked)', () => {
  for (const name of ['ErrorCode', 'Role', 'SteerMode', 'AgentEventKind']) assert.ok(enums[name], name);
  assert.equal(enums.ErrorCode.ERROR_LIMIT_COST, 27);
});

for (const [name, values] of Object.entries(protoEnums())) {
  test(`enum ${name}: index.d.ts has the proto's names and values, and a type ${name}`, () => {
    assert.deepEqual(decl.consts[name], values, `index.d.ts's ${name} differs from proto/crowd.proto's`);
    assert.equal(decl.aliases[name], `(typeof ${name})[keyof typeof ${name}]`, `type ${name}`);
  });
}

test('the runtime enums are the proto\'s too (the embedded copy is current)', async () => {
  const { pathToFileURL } = await import('node:url');
  const crowd = await import(pathToFileURL(path.join(jsDir, 'src', 'index.js')).href);
  for (const name of ['ErrorCode', 'Role', 'SteerMode', 'AgentEventKind']) assert.deepEqual({ ...crowd[name] }, enums[name], name);
});

test('fields that carry an enum are typed by it, not number', () => {
  const m = decl.members;
  assert.equal(m.AgentSpec.steer, 'SteerMode');
  assert.equal(m.Welcome.role, 'Role');
  assert.equal(m.CrowdClient.role, 'Role');
  assert.equal(m.AgentEvent.kind, 'AgentEventKind');
  const names = Object.keys(enums.AgentEventKind).map((k) => `'${k.replace(/^AGENT_EVENT_/, '')}'`).join(' | ');
  assert.equal(decl.aliases.AgentEventKindName, names);
});
