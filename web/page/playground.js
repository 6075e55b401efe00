// The playground page: the editor, the parameter panel, the buttons, the stepper and the
// viewer, over the engine in a Web Worker (worker.js). What each button shows is what the
// matching `toysim` command prints, from the same engine code (web/engine/api.cpp); the
// stepper's picture of the machine is drawn by the viewer's own code (machine.js).
/* global CodeMirror, defineToyMode, ToysimMachine */
'use strict';

const $ = (id) => document.getElementById(id);
const state = { programs: null, exercise: null, path: 'playground.toy', session: false, marks: [], lines: {}, machine: null };

// ---- the engine ----

let worker = null, nextId = 1;
const pending = new Map();

function startWorker() {
  worker = new Worker('worker.js');
  worker.onmessage = ({ data }) => {
    if (data.ready) {
      if (!CodeMirror.modes.toy) {
        defineToyMode(data.language);
        editor.setOption('mode', 'toy');
      }
      return setStatus('ready');
    }
    const done = pending.get(data.id);
    pending.delete(data.id);
    if (done) done(data.reply);
  };
}

function setStatus(text) { $('status').textContent = text; }

// One API call; resolves with the reply. Stop rejects what is pending.
function engine(fn, request) {
  return new Promise((resolve, reject) => {
    const id = nextId++;
    pending.set(id, resolve);
    resolve.reject = reject;
    worker.postMessage({ id, fn, request });
  });
}

function stop() {
  worker.terminate();
  for (const resolve of pending.values()) resolve.reject(new Error('stopped'));
  pending.clear();
  closeStepper();
  startWorker();
  setStatus('stopped: the engine was restarted');
}

// What a call that Stop ended resolves to: nothing (any other error is a bug, and stays one).
function stopped(e) {
  if (e.message !== 'stopped') throw e;
  return null;
}

// Runs a button's call with the Stop button live meanwhile.
async function busy(label, body) {
  document.querySelectorAll('header button').forEach((b) => { b.disabled = b.id !== 'stop'; });
  $('stop').disabled = false;
  setStatus(`${label}…`);
  const t0 = performance.now();
  try {
    await body();
    setStatus(`${label}: ${((performance.now() - t0) / 1000).toFixed(2)} s`);
  } catch (e) {
    stopped(e);
  } finally {
    document.querySelectorAll('header button').forEach((b) => { b.disabled = b.id === 'stop'; });
    $('grade').disabled = !state.exercise;
  }
}

// ---- the editor and errors ----

const editor = CodeMirror($('editor'), { mode: 'toy', lineNumbers: true, indentUnit: 4 });

// Marks a whole line (1-based; 0: none) with a background class, in place of the line `what`
// marked before: the stepper's step and an error each mark one line at a time. A line handle
// follows its line as the student edits around it.
function markLine(what, line, className) {
  const old = state.lines[what];
  if (old) editor.removeLineClass(old.handle, 'background', old.className);
  delete state.lines[what];
  if (!line || line > editor.lineCount()) return;
  state.lines[what] = { handle: editor.addLineClass(line - 1, 'background', className), className };
  editor.scrollIntoView({ line: line - 1, ch: 0 }, 60);
}

function clearErrors() {
  state.marks.forEach((m) => m.clear());
  state.marks = [];
  markLine('error', 0);
  $('error').hidden = true;
  $('error').textContent = '';
}

// The reply's stderr, its line marked and its location underlined in the editor.
function showError(reply) {
  if (!reply.err) return;
  $('error').hidden = false;
  $('error').textContent = reply.err;
  if (!reply.loc) return;
  markLine('error', reply.loc.line, 'toy-error-line');
  const line = reply.loc.line - 1, ch = reply.loc.col - 1;
  const mark = editor.markText({ line, ch }, { line, ch: ch + Math.max(1, reply.loc.len) },
                               { className: 'toy-error', attributes: { title: reply.err.split('\n')[0] } });
  state.marks.push(mark);
}

// ---- the request ----

function request(extra) {
  return { path: state.path, text: editor.getValue(), sets: paramSets(), ...extra };
}

// The parameter panel: a field per settable `param` line; only changed values are sent (--set).
async function refreshParams() {
  const reply = await engine('params', { path: state.path, text: editor.getValue() }).catch(stopped);
  if (!reply) return;
  const fields = $('param-fields');
  fields.dataset.ready = 'yes';
  if (reply.code !== 0) {  // the buttons show the error; the fields stay as they were
    if (fields.textContent === '') fields.textContent = 'none';
    return;
  }
  const { params } = JSON.parse(reply.out);
  const old = Object.fromEntries([...fields.querySelectorAll('input')].map((i) => [i.name, i.value]));
  fields.textContent = params.length ? '' : 'none';
  for (const p of params.filter((q) => !q.derived)) {
    const label = document.createElement('label');
    const input = document.createElement('input');
    input.name = p.name;
    input.id = `param-${p.name}`;
    input.dataset.default = p.value;
    input.value = old[p.name] ?? p.value;
    label.append(`${p.name} = `, input);
    fields.append(label);
  }
}

function paramSets() {
  return [...$('param-fields').querySelectorAll('input')]
    .filter((i) => i.value.trim() !== '' && i.value.trim() !== i.dataset.default)
    .map((i) => `${i.name}=${i.value.trim()}`);
}

// ---- the buttons ----

// A line under the output: what the output itself does not say (it is the CLI's, exactly).
function note(text) {
  $('note').hidden = !text;
  $('note').textContent = text;
}

function show(reply) {
  closeStepper();
  clearErrors();
  note('');
  $('output').textContent = reply.out;
  showError(reply);
}

async function runButton() {
  const reply = await engine('run', request({}));
  show(reply);
  if (reply.code === 2) return;
  // The viewer of `toysim view`: its page, made by the engine from the same template.
  const view = await engine('view', request({}));
  const frame = $('viewer');
  frame.hidden = view.code !== 0;
  if (view.code === 0) frame.srcdoc = view.out;
  else note(`The viewer: ${view.err.trim()}`);
}

async function traceButton() { show(await engine('trace', request({}))); }
async function costButton() { show(await engine('cost', request({}))); }
async function h100Button() { show(await engine('cost', request({ machine: 'h100' }))); }

// tune --vary when the space is given (NAME=V1,V2,... separated by spaces), tune --schedule when not.
async function tuneButton() {
  const vary = $('tune-vary').value.trim().split(/\s+/).filter((v) => v !== '');
  show(await engine('tune', request(vary.length ? { vary, objective: $('tune-objective').value } : { schedule: true })));
}

async function gradeButton() {
  const ex = state.exercise;
  const reply = await engine('grade', { spec_path: `programs/exercises/${ex.name}/exercise.toy`, spec: ex.spec, exercise: ex.name,
                                         path: 'solution.toy', text: editor.getValue() });
  show(reply);
  note(ex.hidden_tests
    ? `Graded on the exercise's visible tests only: its ${ex.hidden_tests} hidden test(s) are not shipped to this page (toysim grade runs them).`
    : 'Graded on every test of the exercise (it has no hidden ones).');
}

// ---- the stepper ----

function closeStepper() {
  state.session = false;
  state.machine = null;
  $('stepper').hidden = true;
  $('machine').hidden = true;
  markLine('step', 0);
}

// The panels of the machine, drawn once per session (and again if the registers shown
// change: a file of more than 32 shows those written so far).
function machinePanels(m) {
  const key = JSON.stringify([m.registers, m.tiles.map((t) => t.name), m.arrays.map((a) => a.name)]);
  if (state.machine?.key === key) return state.machine;
  const cells = ToysimMachine.geometry(m.arrays);
  state.machine = {
    key, cells,
    registers: ToysimMachine.registers($('regs'), m.registers),
    tiles: ToysimMachine.tiles($('tiles'), m.tiles),
    dram: ToysimMachine.dram($('arrays'), $('dram-legend'), m.arrays, cells),
    // What each cell shows, so that a step repaints only the cells it changed.
    top: -1, shownReads: new Float64Array(cells.totalCells), shownWritten: new Float64Array(cells.totalCells),
  };
  $('machine-registers').hidden = !m.registers.length && !m.tiles.length;
  $('machine-dram').hidden = !m.arrays.length;
  return state.machine;
}

// The machine as the session reports it (view_state_json), drawn as the viewer draws a step.
// The color scale's top is the most reads per element so far: unlike the viewer, the stepper
// does not know the rest of the run.
function drawMachine(m) {
  const panels = machinePanels(m), { cells, registers, tiles, dram, shownReads, shownWritten } = panels;
  m.values.forEach((value, i) => registers.set(i, value, i === m.reg));
  m.tiles.forEach((t, i) => tiles.show(i, t.shape ? t : null, t.old ?? null, i === m.tile));
  let top = 0;
  m.cells.forEach((c, ai) => c.reads.forEach((reads, i) => { top = Math.max(top, reads / cells.cellElems[cells.cellBase[ai] + i]); }));
  const rescaled = top !== panels.top;
  if (rescaled) dram.setTop(top, false);
  panels.top = top;
  m.cells.forEach((c, ai) => c.reads.forEach((reads, i) => {
    const x = cells.cellBase[ai] + i;
    if (!rescaled && shownReads[x] === reads && shownWritten[x] === c.written[i]) return;
    dram.paint(x, reads, c.written[i]);
    shownReads[x] = reads;
    shownWritten[x] = c.written[i];
  }));
  dram.clearOutlines();
  m.dram.forEach((rect) => dram.outline(rect));
  $('machine').hidden = false;
}

function showStep(s) {
  $('output').textContent = s.text ?? s.where;
  drawMachine(s.machine);
  // Several workers or devices: each one's clock, next line and state (and the links' messages).
  $('machine-workers').hidden = s.workers_text == null;
  $('workers').textContent = s.workers_text ?? '';
  if (s.workers_text != null) $('workers-title').firstChild.textContent = s.workers_text.startsWith('device') ? 'Devices ' : 'Workers ';
  markLine('step', s.machine.line, s.machine.next ? 'toy-next' : 'toy-step');
  // At the end of a run that faults, the instruction that faults is the error's line.
  const fault = s.machine.fault;
  if (fault && s.step === s.end) markLine('error', fault.line, 'toy-error-line');
  $('machine').dataset.step = s.step;
  $('step-at').textContent = `step ${s.step}${s.end != null ? ` of ${s.end}` : ''}`;
}

async function stepButton() {
  const reply = await engine('sessionOpen', request({}));
  show(reply);
  if (reply.code !== 0) return;
  state.session = true;
  $('stepper').hidden = false;
  $('viewer').hidden = true;
  showStep(JSON.parse(reply.out));
}

function sessionCall(fn, req) { return busy('step', () => sessionMove(fn, req)); }

async function sessionMove(fn, req) {
  const reply = await engine(fn, req);
  if (reply.code !== 0) return showError(reply);
  clearErrors();
  showStep(JSON.parse(reply.out));
}

const count = () => Math.max(0, Number($('step-count').value) || 0);

// ---- sharing: the program deflated into the URL's fragment ----

async function deflate(text) {
  const stream = new Blob([text]).stream().pipeThrough(new CompressionStream('deflate-raw'));
  const bytes = new Uint8Array(await new Response(stream).arrayBuffer());
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

async function inflate(code) {
  const bytes = Uint8Array.from(atob(code.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('deflate-raw'));
  return new Response(stream).text();
}

async function share() {
  location.hash = `code=${await deflate(editor.getValue())}`;
  await navigator.clipboard?.writeText(location.href).catch(() => {});
  setStatus('the link to this program is in the address bar');
}

// ---- examples ----

function load(text, path, exercise) {
  state.path = path;
  state.exercise = exercise;
  closeStepper();
  $('viewer').hidden = true;
  $('grade').disabled = !exercise;
  $('param-fields').textContent = '';
  delete $('param-fields').dataset.ready;
  editor.setValue(text);
  clearErrors();
  $('output').textContent = '';
  refreshParams();
}

async function loadExamples() {
  state.programs = await (await fetch('programs.json')).json();
  const select = $('examples');
  const group = (label) => select.appendChild(Object.assign(document.createElement('optgroup'), { label }));
  const programs = group('Programs');
  for (const p of state.programs.examples) programs.append(new Option(p.path.replace(/^programs\//, ''), `program:${p.path}`));
  const exercises = group('Exercises (starter)');
  for (const e of state.programs.exercises) exercises.append(new Option(e.name, `exercise:${e.name}`));
  select.onchange = () => {
    const [kind, name] = select.value.split(/:(.*)/s);
    if (kind === 'program') {
      const p = state.programs.examples.find((q) => q.path === name);
      load(p.text, p.path, null);
    } else {
      const e = state.programs.exercises.find((q) => q.name === name);
      load(e.starter ?? '', 'solution.toy', e);
    }
  };
}

async function main() {
  startWorker();
  await loadExamples();
  const hash = new URLSearchParams(location.hash.slice(1)).get('code');
  if (hash) load(await inflate(hash), 'shared.toy', null);
  else {
    $('examples').value = 'program:programs/p1_c00.toy';
    $('examples').onchange();
  }
  let timer = null;
  editor.on('change', () => {
    clearTimeout(timer);
    timer = setTimeout(refreshParams, 400);
  });
  $('run').onclick = () => busy('run', runButton);
  $('trace').onclick = () => busy('trace', traceButton);
  $('cost').onclick = () => busy('cost', costButton);
  $('h100').onclick = () => busy('h100', h100Button);
  $('tune').onclick = () => busy('tune', tuneButton);
  $('grade').onclick = () => busy('grade', gradeButton);
  $('step').onclick = () => busy('step', stepButton);
  $('stop').onclick = stop;
  $('share').onclick = share;
  $('step-forward').onclick = () => sessionCall('sessionMove', { how: 'forward', n: count() });
  $('step-back').onclick = () => sessionCall('sessionMove', { how: 'backward', n: count() });
  $('step-goto').onclick = () => sessionCall('sessionMove', { how: 'goto', n: count() });
  $('step-continue').onclick = () => sessionCall('sessionMove', { how: 'continue' });
  $('step-reverse').onclick = () => sessionCall('sessionMove', { how: 'reverse' });
  $('breakpoint-add').onclick = () => sessionCall('sessionBreakpoint', { add: $('breakpoint').value });
  $('breakpoint-clear').onclick = () => sessionCall('sessionBreakpoint', { delete: 0 });
}

main();
