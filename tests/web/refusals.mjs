// What the CLI refuses before a run starts, the engine refuses with the same words and exit
// code: a run estimated at more than ten minutes (refuse_long_runs), runs that together would
// be, arrays too large to hold, a trace too long to keep (check_trace_request), --ditto with JSON,
// --show of an array the program lacks or with JSON (check_show_format, shown_arrays).
//   node tests/web/refusals.mjs build-wasm/playground path/to/toysim   (from the repository root)
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { loadEngine, requestFor, call } from './engine.mjs';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const engine = await loadEngine(path.resolve(process.argv[2]));
const toysim = path.resolve(process.argv[3]);
const commands = [
  ['run', 'programs/matmul_inner.toy', '--set', 'n=4096'],                      // about 21 minutes
  ['compare', 'programs/matmul_inner.toy', 'programs/matmul_outer.toy', '--set', 'n=3072'],  // 6 minutes each
  ['run', 'programs/p5_online_softmax.toy', '--set', 'n=1000000000000'],         // too large to hold
  ['run', 'programs/attention/fa2.toy', '--set', 'n=1000000', '--set', 'd=64', '--set', 'Br=64', '--set', 'Bc=64'],
  ['trace', 'programs/p1_c00.toy', '--max-steps', '1000000000000'],
  ['trace', 'programs/p1_c00.toy', '--ditto', '--format', 'json'],
  ['run', 'programs/p1_c00.toy', '--show', 'cc'],                               // did you mean c?
  ['run', 'programs/p1_c00.toy', '--show', 'c', '--format', 'json'],
];
let failed = 0;
for (const args of commands) {
  const cli = spawnSync(toysim, args, { cwd: root, encoding: 'utf8' });
  const { fn, request } = requestFor(args, root);
  const reply = call(engine, fn, request);
  const same = reply.code === cli.status && reply.err === cli.stderr && reply.out === cli.stdout;
  if (same && cli.status === 2 && cli.stderr.includes('error:')) {
    console.log(`ok   toysim ${args.join(' ')}: exit 2, ${cli.stderr.split('\n')[0]}`);
  } else {
    ++failed;
    console.log(`FAIL toysim ${args.join(' ')}\n  CLI:    exit ${cli.status}, ${JSON.stringify(cli.stderr)}\n  engine: exit ${reply.code}, ${JSON.stringify(reply.err)}`);
  }
}
console.log(`${commands.length - failed} of ${commands.length} refusals as the CLI's`);
process.exit(failed === 0 ? 0 : 1);
