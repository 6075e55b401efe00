// The playground page (build-wasm/playground) in headless Chromium, served from a local static
// server, against the native CLI (BUILD_DIR/toysim): Problem 1's trace and run, a mistake's
// located error underlined and its line marked in the editor, the stepper forward 5 and back 2;
// P5's stepper forward, back and to a step with the editor's marked line, the register grid,
// the DRAM cells and the step's outline as the trace says, a tiled program's tiles, and the
// line of a run's fault; FA2 at n = 256, a known-wrong P2 solution graded, the step limit's
// message, Stop during a long run, a shared link; and, as a benchmark only, the load time and
// P5 at n = 10^6 against the native CLI. No request may leave the origin and no console error
// may appear.
//   tests/browser/run.sh BUILD_DIR tests/web/browser.mjs build-wasm/playground
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { buildDir, chromiumPath, loadPlaywright, repo, toysim, workDir } from '../browser/lib.mjs';
import { call, loadEngine } from './engine.mjs';

const build = buildDir();
const playground = path.resolve(process.argv[3]);
const out = path.join(workDir(build), 'out');
let failures = 0;
function check(ok, what, detail = '') {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}${!ok && detail ? `\n  ${detail}` : ''}`);
  if (!ok) ++failures;
}

// ---- the engine itself grades as the CLI does, hidden tests included (every format, byte for byte) ----

{
  const engine = await loadEngine(playground);
  const spec = 'programs/exercises/p2_matmul_3reg/exercise.toy';
  for (const name of fs.readdirSync(path.join(repo, 'tests/exercises/p2_matmul_3reg')).sort()) {
    const solution = `tests/exercises/p2_matmul_3reg/${name}`;
    for (const format of ['table', 'json', 'gradescope']) {
      const reply = call(engine, 'grade', { spec_path: spec, spec: fs.readFileSync(path.join(repo, spec), 'utf8'), exercise: 'p2_matmul_3reg',
                                            path: solution, text: fs.readFileSync(path.join(repo, solution), 'utf8'), format });
      const cli = toysim(build, ['grade', 'programs/exercises/p2_matmul_3reg', solution, '--format', format], { allowFail: true });
      check(reply.out === cli.stdout && reply.code === cli.code, `the engine grades ${name} (--format ${format}) as the CLI`);
    }
  }
}

// ---- a static server for the folder, as `python3 -m http.server` would serve it ----

const types = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.json': 'application/json', '.wasm': 'application/wasm' };
const served = [];
const server = http.createServer((req, res) => {
  const file = path.join(playground, decodeURIComponent(new URL(req.url, 'http://x').pathname));
  if (!file.startsWith(playground) || !fs.existsSync(file) || fs.statSync(file).isDirectory()) {
    res.writeHead(404).end();
    return;
  }
  served.push(req.url);
  res.writeHead(200, { 'Content-Type': types[path.extname(file)] || 'application/octet-stream' });
  fs.createReadStream(file).pipe(res);
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const origin = `http://127.0.0.1:${server.address().port}`;

// ---- Chromium: a fresh profile, nothing in the background that would reach the network ----

const { chromium } = loadPlaywright(build);
const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'toysim-playground-'));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: chromiumPath, headless: true, viewport: { width: 1400, height: 900 },
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
         '--disable-component-update', '--disable-sync'],
});
const page = context.pages()[0] ?? await context.newPage();
const outside = [], consoleErrors = [];
context.on('request', (r) => { if (!r.url().startsWith(origin) && !r.url().startsWith('about:') && !r.url().startsWith('data:')) outside.push(r.url()); });
page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
page.on('pageerror', (e) => consoleErrors.push(String(e)));

const text = (selector) => page.locator(selector).textContent();
const setEditor = (value) => page.evaluate((v) => document.querySelector('.CodeMirror').CodeMirror.setValue(v), value);
async function choose(value) {
  await page.selectOption('#examples', value);
  await page.waitForFunction(() => document.querySelector('#param-fields').dataset.ready === 'yes');
}
// Clicks a button and waits for the call to finish (the buttons come back).
async function press(id) {
  await page.click(`#${id}`);
  await page.waitForFunction(() => !document.querySelector('#run').disabled, null, { timeout: 120000 });
}
// The editor's lines (1-based) that carry a background class, as CodeMirror holds them, and
// whether CodeMirror drew that class on screen.
const markedLines = (className) => page.evaluate((c) => {
  const cm = document.querySelector('.CodeMirror').CodeMirror, lines = [];
  cm.eachLine((h) => { if ((h.bgClass ?? '').split(' ').includes(c)) lines.push(cm.getLineNumber(h) + 1); });
  return { lines, drawn: document.querySelectorAll(`.CodeMirror-linebackground.${c}`).length };
}, className);
// A stepper move (forward, back or go to N) and the step it lands on.
async function move(button, n, step) {
  await page.fill('#step-count', String(n));
  await page.click(`#${button}`);
  await page.waitForFunction((k) => document.querySelector('#machine').dataset.step === String(k), step);
}
// The register grid: name → the value its box shows, and the boxes marked as the step's.
const registerGrid = () => page.evaluate(() => ({
  values: Object.fromEntries([...document.querySelectorAll('#regs .reg')].map((b) => [b.querySelector('.rn').textContent, b.querySelector('.rv').textContent])),
  changed: [...document.querySelectorAll('#regs .reg.changed .rn')].map((n) => n.textContent),
}));
// The trace's registers after a step, with those not written yet shown empty, as the grid shows them.
const traceRegisters = (steps, k, names) => Object.fromEntries(names.map((n) => [n, steps[k - 1]?.registers?.[n] ?? '']));
// The DRAM grids of 1-D arrays of up to 256 elements (a cell each): per array each cell's
// [reads, writes], and per outline box the cells it encloses on screen and whether it is a write's.
const dramShown = () => page.evaluate(() => ({
  cells: Object.fromEntries([...document.querySelectorAll('#arrays .arr')].map((a) => [a.id.slice(6), [...a.querySelectorAll('.c')].map((c) => [+c.dataset.reads, +c.dataset.writes])])),
  boxes: [...document.querySelectorAll('#arrays .box')].map((b) => {
    const box = b.getBoundingClientRect();
    const inside = [...b.parentElement.querySelectorAll('.c')].filter((c) => {
      const r = c.getBoundingClientRect(), x = r.x + r.width / 2, y = r.y + r.height / 2;
      return x > box.left && x < box.right && y > box.top && y < box.bottom;
    });
    return { write: b.classList.contains('write'), cells: inside.map((c) => `${c.dataset.array}[${c.dataset.col}]`) };
  }),
}));
// The same from the trace's first k steps: reads and writes per element so far, and step k's accesses.
function traceDram(trace, arrays, k) {
  const cells = Object.fromEntries(arrays.map((a) => [a.name, Array.from({ length: a.dims[0] }, () => [0, 0])]));
  for (const s of trace.steps.slice(0, k)) for (const a of s.dram) {
    if (a.access !== 'write') cells[a.array][a.index[0]][0]++;
    if (a.access !== 'read') cells[a.array][a.index[0]][1]++;
  }
  const boxes = (trace.steps[k - 1]?.dram ?? []).map((a) => ({ write: a.access !== 'read', cells: [`${a.array}[${a.index[0]}]`] }));
  return { cells, boxes };
}

try {
  // ---- load: interactive once the engine says ready ----
  const t0 = Date.now();
  await page.goto(`${origin}/index.html`);
  await page.waitForFunction(() => document.querySelector('#status').textContent === 'ready');
  const loadMs = Date.now() - t0;
  console.log(`first interactive load: ${loadMs} ms (the issue's aim: under 2 s)`);

  // ---- Problem 1: the trace and the run, as the CLI prints them ----
  await choose('program:programs/p1_c00.toy');
  await press('trace');
  const trace = await text('#output');
  check(trace === toysim(build, ['trace', 'programs/p1_c00.toy']).stdout, 'Trace of Problem 1 is the CLI\'s, byte for byte');
  check(trace.includes('   6  MAC R0, R1, R2, R2  a01  b10  c00'), 'its row 6 is MAC R0, R1, R2, R2 with a01  b10  c00');
  // The editor colours the ISA table's opcodes (the engine's words): MAC_Z whole, not MAC.
  const opcodes = await page.locator('.CodeMirror .cm-opcode').allTextContents();
  check(opcodes.includes('MAC_Z') && opcodes.includes('LOAD') && opcodes.includes('STORE') && !opcodes.includes('MAC_'),
        'the editor marks the opcodes LOAD, STORE and MAC_Z', opcodes.join(' '));
  await press('run');
  check(await text('#output') === toysim(build, ['run', 'programs/p1_c00.toy']).stdout, 'Run of Problem 1 is the CLI\'s, byte for byte');
  const frame = page.frameLocator('#viewer');
  await page.waitForSelector('#viewer:not([hidden])');
  check(/toysim/.test(await page.locator('#viewer').getAttribute('srcdoc') ?? ''), 'the viewer of toysim view shows the run');
  check(await frame.locator('body').count() === 1, 'the viewer\'s page opened in its frame');

  // ---- a mistake: the located error, underlined ----
  const original = fs.readFileSync(path.join(repo, 'programs/p1_c00.toy'), 'utf8');
  const mistaken = original.replace('MAC_Z R0, R1, R2', 'MAC_Z R0, R1, R7');
  await setEditor(mistaken);
  await press('trace');
  const bad = path.join(out, 'p1_mistake.toy');
  fs.writeFileSync(bad, mistaken);
  const cli = toysim(build, ['trace', bad], { allowFail: true });
  const pageError = await text('#error');
  check(cli.code === 2 && pageError === cli.stderr.replaceAll(bad, 'programs/p1_c00.toy'),
        'the mistake\'s error is the CLI\'s (the path aside)', `page: ${pageError}\ncli: ${cli.stderr}`);
  const [, line, col] = cli.stderr.match(/:(\d+):(\d+): error/);
  const mark = page.locator('.CodeMirror-code .toy-error');
  check(await mark.count() === 1 && await mark.textContent() === 'R7', 'R7 is underlined in the editor');
  const markedLine = await page.evaluate(() => {
    const cm = document.querySelector('.CodeMirror').CodeMirror;
    const found = cm.getAllMarks()[0].find();
    return [found.from.line + 1, found.from.ch + 1];
  });
  check(markedLine[0] === Number(line) && markedLine[1] === Number(col), `the underline is at line ${line}, column ${col}`,
        `got ${markedLine}`);
  const errorLine = await markedLines('toy-error-line');
  check(JSON.stringify(errorLine.lines) === `[${line}]` && errorLine.drawn === 1, `the error's line ${line} is marked in the editor`,
        JSON.stringify(errorLine));

  // ---- the stepper: forward 5, back 2: the registers at step 3 ----
  await choose('program:programs/p1_c00.toy');
  await press('step');
  check((await markedLines('toy-error-line')).lines.length === 0, 'a fresh Step leaves no error line marked');
  await move('step-forward', 5, 5);
  await move('step-back', 2, 3);
  const p1Trace = JSON.parse(toysim(build, ['trace', 'programs/p1_c00.toy', '--format', 'json']).stdout);
  const stepThree = p1Trace.steps[2].registers;
  const registers = Object.fromEntries(Object.entries((await registerGrid()).values).filter(([, v]) => v !== ''));
  check(JSON.stringify(registers) === JSON.stringify(stepThree), 'after forward 5 and back 2, the registers are the trace\'s at step 3',
        `page ${JSON.stringify(registers)}, trace ${JSON.stringify(stepThree)}`);

  // ---- P5's stepper: the editor marks the step's line; the grid shows the trace's registers ----
  // The issue's case: step 17 of P5 is line 38. Each position is checked against the trace.
  const p5Path = 'programs/p5_online_softmax.toy';
  const p5Trace = JSON.parse(toysim(build, ['trace', p5Path, '--format', 'json']).stdout);
  const p5Names = p5Trace.registers;
  await choose(`program:${p5Path}`);
  await press('step');
  let marked = await markedLines('toy-next');
  check(JSON.stringify(marked.lines) === `[${p5Trace.steps[0].line}]` && marked.drawn === 1,
        `at step 0 the editor marks line ${p5Trace.steps[0].line}, the first instruction's, as next`, JSON.stringify(marked));
  // P5's arrays, x[n] and out[n], as the engine describes them (one element a cell at n = 4).
  const p5Arrays = [{ name: 'x', dims: [4] }, { name: 'out', dims: [4] }];
  for (const [button, n, step] of [['step-forward', 17, 17], ['step-back', 5, 12], ['step-goto', 42, 42], ['step-forward', 1, 43], ['step-forward', 100, 52]]) {
    await move(button, n, step);
    const want = p5Trace.steps[step - 1];
    marked = await markedLines('toy-step');
    check(JSON.stringify(marked.lines) === `[${want.line}]` && marked.drawn === 1 && (await markedLines('toy-next')).lines.length === 0,
          `${button.slice(5)} ${n} to step ${step}: the editor marks line ${want.line} and no other`, JSON.stringify(marked));
    check((await text('#output')).includes(`${p5Path}:${want.line}\n`), `step ${step}: the text pane names ${p5Path}:${want.line}`);
    const grid = await registerGrid();
    check(JSON.stringify(grid.values) === JSON.stringify(traceRegisters(p5Trace.steps, step, p5Names)),
          `step ${step}: the register grid shows the trace's registers`,
          `page ${JSON.stringify(grid.values)}, trace ${JSON.stringify(want.registers)}`);
    const wrote = (want.writes ?? []).filter((w) => w.register).map((w) => w.register);
    check(JSON.stringify(grid.changed) === JSON.stringify(wrote), `step ${step}: the box of ${wrote.join(', ') || 'no register'} is marked as written`,
          JSON.stringify(grid.changed));
    const dram = await dramShown(), expected = traceDram(p5Trace, p5Arrays, step);
    check(JSON.stringify(dram.cells) === JSON.stringify(expected.cells), `step ${step}: x's and out's cells hold the trace's reads and writes so far`,
          `page ${JSON.stringify(dram.cells)}, trace ${JSON.stringify(expected.cells)}`);
    check(JSON.stringify(dram.boxes) === JSON.stringify(expected.boxes),
          `step ${step}: the step's access is outlined on its cell (${expected.boxes.map((b) => b.cells).join(', ') || 'none'})`, JSON.stringify(dram.boxes));
  }
  check(p5Trace.steps[16].line === 38, 'P5\'s step 17 is line 38, as the issue says');
  check((await text('#step-at')) === 'step 52 of 52', 'forward 100 from step 43 stops at the end, step 52');
  // Back to the start: the next instruction's line again, no register written.
  await move('step-goto', 0, 0);
  marked = await markedLines('toy-next');
  check(JSON.stringify(marked.lines) === `[${p5Trace.steps[0].line}]` && (await markedLines('toy-step')).lines.length === 0,
        'go to 0: the first instruction\'s line is marked as next again', JSON.stringify(marked));
  check(Object.values((await registerGrid()).values).every((v) => v === ''), 'go to 0: no register written');

  // ---- a tiled program's tiles: each heatmap holds the trace's values of the tile's last write ----
  const tiled = 'programs/attention/seed001_fa2_tiled.toy';
  const tiledTrace = JSON.parse(toysim(build, ['trace', tiled, '--format', 'json']).stdout);
  const tileStep = tiledTrace.steps.filter((s) => s.instruction.startsWith('MAC '))[1].step;
  await choose(`program:${tiled}`);
  await press('step');
  await move('step-goto', tileStep, tileStep);
  marked = await markedLines('toy-step');
  check(JSON.stringify(marked.lines) === `[${tiledTrace.steps[tileStep - 1].line}]`, `${tiled} step ${tileStep}: the editor marks line ${tiledTrace.steps[tileStep - 1].line}`);
  const lastTile = {};
  for (const s of tiledTrace.steps.slice(0, tileStep)) for (const w of s.writes ?? []) if (w.tile) lastTile[w.tile] = w;
  const heatmaps = await page.evaluate(() => Object.fromEntries([...document.querySelectorAll('#tiles .tile')].map((t) => [t.id.slice(5),
    { shape: t.querySelector('.shape').textContent, values: [...t.querySelectorAll('.hm .t')].map((c) => c.title.split(' = ')[1]) }])));
  // A number within the five significant digits the page keeps; inf, -inf and nan as words.
  const near = (shown, want) => (typeof want === 'number' ? Math.abs(Number(shown) - want) <= 1e-4 * Math.max(1, Math.abs(want)) : shown === want);
  let tileValues = 0;
  for (const [name, w] of Object.entries(lastTile)) {
    const shown = heatmaps[name], want = w.new.flat();
    const same = shown && shown.shape.startsWith(`${w.shape[0]}×${w.shape[1]}`) && shown.values.length === want.length &&
                 shown.values.every((v, i) => near(v, want[i]));
    check(same, `step ${tileStep}: tile ${name} shows its last write, ${w.shape.join('×')}, with the trace's values`, JSON.stringify(shown));
    tileValues += want.length;
  }
  check(tileValues > 0 && (await page.locator('#tiles .tile.changed').count()) === 1, `step ${tileStep}: ${tileValues} tile values, and the tile the step wrote marked`);
  await page.screenshot({ path: path.join(out, 'playground_step.png') });

  // ---- a run that faults: at its end the faulting line is marked as an error's ----
  const faulty = 'registers 2\ninput x[2]\noutput y[1]\nLOAD x[0], R0\nLOAD y[0], R1\nSTORE R1, y[0]\n';
  const faultyFile = path.join(out, 'faulty.toy');
  fs.writeFileSync(faultyFile, faulty);
  const [, faultLine] = toysim(build, ['run', faultyFile], { allowFail: true }).stderr.match(/:(\d+):\d+: error/);
  await choose('program:programs/p1_c00.toy');
  await setEditor(faulty);
  await press('step');
  await move('step-forward', 10, 1);
  const faultMarks = [await markedLines('toy-error-line'), await markedLines('toy-step')].map((m) => JSON.stringify(m.lines));
  check(faultLine === '5' && faultMarks[0] === '[5]' && faultMarks[1] === '[4]',
        'a run that faults at line 5 ends at step 1 (line 4), with line 5 marked as the error\'s', faultMarks.join(' '));

  // ---- several devices: the stepper shows each side by side, as `info devices` prints them ----
  await choose('program:programs/devices/ring_attention.toy');
  await press('step');
  await move('step-forward', 40, 40);
  const session = toysim(build, ['step', 'programs/devices/ring_attention.toy'], { input: 'step 40\ninfo devices\nq\n' }).stdout;
  const devices = session.split('(toysim) ')[2].replace(/^info devices\n/, '');
  check(!(await page.locator('#machine-workers').isHidden()) && (await text('#workers')) === devices &&
        (await text('#workers-title')).startsWith('Devices'),
        'ring attention at step 40: the Devices panel is `info devices`, byte for byte', await text('#workers'));

  // ---- FA2 at n = 256: the counters equal the CLI's ----
  await choose('program:programs/attention/fa2.toy');
  await page.fill('#param-n', '256');
  await press('run');
  const fa2 = toysim(build, ['run', 'programs/attention/fa2.toy', '--set', 'n=256']).stdout;
  const fa2Page = await text('#output');
  check(fa2Page === fa2, 'Run of FA2 at n = 256 is the CLI\'s, every counter', `page:\n${fa2Page}`);
  await press('h100');
  const timed = toysim(build, ['cost', 'programs/attention/fa2.toy', '--set', 'n=256', '--machine', 'h100']).stdout;
  const timedPage = await text('#output');
  check(timedPage === timed && timed.includes('predicted time on machine h100'),
        'H100 time of FA2 at n = 256 is the CLI\'s cost --machine h100, byte for byte', `page:\n${timedPage}`);
  // ---- Tune: the space, and with no space the instruction-level search, as the CLI's ----
  await page.fill('#tune-vary', 'Br=8,16 Bc=16,32');
  await page.selectOption('#tune-objective', 'dram');
  await press('tune');
  const tuned = toysim(build, ['tune', 'programs/attention/fa2.toy', '--set', 'n=256', '--vary', 'Br=8,16', '--vary', 'Bc=16,32', '--objective', 'dram']).stdout;
  const tunedPage = await text('#output');
  check(tunedPage === tuned && tuned.includes('4 points on machine h100 (1 head), by DRAM bytes'),
        'Tune of FA2 at n = 256 over Br and Bc is the CLI\'s tune --vary, byte for byte', `page:\n${tunedPage}`);
  await choose('program:programs/quiz_matmul_inner_6reg.toy');
  await page.fill('#tune-vary', '');
  await press('tune');
  const searched = toysim(build, ['tune', '--schedule', 'programs/quiz_matmul_inner_6reg.toy']).stdout;
  const searchedPage = await text('#output');
  check(searchedPage === searched && searched.includes('20 cycles'),
        'Tune with no space is the CLI\'s tune --schedule of the quiz, byte for byte (20 cycles, proven)', `page:\n${searchedPage}`);
  await choose('program:programs/attention/fa2.toy');
  await page.fill('#param-n', '256');
  await press('run');
  await page.screenshot({ path: path.join(out, 'playground.png') });

  // ---- a known-wrong P2 solution: graded on the visible tests ----
  await choose('exercise:p2_matmul_3reg');
  await setEditor(fs.readFileSync(path.join(repo, 'tests/exercises/p2_matmul_3reg/over_cycles.toy'), 'utf8'));
  await press('grade');
  const full = JSON.parse(toysim(build, ['grade', 'programs/exercises/p2_matmul_3reg', 'tests/exercises/p2_matmul_3reg/over_cycles.toy',
                                         '--format', 'json'], { allowFail: true }).stdout);
  const visible = full.tests.filter((t) => t.visibility === 'visible');
  const score = visible.reduce((s, t) => s + t.score, 0), max = visible.reduce((s, t) => s + t.max_score, 0);
  const graded = await text('#output');
  check(full.score === 8 && full.max_score === 12, 'the CLI grades it 8 / 12 (its hidden tests included)', `${full.score} / ${full.max_score}`);
  check(graded.includes(`score: ${score} / ${max}`) && score === 4 && max === 6,
        'the page grades it 4 / 6: the CLI\'s score on the same visible tests', graded);
  check((await text('#note')).includes('2 hidden test(s) are not shipped'), 'the page says the hidden tests are not graded here');
  const shipped = fs.readFileSync(path.join(playground, 'programs.json'), 'utf8');
  check(!/\n\s*test\s+hidden/.test(JSON.parse(shipped).exercises.map((e) => e.spec).join('\n')), 'no hidden test is shipped');

  // ---- the step limit, as the CLI says it; Stop during a long run ----
  const loop = 'registers 2\ninput x[1]\nLOAD x[0], R0\nfor i in 0..1000000000000 {\n    ADD R0, R0, R1\n}\n';
  const loopFile = path.join(out, 'loop.toy');
  fs.writeFileSync(loopFile, loop);
  await choose('program:programs/p1_c00.toy');
  await setEditor(loop);
  await press('trace');
  const limit = toysim(build, ['trace', loopFile], { allowFail: true }).stderr.replaceAll(loopFile, 'programs/p1_c00.toy');
  check(await text('#error') === limit, 'a trace that never ends stops at the step limit with the CLI\'s message', limit);
  await setEditor(loop.replace('1000000000000', '2000000000'));
  await page.click('#run');
  await page.waitForTimeout(1000);
  check(await page.locator('#stop').isEnabled(), 'Stop is live during a long run');
  await page.click('#stop');
  check((await text('#status')).startsWith('stopped'), 'Stop stops it');
  await page.waitForFunction(() => document.querySelector('#status').textContent === 'ready');
  await choose('program:programs/p1_c00.toy');
  await press('trace');
  check(await text('#output') === trace, 'after Stop, the engine answers again');

  // ---- Share: the program in the URL's fragment opens in a fresh page ----
  await choose('program:programs/p4_softmax_3pass.toy');
  await page.click('#share');
  await page.waitForFunction(() => location.hash.startsWith('#code='));
  const shared = await context.newPage();
  shared.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
  await shared.goto(page.url());
  await shared.waitForFunction(() => document.querySelector('#param-fields').dataset.ready === 'yes');
  const sharedText = await shared.evaluate(() => document.querySelector('.CodeMirror').CodeMirror.getValue());
  check(sharedText === fs.readFileSync(path.join(repo, 'programs/p4_softmax_3pass.toy'), 'utf8'), 'a shared link opens the same program');
  await shared.close();

  // ---- a benchmark, not a check: P5 at n = 10^6 in the page (Run: the run, then the viewer's refusal) ----
  await choose('program:programs/p5_online_softmax.toy');
  await page.fill('#param-n', '1000000');
  const p5Start = Date.now();
  await press('run');
  const p5Page = (Date.now() - p5Start) / 1000;
  const p5Native = Date.now();
  const p5 = toysim(build, ['run', 'programs/p5_online_softmax.toy', '--set', 'n=1000000']).stdout;
  console.log(`P5 at n = 10^6: ${p5Page.toFixed(2)} s in the page, ${((Date.now() - p5Native) / 1000).toFixed(2)} s with the native CLI`);
  check(await text('#output') === p5, 'Run of P5 at n = 10^6 is the CLI\'s');

  check(outside.length === 0, 'no request leaves the origin', outside.join(', '));
  check(consoleErrors.length === 0, 'no console error', consoleErrors.join('\n'));
  console.log(`served ${served.length} requests, all from ${playground}`);
} finally {
  await context.close();
  server.close();
  fs.rmSync(profile, { recursive: true, force: true });
}
console.log(failures ? `${failures} failed` : 'every check passed');
process.exit(failures ? 1 : 0);
