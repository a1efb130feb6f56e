// Smoke test for slugify-js.wasm under Node (run by build.sh --check): the component, transpiled
// by `jco transpile --instantiation async`, is instantiated with a `log` import (it imports
// nothing else) and `describe` and `call` are called as the gateway would.
// Usage: node smoke.mjs path/to/transpiled/component.js
// No limits apply here: the gateway's memory and fuel limits are in plugin.toml.

import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';

const transpiled = process.argv[2];
const { instantiate } = await import(pathToFileURL(transpiled).href);
const logged = [];
const log = { log: (level, message) => logged.push(`${level}: ${message}`) };
// Under both names: the generated code asks for the one without the version.
const imports = {};
for (const version of ['', '@0.1.0']) {
  imports[`airlock:plugin/log${version}`] = log;
  imports[`airlock:plugin/types${version}`] = {};
}
const started = Date.now();
const component = await instantiate(
  async (path) => WebAssembly.compile(await readFile(join(dirname(transpiled), path))),
  imports,
);
console.log(`instantiated in ${Date.now() - started} ms`);

const [spec, ...others] = component.describe();
assert.equal(others.length, 0);
assert.equal(spec.name, 'slugify');
assert.equal(spec.parallelSafe, true);
assert.deepEqual(JSON.parse(spec.parameters).required, ['text']);
console.log(`describe: ${spec.name}: ${spec.description}`);

// The host-side bindings return a result's `ok` and throw its `err` as `payload`.
function call(name, args) {
  try {
    return { ok: component.call(name, JSON.stringify(args)) };
  } catch (e) {
    if (e.payload === undefined) throw e;
    return { err: e.payload };
  }
}

const cases = [
  [{ text: 'Crème Brûlée, 2nd ed.' }, 'creme-brulee-2nd-ed'],
  [{ text: "  Don't Stop — Believin’!  " }, 'dont-stop-believin'],
  [{ text: 'Straße Æsir Øresund Łódź', lowercase: false }, 'Strasse-AEsir-Oresund-Lodz'],
  [{ text: 'Tiếng Việt có dấu', separator: '_' }, 'tieng_viet_co_dau'],
  [{ text: 'one two three four', maxLength: 9 }, 'one-two'],
  [{ text: 'Привет 2024' }, '2024'],
];
for (const [args, slug] of cases) {
  assert.deepEqual(call('slugify', args), { ok: JSON.stringify({ slug }) }, JSON.stringify(args));
}
console.log(`call: ${cases.length} slugs as expected`);

const bad = [{ txt: 1 }, { text: 1 }, { text: 'a', separator: 'x' }, { text: 'a', maxLength: 0 }];
for (const args of bad) {
  const { err } = call('slugify', args);
  assert.equal(err?.tag, 'bad-arguments', JSON.stringify(args));
}
assert.equal(call('slugify', { text: 'x'.repeat(10_001) }).err?.tag, 'bad-arguments');
assert.equal(call('nope', {}).err?.tag, 'failed');
console.log(`call: ${bad.length + 2} bad calls refused (${call('slugify', bad[0]).err.val})`);
assert.ok(logged.length > 0 && logged[0].startsWith('info: call slugify'), logged[0]);
console.log(`log: ${logged.length} lines, e.g. "${logged[0]}"`);
console.log('smoke test passed');
