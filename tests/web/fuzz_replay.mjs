// The fuzz corpus and past crashes (tests/fuzz/corpus, tests/fuzz/crashes) replayed through the
// browser's engine under node: each input as a program (params, cost, trace, run, view, a
// stepping session) and, read as an exercise spec, with its second part (after a "%%" line) as a
// solution to grade, as tests/fuzz/one_input.h splits it. Bad input must come back as a reply
// with exit code 2 and its message; a trap in the engine (a crash of the page's worker) or an
// internal error (exit 3) fails the test.
//   node tests/web/fuzz_replay.mjs build-wasm/playground   (from the repository root)
import fs from 'node:fs';
import path from 'node:path';
import { loadEngine, call } from './engine.mjs';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const engine = await loadEngine(path.resolve(process.argv[2]));
const kRunSteps = 20000, kTraceSteps = 500;  // as the native replay's limits (one_input.h)

function split(input) {
  if (input.startsWith('%%\n')) return ['', input.slice(3)];
  const at = input.indexOf('\n%%\n');
  return at < 0 ? [input, ''] : [input.slice(0, at + 1), input.slice(at + 4)];
}

const counts = { inputs: 0, calls: 0, ok: 0, bad_input: 0, located: 0 };
const failures = [];
for (const dir of ['tests/fuzz/corpus', 'tests/fuzz/crashes']) {
  for (const name of fs.readdirSync(path.join(root, dir)).sort()) {
    const input = fs.readFileSync(path.join(root, dir, name), 'latin1');
    if (input.length > 4096) continue;  // as the fuzz target: longer inputs are refused
    ++counts.inputs;
    const [program, second] = split(input);
    const base = { path: 'fuzz.toy', text: program };
    const calls = [
      ['params', base], ['cost', { ...base, format: 'json' }], ['cost', base],
      ['trace', { ...base, max_steps: kTraceSteps }], ['trace', { ...base, max_steps: kTraceSteps, format: 'json' }],
      ['run', { ...base, max_steps: kRunSteps, format: 'json' }], ['view', { ...base, max_steps: kTraceSteps }],
      ['sessionOpen', { ...base, max_steps: kRunSteps }], ['sessionMove', { how: 'forward', n: 5 }],
      ['sessionMove', { how: 'backward', n: 2 }], ['sessionMove', { how: 'goto', n: 3 }],
      ['grade', { spec_path: 'fuzz.toy', spec: program, path: 'solution.toy', text: second, format: 'json' }],
    ];
    let opened = true;
    for (const [fn, request] of calls) {
      if (fn === 'sessionMove' && !opened) continue;
      ++counts.calls;
      let reply;
      try {
        reply = call(engine, fn, request);
      } catch (e) {
        failures.push(`${dir}/${name}: ${fn} trapped: ${e}`);
        break;
      }
      if (fn === 'sessionOpen') opened = reply.code === 0;
      if (reply.code === 3 || ![0, 1, 2].includes(reply.code)) failures.push(`${dir}/${name}: ${fn}: exit ${reply.code}: ${reply.err}`);
      else if (reply.code === 2) {
        ++counts.bad_input;
        if (!reply.err.includes('error')) failures.push(`${dir}/${name}: ${fn}: exit 2 without a message`);
        if (reply.loc) ++counts.located;
      } else ++counts.ok;
    }
  }
}
console.log(JSON.stringify(counts));
for (const f of failures) console.log(`FAIL ${f}`);
// The corpus has both kinds: programs that run and inputs that are bad at a located place.
const ok = failures.length === 0 && counts.inputs >= 100 && counts.ok > 0 && counts.located > 0;
console.log(ok ? 'every input answered without a crash' : 'FAILED');
process.exit(ok ? 0 : 1);
