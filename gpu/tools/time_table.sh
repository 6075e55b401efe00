#!/usr/bin/env bash
# The time model's error table: for every recorded cold run of a catalog kernel
# (traces/gpu/*.cold.json), each launch's time predicted on the named machine (sim/timing/,
# isa/machine.h) against the median the run measured on its GPU (the H100's in traces/gpu, the
# H200's in traces/gpu/h200: each run is predicted on the named machine of the device it names).
# Needs no GPU: it reads the recorded runs back with `toysim diff --gpu FILE`. Writes
# traces/gpu/time_prediction.md, or TOYSIM_RESULTS_DIR's; a run not recorded there is listed.
#
#   bash gpu/tools/time_table.sh [path/to/toysim] [TABLE]
#
# TABLE: where to write the table (default: time_prediction.md beside the recorded runs). To
# check that the committed table is still what the model says (a change to the model or to a
# program can leave it stale; it takes about 6 CPU-minutes, too long for the test suite):
#   bash gpu/tools/time_table.sh build/toysim /tmp/t.md && diff /tmp/t.md traces/gpu/time_prediction.md
set -euo pipefail
toysim=${1:-build/toysim}
out=${TOYSIM_RESULTS_DIR:-traces/gpu}
table=${2:-$out/time_prediction.md}
python3 - "$toysim" "$out" "$table" <<'PY'
import json, os, statistics, subprocess, sys
toysim, out, table = sys.argv[1], sys.argv[2], sys.argv[3]
runs = ["matmul_inner", "matmul_outer", "matmul_outer.n1536", "matmul_outer.n1536.t16", "softmax_3pass", "softmax_online",
        "standard_tiled.n4096.fp16", "standard_tiled.n4096.fp32", "fa1.n4096.fp16", "fa1.n4096.fp32",
        "fa2.n4096.fp16", "fa2.n4096.fp32", "fa2_v1_wmma.n4096.fp16", "fa2_v2_mma.n4096.fp16", "fa2_v3_mma.n4096.fp16",
        "fa2_backward.n1024.fp16", "fa2_backward_no_d_trick.n1024.fp16",
        "fa2_v4_wgmma.n4096.fp16", "fa2_causal.n4096.fp16", "fa2_causal_v3_mma.n4096.fp16", "fa2_causal_v4_wgmma.n4096.fp16",
        "fa2_backward_mma.n4096.fp16", "fa2_generated.n4096.fp16", "fa1_generated.n4096.fp16"]
rows, errors, none = [], [], []
# v0 to v4 of FA2's forward (n = 4096, d = 64, 16 heads, fp16): where each one's chain goes.
versions = {"fa2.n4096.fp16": "v0 CUDA cores", "fa2_v1_wmma.n4096.fp16": "v1 WMMA", "fa2_v2_mma.n4096.fp16": "v2 mma.sync",
            "fa2_v3_mma.n4096.fp16": "v3 mma.sync, 4 warps", "fa2_v4_wgmma.n4096.fp16": "v4 wgmma + TMA"}
parts = ["memory", "copies", "products", "special", "alu", "waits"]
version_rows = []
missing = []
for name in runs:
    path = f"{out}/{name}.cold.json"
    if not os.path.exists(path):  # a folder of another GPU's runs may hold some of them (traces/gpu/h200/)
        missing.append(name)
        continue
    recorded = json.load(open(path))
    # A kernel version's own schedule, where it has one (programs/attention/schedules/).
    program = recorded["program"]
    if os.path.exists(f"programs/attention/schedules/{recorded['kernel']}.toy"):
        program = f"programs/attention/schedules/{recorded['kernel']}.toy"
    d = json.loads(subprocess.run([toysim, "diff", program, "--gpu", path, "--format", "json"],
                                  check=True, capture_output=True, text=True).stdout)
    shape = ", ".join(f"{k} = {v}" for k, v in recorded["params"].items())
    kernel = d["kernel"] if d["kernel"] != "generated" else "CUDA generated from " + recorded["program"].split("/")[-1]
    what = f"{kernel} ({shape}; {recorded['heads']} heads, {recorded['dtype']})"
    p = d["prediction"]
    if not any("predicted_time" in s for s in d["stages"]):
        none.append(f"{what}: {p.get('why_no_time', 'no prediction')}")
        continue
    if name in versions:
        s, t = d["stages"][0], d["stages"][0]["predicted_time"]
        version_rows.append(f"| {versions[name]} | " + " | ".join(f"{t['chain'][k] * 1e3:.3f}" for k in parts) +
                            f" | {t['seconds'] * 1e3:.3f} ms | {s['measured_seconds'] * 1e3:.3f} ms |")
    for s in d["stages"]:
        t = s["predicted_time"]
        label = what if len(d["stages"]) == 1 else f"{what}, its {s['stage']} launch"
        rows.append((label, t["seconds"], s["measured_seconds"], t["error"], t["bound"]))
        errors.append(t["error"])
lines = ["| kernel and shape (cold L2), launch | predicted | measured (median of 20) | error | bound |",
         "| --- | --- | --- | --- | --- |"]
for label, predicted, measured, error, bound in rows:
    lines.append(f"| {label} | {predicted * 1e3:.3f} ms | {measured * 1e3:.3f} ms | {100 * error:+.1f}% | {bound} |")
absolute = [abs(e) for e in errors]
lines.append("")
lines.append(f"{len(errors)} launches: median |error| {100 * statistics.median(absolute):.1f}%, "
             f"{sum(a <= 0.25 for a in absolute)} within ±25%, {sum(a <= 0.10 for a in absolute)} within ±10%; "
             f"worst {100 * max(errors, key=abs):+.1f}%.")
lines += ["", "FA2's forward, v0 to v4 (n = 4096, d = 64, 16 heads, fp16): the chain bound's parts on the busiest SM, in ms "
          "(copies overlap the rest; the chain is memory + the longer of copies and the others)", "",
          "| version | memory | copies | products | special | alu | waits | predicted | measured |",
          "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"] + version_rows
if missing:
    lines += ["", "Not recorded in this folder: " + ", ".join(missing) + "."]
if none:
    lines.append("")
    lines.append("No predicted time:")
    lines += [f"- {n}" for n in none]
open(table, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
