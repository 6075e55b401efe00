// The machine as `toysim view` draws it: the registers as a grid of boxes, tiles as heatmaps of
// their values, and DRAM arrays as grids colored by reads per element, written elements in
// orange and a step's accesses outlined. One drawing for two pages: the viewer (viewer.html,
// which gets this file inlined by view_html) replays a recorded run through it, and the
// playground's stepper (web/page, which loads it as a file) draws the engine's session state
// (view_state_json) through it. What the pieces show is what their callers hand them; nothing
// here knows about steps.
//
// Loading it adds its stylesheet where its <script> stands, so that a page's own rules, later
// in the document, win over it.
var ToysimMachine = (function () {
"use strict";

var CSS = [
  ":root { --changed: #c7f0c2; --changed-ink: #0b5d1e; --read: #c2185b; --write: #e65100; --written-fill: #fdd0a2;",
  "  --mono: \"DejaVu Sans Mono\", \"Liberation Mono\", Menlo, Consolas, monospace; }",
  // Registers and tiles.
  ".regs { display: grid; grid-template-columns: repeat(auto-fill, minmax(150px, 1fr)); gap: 6px; }",
  ".regs:empty { display: none; }",
  ".reg { display: flex; align-items: baseline; gap: 8px; border: 1px solid #d5d9de; border-radius: 6px; padding: 4px 8px; min-height: 38px; }",
  ".reg .rn { font-family: var(--mono); font-weight: 700; color: #555; flex: none; }",
  ".reg .rv { font-family: var(--mono); font-size: 18px; overflow-wrap: anywhere; }",
  ".reg .rv:empty::after { content: \"—\"; color: #bbb; }",
  ".reg.changed { background: var(--changed); border-color: #4caf50; box-shadow: 0 0 0 2px #4caf50 inset; }",
  ".reg.changed .rn { color: var(--changed-ink); }",
  ".tiles { display: flex; flex-wrap: wrap; gap: 10px 12px; }",
  ".tiles:empty { display: none; }",
  ".regs:not(:empty) + .tiles:not(:empty) { margin-top: 10px; }",
  ".tile { border: 1px solid #d5d9de; border-radius: 6px; padding: 4px 6px 6px 6px; }",
  ".tile .cap { font-size: 14px; color: #555; margin-bottom: 3px; white-space: nowrap; }",
  ".tile .cap .shape { font-size: 13px; }",
  ".tile .cap b { font-family: var(--mono); color: #111; font-size: 16px; }",
  ".tile.changed { background: var(--changed); border-color: #4caf50; box-shadow: 0 0 0 2px #4caf50 inset; }",
  ".tile.changed .cap b { color: var(--changed-ink); }",
  ".hm { display: grid; gap: 1px; background: #bbb; border: 1px solid #bbb; width: max-content; }",
  ".hm .t { display: block; text-align: center; font-family: var(--mono); font-size: 12px; overflow: hidden; white-space: nowrap; text-overflow: ellipsis; padding: 0 1px; }",
  ".hm .t.diff { box-shadow: 0 0 0 2px #111 inset; }",
  ".hm.empty { background: transparent; border: 1px dashed #bbb; color: #888; font-size: 13px; padding: 6px 10px; }",
  // DRAM.
  ".dram-legend { display: flex; flex-wrap: wrap; align-items: center; gap: 4px 12px; font-size: 13px; color: #555; margin-bottom: 8px; }",
  ".dram-legend .ramp { display: inline-flex; align-items: center; gap: 6px; }",
  ".dram-legend .bar { display: inline-block; width: 80px; height: 14px; border: 1px solid #999; }",
  ".dram-legend .sw { display: inline-block; width: 16px; height: 14px; vertical-align: -2px; margin-right: 4px; border: 1px solid #999; }",
  ".dram-legend .mono { font-family: var(--mono); }",
  ".arrays { display: flex; flex-wrap: wrap; gap: 12px 16px; align-items: flex-start; }",
  ".arr { width: min-content; min-width: 128px; }",
  ".arr .cap { font-size: 14px; color: #555; margin-bottom: 3px; white-space: nowrap; }",
  ".arr .cap b { font-family: var(--mono); color: #111; font-size: 17px; }",
  ".grid { position: relative; display: grid; background: #c8c8c8; border: 1px solid #aaa; width: max-content; }",
  ".grid .c { background: #fff; display: flex; align-items: center; justify-content: center; font-family: var(--mono); font-size: 13px; color: #111; }",
  ".grid .box { position: absolute; pointer-events: none; border: 3px solid var(--read); border-radius: 2px; box-shadow: 0 0 0 1px #fff; }",
  ".grid .box.write { border-color: var(--write); }"
].join("\n");
(function () {
  var style = document.createElement("style");
  style.textContent = CSS;
  var here = document.currentScript;
  if (here) here.parentNode.insertBefore(style, here);
  else document.head.appendChild(style);
})();

// ---------------------------------------------------------------------------------------
// Text and colors.
function esc(s) {
  return String(s).replace(/[&<>"]/g, function (c) { return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]; });
}
// A tile value (or a count) in the few characters a cell has.
function fmtCell(v) {
  if (typeof v !== "number") {
    if (v === "-inf") return "−∞";
    if (v === "inf") return "∞";
    return String(v);
  }
  if (v === 0) return "0";
  var a = Math.abs(v);
  if (a >= 1e4 || a < 1e-3) return v.toExponential(1).replace("e+", "e");
  return String(Number(v.toPrecision(a >= 100 ? 4 : 3))).replace("-", "−");
}
var BLUES = [[222, 235, 247], [158, 202, 225], [66, 146, 198], [8, 81, 156], [8, 48, 107]];
var RDBU = [[49, 120, 185], [146, 197, 222], [209, 229, 240], [247, 247, 247], [253, 219, 199], [244, 165, 130], [206, 72, 62]];
function ramp(stops, t) {
  t = Math.max(0, Math.min(1, t));
  var x = t * (stops.length - 1), i = Math.min(stops.length - 2, Math.floor(x)), f = x - i;
  var a = stops[i], b = stops[i + 1];
  return "rgb(" + Math.round(a[0] + (b[0] - a[0]) * f) + "," + Math.round(a[1] + (b[1] - a[1]) * f) + "," + Math.round(a[2] + (b[2] - a[2]) * f) + ")";
}
// On several workers, each worker's color (ten, then again): the halo of a step's DRAM boxes
// and the viewer's mark beside "worker W".
var WORKER_COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#ff7f0e"];
function workerColor(w) { return WORKER_COLORS[w % WORKER_COLORS.length]; }

// ---------------------------------------------------------------------------------------
// Registers: a box per register, its value as text ("" not written yet).
function registers(el, names) {
  el.classList.add("regs");
  el.innerHTML = names.map(function (name) {
    return '<div class="reg" id="regbox-' + esc(name) + '"><span class="rn">' + esc(name) + '</span><span class="rv" id="reg-' + esc(name) + '"></span></div>';
  }).join("");
  var boxes = Array.prototype.slice.call(el.children), values = boxes.map(function (b) { return b.querySelector(".rv"); });
  return {
    set: function (i, text, changed) {
      if (values[i].textContent !== text) values[i].textContent = text;
      boxes[i].classList.toggle("changed", !!changed);
    }
  };
}

// Tiles: each a heatmap of a write's block of values, {shape: [rows, cols], block: rows of
// values pooled to at most 16 per side}, or "empty" before its first write.
function tiles(el, list) {
  el.classList.add("tiles");
  el.textContent = "";
  var els = list.map(function (t) {
    var box = document.createElement("div");
    box.className = "tile";
    box.id = "tile-" + t.name;
    box.innerHTML = '<div class="cap"><b>' + esc(t.name) + '</b> <span class="shape"></span></div><div class="hm empty">empty</div>';
    el.appendChild(box);
    return { box: box, shape: box.querySelector(".shape"), hm: box.querySelector(".hm") };
  });
  // `prev`: the block it held before, whose changed cells are outlined (null: none marked).
  function show(ti, write, prev, changed) {
    var t = list[ti], E = els[ti], hm = E.hm;
    E.box.classList.toggle("changed", !!changed);
    if (!write) {
      hm.className = "hm empty";
      hm.style.gridTemplateColumns = "";
      hm.innerHTML = "empty";
      E.shape.textContent = "holds " + t.rows + "×" + t.cols;
      return;
    }
    var block = write.block || [], br = block.length, bc = br ? block[0].length : 0, shape = write.shape;
    var pooled = br && (br < shape[0] || bc < shape[1]);
    E.shape.textContent = shape[0] + "×" + shape[1] + (shape[0] !== t.rows || shape[1] !== t.cols ? " of " + t.rows + "×" + t.cols : "") + (pooled ? " · " + br + "×" + bc + " means" : "");
    var maxAbs = 0, i, j, v;
    for (i = 0; i < br; i++) for (j = 0; j < bc; j++) { v = block[i][j]; if (typeof v === "number") maxAbs = Math.max(maxAbs, Math.abs(v)); }
    var cw = Math.max(12, Math.min(42, Math.floor(156 / Math.max(1, bc)))), ch = Math.max(12, Math.min(28, cw));
    var texts = [], fits = true;
    for (i = 0; i < br; i++) for (j = 0; j < bc; j++) {
      var txt = fmtCell(block[i][j]);
      texts.push(txt);
      if (txt.length * 7.3 > cw - 3) fits = false;
    }
    var html = [];
    for (i = 0; i < br; i++) for (j = 0; j < bc; j++) {
      v = block[i][j];
      var bg, fg = "#111";
      if (typeof v === "number") {
        var u = maxAbs > 0 ? v / maxAbs : 0;
        bg = ramp(RDBU, (u + 1) / 2);
        if (Math.abs(u) > 0.7) fg = "#fff";
      } else if (v === "-inf") { bg = "#d9d9d9"; }
      else if (v === "inf") { bg = "#67000d"; fg = "#fff"; }
      else if (v === "nan") { bg = "#6a3d9a"; fg = "#fff"; }
      else bg = "#f7f7f7";
      var diff = prev && prev.length === br && prev[0].length === bc && prev[i][j] !== v;
      html.push('<div class="t' + (diff ? " diff" : "") + '" style="width:' + cw + "px;height:" + ch + "px;line-height:" + ch + "px;background:" + bg + ";color:" + fg + '" title="' + esc(t.name + "[" + i + "][" + j + "] = " + v) + '">' + (fits || typeof v === "string" ? esc(texts[i * bc + j]) : "") + "</div>");
    }
    hm.className = "hm";
    hm.style.gridTemplateColumns = "repeat(" + bc + ", " + cw + "px)";
    hm.innerHTML = html.join("");
  }
  return { show: show };
}

// ---------------------------------------------------------------------------------------
// DRAM. Each array is a grid of grid_rows × grid_cols cells (its description in the data);
// cell (i, j) covers element rows lo[i] .. lo[i+1]-1 and columns clo[j] .. clo[j+1]-1. The
// cells of all arrays are numbered one after another (cellBase[array] + i·cols + j), and a
// page keeps its counts per cell in arrays of that length.
// An access is a "read", a "write" or an "accumulate" (STORE_ADD: a read and a write).
function readsDram(kind) { return kind !== "write"; }
function writesDram(kind) { return kind !== "read"; }
function cellOf(x, total, cells) { return Math.floor(((x + 1) * cells - 1) / total); }
function geometry(arrays) {
  var cellBase = [], totalCells = 0;
  var geo = arrays.map(function (A, ai) {
    var G = A.grid_rows, H = A.grid_cols;
    var lo = new Float64Array(G + 1), clo = new Float64Array(H + 1);
    for (var i = 0; i <= G; i++) lo[i] = Math.floor(i * A.rows / G);
    for (var j = 0; j <= H; j++) clo[j] = Math.floor(j * A.cols / H);
    cellBase[ai] = totalCells;
    totalCells += G * H;
    return { G: G, H: H, lo: lo, clo: clo };
  });
  var cellElems = new Float64Array(totalCells), cellArray = new Int32Array(totalCells);
  arrays.forEach(function (A, ai) {
    var g = geo[ai];
    cellArray.fill(ai, cellBase[ai], cellBase[ai] + g.G * g.H);
    for (var i = 0; i < g.G; i++)
      for (var j = 0; j < g.H; j++)
        cellElems[cellBase[ai] + i * g.H + j] = (g.lo[i + 1] - g.lo[i]) * (g.clo[j + 1] - g.clo[j]);
  });
  return { geo: geo, cellBase: cellBase, totalCells: totalCells, cellElems: cellElems, cellArray: cellArray };
}

// The grids in `el` and their legend in `legendEl`. paint(x, reads, writes) colors cell x by
// its reads per element on a log scale whose top is `top` (setTop), orange where written;
// outline(rect, worker) outlines a step's access ({array, kind, row, col, rows, cols}).
function dram(el, legendEl, arrays, G) {
  el.classList.add("arrays");
  legendEl.classList.add("dram-legend");
  el.textContent = "";
  var top = 0;
  var cellEls = new Array(G.totalCells);
  var arrEls = arrays.map(function (A, ai) {
    var g = G.geo[ai], oneD = A.dims.length <= 1;
    var cell, perRow;
    if (oneD) {
      cell = Math.max(6, Math.min(30, Math.floor(384 / g.H)));
      perRow = Math.min(g.H, Math.max(1, Math.floor(384 / cell)));
    } else {
      cell = Math.max(3, Math.min(30, Math.floor(200 / g.H), Math.floor(260 / g.G)));
      perRow = g.H;
    }
    var gap = cell >= 10 ? 1 : 0;
    var box = document.createElement("div");
    box.className = "arr";
    box.id = "array-" + A.name;
    var note = A.role + " · " + (A.dims.length ? A.dims.join("×") : "scalar") + (g.G !== A.rows || g.H !== A.cols ? " · a cell is " + (g.lo[1] - g.lo[0]) + "×" + (g.clo[1] - g.clo[0]) + " elements" : "");
    box.innerHTML = '<div class="cap"><b>' + esc(A.name) + "</b> " + esc(note) + "</div>";
    var grid = document.createElement("div");
    grid.className = "grid";
    grid.style.gridTemplateColumns = "repeat(" + perRow + ", " + cell + "px)";
    grid.style.gridAutoRows = cell + "px";
    grid.style.gap = gap + "px";
    var html = [];
    for (var i = 0; i < g.G; i++)
      for (var j = 0; j < g.H; j++)
        html.push('<div class="c" data-array="' + esc(A.name) + '" data-row="' + i + '" data-col="' + j + '" data-reads="0" data-writes="0"></div>');
    grid.innerHTML = html.join("");
    box.appendChild(grid);
    el.appendChild(box);
    var kids = grid.children;
    for (i = 0; i < kids.length; i++) cellEls[G.cellBase[ai] + i] = kids[i];
    return { grid: grid, cell: cell, gap: gap, perRow: perRow, oneD: oneD, text: cell >= 26, boxes: [] };
  });
  function readT(perElem) { return top > 0 ? Math.log1p(perElem) / Math.log1p(top) : 0; }

  function paint(x, r, w) {
    var cellEl = cellEls[x];
    cellEl.setAttribute("data-reads", String(r));
    cellEl.setAttribute("data-writes", String(w));
    var per = r / G.cellElems[x], t = readT(per);
    var st = cellEl.style;
    st.backgroundColor = r > 0 ? ramp(BLUES, 0.08 + 0.92 * t) : (w > 0 ? "var(--written-fill)" : "#fff");
    var E = arrEls[G.cellArray[x]];
    st.backgroundImage = r > 0 && w > 0 && E.cell >= 12 ? "linear-gradient(135deg, var(--write) 0 28%, transparent 28%)" : "";
    if (E.text) {
      cellEl.textContent = r > 0 ? fmtCell(Math.round(per * 100) / 100) : (w > 0 ? "w" : "");
      st.color = r > 0 && t > 0.45 ? "#fff" : "#111";
    }
  }

  // The cells a rectangle of elements touches, outlined (one box per visual row of a wrapped
  // 1-D array); on several workers ringed in the color of the worker that ran the step.
  function outline(r, worker) {
    var ai = r.array, g = G.geo[ai], A = arrays[ai], E = arrEls[ai];
    var i0 = cellOf(r.row, A.rows, g.G), i1 = cellOf(r.row + r.rows - 1, A.rows, g.G);
    var j0 = cellOf(r.col, A.cols, g.H), j1 = cellOf(r.col + r.cols - 1, A.cols, g.H);
    var pitch = E.cell + E.gap, pad = 2;
    var rects = [];
    if (!E.oneD) rects.push([i0, j0, i1, j1]);
    else {
      for (var v = Math.floor(j0 / E.perRow); v <= Math.floor(j1 / E.perRow); v++)
        rects.push([v, Math.max(j0, v * E.perRow) - v * E.perRow, v, Math.min(j1, v * E.perRow + E.perRow - 1) - v * E.perRow]);
    }
    rects.forEach(function (q) {
      var b = document.createElement("div");
      b.className = "box" + (writesDram(r.kind) ? " write" : "");
      b.style.left = (q[1] * pitch - pad - 1) + "px";
      b.style.top = (q[0] * pitch - pad - 1) + "px";
      b.style.width = ((q[3] - q[1] + 1) * pitch - E.gap + 2 * pad + 2) + "px";
      b.style.height = ((q[2] - q[0] + 1) * pitch - E.gap + 2 * pad + 2) + "px";
      if (worker !== undefined) {
        b.style.boxShadow = "0 0 0 1px #fff, 0 0 0 4px " + workerColor(worker);
        b.setAttribute("data-worker", String(worker));
      }
      E.grid.appendChild(b);
      E.boxes.push(b);
    });
  }
  function clearOutlines() {
    arrEls.forEach(function (E) { E.boxes.forEach(function (b) { b.remove(); }); E.boxes = []; });
  }

  // The color scale's top (the most reads per element it shows in the darkest blue), and the
  // legend that says it. `several`: whether a step's boxes are ringed by worker.
  function setTop(most, several) {
    top = most;
    var stops = [];
    for (var i = 0; i <= 10; i++) stops.push(ramp(BLUES, 0.08 + 0.092 * i) + " " + (i * 10) + "%");
    var mid = top > 2 ? Math.round(Math.expm1(Math.log1p(top) / 2)) : 0;
    legendEl.innerHTML =
      '<span class="ramp">reads/element <span class="mono">0</span><span class="bar" style="background:linear-gradient(90deg,' + stops.join(",") + ')"></span><span class="mono">' + fmtCell(Math.round(top * 100) / 100) + "</span>" + (mid ? " (log scale; middle ≈ " + mid + ")" : "") + "</span>" +
      '<span><span class="sw" style="background:#fff"></span>not read</span>' +
      '<span><span class="sw" style="background:var(--written-fill)"></span>written</span>' +
      '<span>this step: <span class="sw" style="background:#fff;border:3px solid var(--read)"></span>reads <span class="sw" style="background:#fff;border:3px solid var(--write)"></span>writes' +
      (several ? ", ringed in the color of the worker that ran it" : "") + "</span>";
  }

  return { paint: paint, outline: outline, clearOutlines: clearOutlines, setTop: setTop };
}

return { esc: esc, fmtCell: fmtCell, workerColor: workerColor, readsDram: readsDram, writesDram: writesDram, cellOf: cellOf,
         geometry: geometry, registers: registers, tiles: tiles, dram: dram };
})();
