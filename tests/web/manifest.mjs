// The golden manifest (traces/MANIFEST) under node with the browser's engine: every line's
// output byte for byte, as tests/test_traces.cpp checks the native CLI. A line the engine
// cannot run (a GPU measurement) is listed as skipped, with why.
//   node tests/web/manifest.mjs build-wasm/playground   (from the repository root)
import fs from 'node:fs';
import path from 'node:path';
import { loadEngine, requestFor, call } from './engine.mjs';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const engine = await loadEngine(path.resolve(process.argv[2]));
let passed = 0, failed = 0;
const skipped = [];
for (const line of fs.readFileSync(path.join(root, 'traces/MANIFEST'), 'utf8').split('\n')) {
  if (line.trim() === '' || line.startsWith('#')) continue;
  const [file, ...args] = line.trim().split(/\s+/);
  const call_ = requestFor(args, root);
  if (call_.skip) {
    skipped.push(`${file}: ${call_.skip}`);
    continue;
  }
  const golden = fs.readFileSync(path.join(root, 'traces', file), 'utf8');
  const t0 = performance.now();
  const reply = call(engine, call_.fn, call_.request);
  const ms = (performance.now() - t0).toFixed(0);
  if (reply.out === golden && reply.code === 0 && reply.err === '') {
    ++passed;
    console.log(`ok   ${file} (${ms} ms)`);
    continue;
  }
  ++failed;
  const want = golden.split('\n'), got = reply.out.split('\n');
  const at = want.findIndex((l, k) => l !== got[k]);
  console.log(`FAIL ${file}: toysim ${args.join(' ')}\n  exit ${reply.code}, stderr: ${JSON.stringify(reply.err)}`);
  console.log(`  first difference at line ${at + 1}\n  golden: ${want[at]}\n  engine: ${got[at]}`);
}
for (const s of skipped) console.log(`skip ${s}`);
console.log(`${passed} passed, ${failed} failed, ${skipped.length} skipped (the manifest's GPU lines)`);
// Every line but the GPU ones is run: at least the 20 of the manifest today.
process.exit(failed === 0 && passed >= 20 ? 0 : 1);
