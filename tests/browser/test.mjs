// The page `toysim view` writes, in a real browser (headless Chromium): after → five times it
// (or, for a run shorter than that, once a step) shows step 5 as `toysim trace --format json` says (every scalar register, every DRAM cell's
// reads and writes, every counter, small tiles' values), End shows the counters of
// `toysim run --format json`, Home the empty machine; the page makes no network request and
// logs no error; FA2 at n = 4096 becomes interactive within 5 seconds.
//   node tests/browser/test.mjs BUILD_DIR        (tests/browser/run.sh installs what it needs)
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { buildDir, launch, toysim, workDir } from "./lib.mjs";

const build = buildDir();
const outDir = path.join(workDir(build), "out");
const LOAD_LIMIT_MS = 5000;

// full: compare against the whole trace (--max-steps 100000). FA2 at n = 4096 has a 650 MB
// trace, more than a JavaScript string holds; its first five steps are the same with
// --max-steps 5 (numeric values do not depend on the rest of the run).
const cases = [
  { name: "p1_c00", args: ["programs/p1_c00.toy"], full: true },
  // A scalar array (no dimensions): drawn as one cell; a run of two steps.
  { name: "scalar_array", args: ["tests/view/scalar_array.toy"], full: true, at: 2 },
  { name: "p5_online_softmax_n8", args: ["programs/p5_online_softmax.toy", "--set", "n=8"], full: true },
  { name: "seed001_fa2_tiled", args: ["programs/attention/seed001_fa2_tiled.toy"], full: true },
  // Four workers: cycles is the makespan, and the register panel shows any worker's tiles.
  { name: "flash_decoding_p4", args: ["programs/attention/flash_decoding.toy", "--set", "S=8", "--set", "P=4"], full: true, at: 80,
    worker: { select: "1", tile: "m", value: "0.078107", note: "worker 1's registers and tiles, as its last step left them" } },
  // Four devices on a ring: the Devices panel shows each one's clock, steps and last line.
  { name: "ring_attention", args: ["programs/devices/ring_attention.toy"], full: true, at: 40, devices: true },
  { name: "fa2_n4096", args: ["programs/attention/fa2.toy", "--set", "n=4096", "--set", "d=64", "--set", "Br=64", "--set", "Bc=64"], full: false, timed: true },
];

let failures = 0;
function check(ok, what) {
  if (!ok) {
    failures++;
    console.log(`  FAIL ${what}`);
  }
  return ok;
}
function near(a, b) {
  if (typeof a === "string" || typeof b === "string") return String(a) === String(b);
  return Math.abs(a - b) <= 1e-4 * Math.max(1, Math.abs(a), Math.abs(b));
}

// Every counter by the name the page (and `expect` lines) use, from a counters object of
// `run` or `trace` JSON.
function counterMap(c) {
  const m = new Map();
  m.set("cycles", c.cycles);
  m.set("instructions", c.instructions);
  for (const [op, v] of Object.entries(c.by_opcode || {})) m.set(op, v);
  for (const [op, v] of Object.entries(c.work_by_opcode || {})) m.set(`work(${op})`, v);
  m.set("reads", c.dram.reads);
  m.set("writes", c.dram.writes);
  m.set("traffic", c.dram.traffic);
  for (const [a, s] of Object.entries(c.dram.arrays || {})) {
    m.set(`reads(${a})`, s.reads);
    m.set(`writes(${a})`, s.writes);
  }
  m.set("registers", c.registers);
  m.set("compute", c.compute);
  // Several devices: the elements the links moved, in all and per array.
  if (c.links) {
    m.set("sent", c.links.sent);
    for (const [a, s] of Object.entries(c.links.arrays || {})) m.set(`sent(${a})`, s.sent);
  }
  m.set("arithmetic_intensity", c.arithmetic_intensity);
  if (c.workers) {
    m.set("work", c.workers.work);
    m.set("utilization", c.workers.utilization);
  }
  return m;
}

// Reads and writes per display cell after the trace's first k steps: each access's elements,
// placed in the cell that covers them (cell (i, j) covers element rows
// floor(i*rows/grid_rows) .. floor((i+1)*rows/grid_rows)-1, and likewise columns).
function expectedCells(data, traceSteps, k) {
  const byName = new Map(data.arrays.map((a, i) => [a.name, i]));
  const cells = data.arrays.map((a) => ({ reads: new Float64Array(a.grid_rows * a.grid_cols), writes: new Float64Array(a.grid_rows * a.grid_cols) }));
  const cellOf = (x, n, g) => {
    for (let i = 0; i < g; i++) if (x < Math.floor(((i + 1) * n) / g)) return i;
    throw new Error(`element ${x} outside ${n}`);
  };
  for (const step of traceSteps.slice(0, k)) {
    for (const acc of step.dram || []) {
      const ai = byName.get(acc.array);
      const A = data.arrays[ai];
      const first = acc.index || acc.first, last = acc.index || acc.last;
      // The box first..last, every element.
      const idx = first.slice();
      let count = 0;
      for (;;) {
        let off = 0;
        for (let d = 0; d < A.dims.length; d++) off = off * A.dims[d] + idx[d];
        const row = Math.floor(off / A.cols), col = off % A.cols;
        const cell = cellOf(row, A.rows, A.grid_rows) * A.grid_cols + cellOf(col, A.cols, A.grid_cols);
        if (acc.access !== "write") cells[ai].reads[cell]++;   // a read, or an add (STORE_ADD): both
        if (acc.access !== "read") cells[ai].writes[cell]++;
        count++;
        let d = idx.length - 1;
        while (d >= 0 && idx[d] === last[d]) { idx[d] = first[d]; d--; }
        if (d < 0) break;
        idx[d]++;
      }
      if (count !== acc.elements) throw new Error(`step ${step.step}: an access of ${acc.elements} elements is not the box ${first}..${last}`);
    }
  }
  return cells;
}

// What the page shows now.
async function pageState(page) {
  return page.evaluate(() => {
    const cells = {};
    for (const el of document.querySelectorAll("#arrays .c")) {
      const a = el.getAttribute("data-array");
      (cells[a] || (cells[a] = [])).push([+el.getAttribute("data-row"), +el.getAttribute("data-col"), +el.getAttribute("data-reads"), +el.getAttribute("data-writes")]);
    }
    const regs = {};
    for (const el of document.querySelectorAll(".reg .rv")) regs[el.id.slice(4)] = el.textContent;
    const counters = {};
    for (const el of document.querySelectorAll('#counters [id^="counter-"]')) counters[el.id.slice(8)] = el.textContent;
    const tiles = {};
    for (const el of document.querySelectorAll(".tile")) {
      tiles[el.id.slice(5)] = { shape: el.querySelector(".shape").textContent, titles: Array.from(el.querySelectorAll(".hm .t"), (t) => t.title) };
    }
    return { step: document.getElementById("step").textContent, cycle: document.getElementById("cycle").textContent, cells, regs, counters, tiles };
  });
}

function compareCounters(shown, expected, label) {
  let compared = 0;
  for (const [name, text] of Object.entries(shown)) {
    if (!expected.has(name)) {
      check(false, `${label}: counter ${name} is not in the JSON`);
      continue;
    }
    const v = Number(text.replace(/,/g, ""));
    const want = expected.get(name);
    const ratio = name === "arithmetic_intensity" || name === "utilization";
    const ok = ratio ? Math.abs(v - want) <= 5e-4 * Math.max(1, Math.abs(want)) : v === want;
    check(ok, `${label}: counter ${name} shows ${text}, the JSON says ${want}`);
    compared++;
  }
  return compared;
}

function parseJson(text, what) {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new Error(`${what}: not JSON (${err.message})`);
  }
}

const browser = await launch(build);
try {
  for (const c of cases) {
    console.log(`${c.name}: toysim view ${c.args.join(" ")}`);
    const html = path.join(outDir, `${c.name}.html`);
    let t = Date.now();
    toysim(build, ["view", ...c.args, "-o", html]);
    const viewMs = Date.now() - t;
    const size = fs.statSync(html).size;
    console.log(`  page: ${(size / 1e6).toFixed(1)} MB (${size} bytes), written in ${(viewMs / 1000).toFixed(2)} s`);

    // The trace, its totals after `at` steps (five unless the run is shorter), and the run's totals.
    const at = c.at ?? 5;
    const trace = parseJson(toysim(build, ["trace", ...c.args, "--format", "json", "--max-steps", c.full ? "100000" : String(at)], { allowFail: !c.full }).stdout, "trace");
    const five = c.full ? parseJson(toysim(build, ["trace", ...c.args, "--format", "json", "--max-steps", String(at)], { allowFail: true }).stdout, `trace --max-steps ${at}`) : trace;
    const run = parseJson(toysim(build, ["run", ...c.args, "--format", "json"]).stdout, "run");
    check(five.steps.length === at, `the trace has ${at} steps`);

    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    const url = pathToFileURL(html).href;
    const stray = [], errors = [];
    page.on("request", (r) => { if (r.url().split("#")[0] !== url) stray.push(r.url()); });
    page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
    page.on("pageerror", (e) => errors.push(String(e)));

    t = Date.now();
    await page.goto(url, { timeout: 60000 });
    await page.waitForSelector("body[data-ready]", { timeout: 60000 });
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    const loadMs = Date.now() - t;
    const timings = await page.evaluate(() => window.toysimTimings);
    console.log(`  load to interactive: ${(loadMs / 1000).toFixed(2)} s (data parsed in ${timings.parseMs.toFixed(0)} ms, page set up ${timings.setupMs.toFixed(0)} ms after its script started)`);
    if (c.timed) check(loadMs <= LOAD_LIMIT_MS, `loads in ${loadMs} ms, more than ${LOAD_LIMIT_MS} ms`);

    // The page's own description of its arrays (not its 62,000 steps: CDP would take seconds).
    const data = await page.evaluate(() => {
      const d = JSON.parse(document.getElementById("toysim-data").textContent);
      return { arrays: d.arrays, end: d.end, steps: d.steps.length };
    });
    check(data.steps === data.end.steps && (!c.full || data.steps === trace.steps.length), "the page has the trace's steps");
    let state = await pageState(page);
    check(state.step === "0", `opens at step 0 (shows ${state.step})`);

    // → `at` times.
    const moves = [];
    for (let i = 0; i < at; i++) {
      await page.keyboard.press("ArrowRight");
      moves.push(await page.evaluate(() => window.toysimLastMoveMs));
    }
    state = await pageState(page);
    const t5 = trace.steps[at - 1];
    check(state.step === String(at), `shows step ${at} after → ${at} times (shows ${state.step})`);
    // On devices the trace's cycle is the step's device clock; the header counts the work.
    if (c.devices) {
      const clock = await page.evaluate(() => document.querySelector("#worker b:last-of-type").textContent);
      check(clock.replace(/,/g, "") === String(t5.cycle), `device ${t5.worker}'s clock ${clock}, the trace says ${t5.cycle}`);
    } else {
      check(state.cycle.replace(/,/g, "") === String(t5.cycle), `cycle ${state.cycle}, the trace says ${t5.cycle}`);
    }

    // Registers (scalar programs): the trace's row after step `at`; a register not yet written is empty.
    if (t5.registers) {
      check(Object.keys(state.regs).length > 0, "the page shows the registers");
      for (const [name, text] of Object.entries(state.regs)) check(text === (t5.registers[name] ?? ""), `register ${name} shows "${text}", the trace says "${t5.registers[name] ?? ""}"`);
      for (const name of Object.keys(t5.registers)) check(name in state.regs, `register ${name} is on the page`);
      console.log(`  step ${at} registers: ${Object.entries(state.regs).map(([n, v]) => `${n}=${v || "—"}`).join(" ")}`);
    }

    // Tiles small enough to be shown whole: the values of their last write.
    const lastTile = {};
    // (Each device has tiles of its own: the page shows those of the device that ran the step.)
    for (const s of trace.steps.slice(0, at)) for (const w of s.writes || []) if (w.tile && (!c.devices || s.worker === t5.worker)) lastTile[w.tile] = w;
    let tileCells = 0;
    for (const [name, w] of Object.entries(lastTile)) {
      const shown = state.tiles[name];
      if (!check(!!shown, `tile ${name} is on the page`)) continue;
      check(shown.shape.startsWith(`${w.shape[0]}×${w.shape[1]}`), `tile ${name} shape "${shown.shape}", the trace says ${w.shape.join("×")}`);
      if (w.shape[0] > 16 || w.shape[1] > 16) continue;  // pooled: block means, not values
      const flat = w.new.flat();
      check(shown.titles.length === flat.length, `tile ${name} shows ${shown.titles.length} cells, the trace ${flat.length}`);
      shown.titles.forEach((title, i) => {
        const v = title.split(" = ")[1];
        const want = flat[i];
        check(near(typeof want === "number" ? Number(v) : v, want), `tile ${name} cell ${i} shows ${v}, the trace says ${want}`);
        tileCells++;
      });
    }

    // DRAM: every cell's reads and writes after step `at`.
    const want = expectedCells(data, trace.steps, at);
    let cellCount = 0, readSum = 0;
    data.arrays.forEach((A, ai) => {
      const shown = state.cells[A.name] || [];
      check(shown.length === A.grid_rows * A.grid_cols, `array ${A.name} has ${shown.length} cells, expected ${A.grid_rows * A.grid_cols}`);
      for (const [r, col, reads, writes] of shown) {
        const x = r * A.grid_cols + col;
        const okR = check(reads === want[ai].reads[x], `${A.name} cell (${r}, ${col}): ${reads} reads, the trace says ${want[ai].reads[x]}`);
        const okW = check(writes === want[ai].writes[x], `${A.name} cell (${r}, ${col}): ${writes} writes, the trace says ${want[ai].writes[x]}`);
        if (!okR || !okW) return;
        readSum += reads;
        cellCount++;
      }
    });
    // Counters after step `at`.
    const nCounters = compareCounters(state.counters, counterMap(five.counters), `step ${at}`);
    console.log(`  step ${at} as the trace says: ${cellCount} DRAM cells (${readSum} reads), ${nCounters} counters${tileCells ? `, ${tileCells} tile values` : ""}; a step took ${Math.max(...moves).toFixed(1)} ms at most`);

    // Another worker's registers: its tile as its last step left it (step 80 is worker 3's; worker
    // 1 last wrote m at step 74, in the interleaved order); the step's DRAM boxes
    // carry the step's worker.
    if (c.worker) {
      const boxes = await page.evaluate(() => Array.from(document.querySelectorAll("#arrays .box"), (b) => b.getAttribute("data-worker")));
      check(boxes.length > 0, "the step's DRAM boxes are drawn");
      check(boxes.every((w) => w === String(t5.worker)), `the step's DRAM boxes carry worker ${t5.worker} (${boxes.join(", ")})`);
      await page.selectOption("#worker-select", c.worker.select);
      const title = await page.evaluate((t) => document.querySelector(`#tile-${t} .hm .t`).title, c.worker.tile);
      check(title.endsWith(`= ${c.worker.value}`), `worker ${c.worker.select}'s tile ${c.worker.tile} shows "${title}", expected ${c.worker.value}`);
      const note = await page.textContent("#worker-note");
      check(note === c.worker.note, `worker note "${note}"`);
      await page.selectOption("#worker-select", "-1");
      check((await page.textContent("#worker-note")) === "", "back to this step's worker: no note");
    }

    // Several devices side by side: each one's clock, steps run and last line after step `at`,
    // as the trace's steps say.
    if (c.devices) {
      const rows = await page.evaluate(() => Array.from(document.querySelectorAll("#workers-table tr[data-worker]"),
        (r) => ({ worker: +r.dataset.worker, now: r.classList.contains("now"), cells: Array.from(r.children, (td) => td.textContent) })));
      const title = await page.textContent("#workers-title");
      check(title === "Devices" && rows.length === 4, `the Devices panel: "${title}", ${rows.length} rows`);
      for (const r of rows) {
        const mine = trace.steps.slice(0, at).filter((s) => s.worker === r.worker), last = mine[mine.length - 1];
        const want = [String(r.worker), String(last ? last.cycle : 0), String(mine.length), last ? String(last.line) : "—"];
        check(JSON.stringify(r.cells.slice(0, 4).map((x) => x.replace(/,/g, ""))) === JSON.stringify(want),
              `device ${r.worker}: ${r.cells.slice(0, 4).join(" ")}, the trace says ${want.join(" ")}`);
        check(r.now === (r.worker === t5.worker), `device ${r.worker}'s row is bold only if it ran step ${at}`);
      }
      console.log(`  step ${at}: ${rows.map((r) => `device ${r.worker} at ${r.cells[1]} (${r.cells[2]} steps)`).join(", ")}`);
    }

    // The buttons.
    // (At the run's last step the forward button is disabled.)
    const forward = Math.min(at + 1, data.end.steps);
    if (forward > at) await page.click("#btn-fwd");
    else check(await page.isDisabled("#btn-fwd"), `forward button disabled at the last step (${at})`);
    check((await page.textContent("#step")) === String(forward), `forward button: step ${forward}`);
    await page.click("#btn-back");
    check((await page.textContent("#step")) === String(forward - 1), `back button: step ${forward - 1}`);

    // End: the run's counters; Home: nothing read.
    t = Date.now();
    await page.keyboard.press("End");
    const endMs = await page.evaluate(() => window.toysimLastMoveMs);
    state = await pageState(page);
    check(state.step === String(data.end.steps), `End shows step ${data.end.steps} (shows ${state.step})`);
    const nEnd = compareCounters(state.counters, counterMap(run.counters), "end");
    for (const A of data.arrays) {
      const reads = (state.cells[A.name] || []).reduce((s, x) => s + x[2], 0);
      const writes = (state.cells[A.name] || []).reduce((s, x) => s + x[3], 0);
      check(reads === run.counters.dram.arrays[A.name].reads, `end: ${A.name}'s cells hold ${reads} reads, the run says ${run.counters.dram.arrays[A.name].reads}`);
      check(writes === run.counters.dram.arrays[A.name].writes, `end: ${A.name}'s cells hold ${writes} writes, the run says ${run.counters.dram.arrays[A.name].writes}`);
    }
    await page.keyboard.press("Home");
    const homeMs = await page.evaluate(() => window.toysimLastMoveMs);
    state = await pageState(page);
    check(state.step === "0", "Home shows step 0");
    check(Object.values(state.cells).every((list) => list.every((x) => x[2] === 0 && x[3] === 0)), "Home: no cell read or written");
    check(Object.values(state.regs).every((v) => v === ""), "Home: no register written");
    console.log(`  end: ${nEnd} counters as toysim run says; End took ${endMs.toFixed(1)} ms, Home ${homeMs.toFixed(1)} ms`);

    check(stray.length === 0, `no network request (made ${stray.length}: ${stray.slice(0, 3).join(", ")})`);
    check(errors.length === 0, `no console or page error (${errors.slice(0, 3).join(" | ")})`);
    await page.close();
  }
} finally {
  await browser.close();
}
if (failures) {
  console.log(`FAILED: ${failures} check(s)`);
  process.exit(1);
}
console.log("ok: all pages show what the trace says");
