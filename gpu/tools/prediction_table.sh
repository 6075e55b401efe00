#!/usr/bin/env bash
# The modeled L2's error table: for every recorded cold run of a catalog kernel (traces/gpu/*.cold.json)
# and every point of the FA2 and standard-attention sweeps, the DRAM bytes read and written that
# the simulator predicts (the program walked through the h100 cache preset, sim/exec/cached_count.h)
# against what CUPTI measured on the H100. Needs no GPU: it reads the recorded measurements.
# Writes traces/gpu/prediction.md (the README's table comes from it).
#
#   bash gpu/tools/prediction_table.sh [path/to/toysim]
#
# A recorded run is read back by `toysim diff --gpu FILE`, which predicts each launch on the
# resident blocks per SM the run recorded for it. A sweep point is a `toysim diff` row without
# its per-launch counts, so it is predicted by `toysim cost --cache h100 --cold-launches` at the
# point's parameters, heads and dtype, each launch on the workers the kernel's recorded n = 4096
# run had for that launch (occupancy does not depend on n): the walk is run once per distinct
# count, and a launch's bytes are those of the arrays the recorded run says it reads and writes.
# A multi-launch run gets a row per launch under its own. A recorded run's time, predicted on the
# h100 machine against its measured median, is read the same way, against the program of the
# kernel's schedule where there is one (programs/attention/schedules/, as time_table.sh does):
# its instructions are the program's, so its DRAM bytes are too. Sweep points have no time.
set -euo pipefail
toysim=${1:-build/toysim}
out=${TOYSIM_RESULTS_DIR:-traces/gpu}
python3 - "$toysim" "$out" <<'PY'
import json, os, statistics, subprocess, sys
toysim, out = sys.argv[1], sys.argv[2]
# Writes are judged where a run writes at least this much: below it the flush's residue (0.09 to
# 0.34 MB left dirty, gpu/README.md "Cold L2") is most of what is measured.
WRITES_JUDGED = 5e6

def run(args):
    return json.loads(subprocess.run([toysim] + args, check=True, capture_output=True, text=True).stdout)

runs = ["matmul_inner", "matmul_outer", "matmul_outer.n1536", "matmul_outer.n1536.t16", "softmax_3pass", "softmax_online",
        "standard_tiled.n4096.fp16", "standard_tiled.n4096.fp32", "fa1.n4096.fp16", "fa1.n4096.fp32",
        "fa2.n4096.fp16", "fa2.n4096.fp32", "fa2_v1_wmma.n4096.fp16", "fa2_v2_mma.n4096.fp16", "fa2_v3_mma.n4096.fp16",
        "fa2_backward.n1024.fp16", "fa2_backward_no_d_trick.n1024.fp16"]
rows, read_errors, write_errors, recorded_of = [], [], [], {}

def row(what, workers, read, read_measured, written, written_measured, judged=True, time=None):
    """A table row; the run's errors count in the summary when `judged` (a run, not one of its launches).
    time: (predicted, measured) seconds, where the run has both."""
    read_error = (read - read_measured) / read_measured
    write_error = (written - written_measured) / written_measured if written_measured > 0 else None
    rows.append((what, workers, read, read_measured, read_error, written, written_measured,
                 write_error if written_measured >= WRITES_JUDGED else None, time))
    if judged:
        read_errors.append(read_error)
        if written_measured >= WRITES_JUDGED:
            write_errors.append(write_error)
    print(f"{what}: read {100 * read_error:+.1f}%, written {written / 1e6:.2f} MB against {written_measured / 1e6:.2f} MB", file=sys.stderr)

def workers_text(workers):
    return "/".join(str(w) for w in workers) if len(set(workers)) > 1 else str(workers[0])

for name in runs:
    path = f"{out}/{name}.cold.json"
    recorded = json.load(open(path))
    recorded_of.setdefault(recorded["program"], recorded)
    program = recorded["program"]
    if os.path.exists(f"programs/attention/schedules/{recorded['kernel']}.toy"):
        program = f"programs/attention/schedules/{recorded['kernel']}.toy"
    d = run(["diff", program, "--gpu", path, "--format", "json"])
    p = d["prediction"]
    stages = d["stages"]
    workers = [s.get("predicted_workers", p["workers"]) for s in stages]
    shape = ", ".join(f"{k} = {v}" for k, v in recorded["params"].items())
    timed = all("predicted_time" in s for s in stages)
    def time_of(ss):
        return (sum(s["predicted_time"]["seconds"] for s in ss), sum(s["measured_seconds"] for s in ss)) if timed else None
    row(f"{d['kernel']} ({shape}; {recorded['heads']} heads, {recorded['dtype']})", workers_text(workers),
        p["dram_read_bytes"], sum(s["dram_read_bytes"] for s in stages),
        p["dram_write_bytes"], sum(s["dram_write_bytes"] for s in stages), time=time_of(stages))
    if len(stages) > 1:
        for s, w in zip(stages, workers):
            row(f"… its {s['stage']} launch", str(w), s["predicted_dram_read_bytes"], s["dram_read_bytes"],
                s["predicted_dram_write_bytes"], s["dram_write_bytes"], judged=False, time=time_of([s]))

for program in ["fa2", "standard_tiled"]:
    path = f"programs/attention/{program}.toy"
    recorded = recorded_of[path]
    sms = recorded["device"]["sm_count"]
    for point in json.load(open(f"{out}/{program}.sweep.json")):
        sets = [a for k, v in point["params"].items() for a in ("--set", f"{k}={v}")]
        by_workers, launches = {}, []
        for k, s in enumerate(point["stages"]):
            launch = recorded["launches"][k]
            workers = launch["resident_blocks_per_sm"] * sms
            if workers not in by_workers:
                c = run(["cost", path] + sets + ["--cache", "h100", "--dtype", point["dtype"], "--heads", str(point["heads"]),
                                                 "--workers", str(workers), "--cold-launches", "--format", "json"])
                by_workers[workers] = c["counters"]["l2"]["arrays"]
            arrays = by_workers[workers]
            read = sum(arrays[a]["dram_bytes_read"] for a, n in launch["counted"].items() if n["reads"])
            written = sum(arrays[a].get("dram_bytes_written", 0) for a, n in launch["counted"].items() if n["writes"])
            launches.append((s, workers, read, written))
        row(f"{point['kernel']} sweep, n = {point['params']['n']} ({point['heads']} heads, {point['dtype']})",
            workers_text([w for _, w, _, _ in launches]),
            sum(r for _, _, r, _ in launches), sum(s["dram_read_bytes"] for s, _, _, _ in launches),
            sum(w for _, _, _, w in launches), sum(s["dram_write_bytes"] for s, _, _, _ in launches))
        if len(launches) > 1:
            for s, workers, read, written in launches:
                row(f"… its {s['stage']} launch", str(workers), read, s["dram_read_bytes"], written, s["dram_write_bytes"], judged=False)

with open(f"{out}/prediction.md", "w") as f:
    f.write("| kernel and shape (cold L2) | workers | DRAM read, predicted | measured | error | DRAM written, predicted | measured | error "
            "| time on h100, predicted | measured | error |\n"
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
    for what, workers, read, read_measured, read_error, written, written_measured, write_error, time in rows:
        shown = f"{100 * write_error:+.1f}%" if write_error is not None else "·"
        timed = (f"{time[0] * 1e3:.3f} ms | {time[1] * 1e3:.3f} ms | {100 * (time[0] - time[1]) / time[1]:+.1f}%" if time else "· | · | ·")
        f.write(f"| {what} | {workers} | {read / 1e6:.2f} MB | {read_measured / 1e6:.2f} MB | {100 * read_error:+.1f}% "
                f"| {written / 1e6:.2f} MB | {written_measured / 1e6:.2f} MB | {shown} | {timed} |\n")
    within = sum(abs(e) <= 0.15 for e in read_errors)
    f.write(f"\nReads, {len(read_errors)} runs and points: {within} within ±15%; median |error| "
            f"{100 * statistics.median(abs(e) for e in read_errors):.1f}%, largest {100 * max(read_errors, key=abs):+.1f}%.\n")
    within = sum(abs(e) <= 0.15 for e in write_errors)
    f.write(f"Writes, the {len(write_errors)} runs and points that write at least {WRITES_JUDGED / 1e6:.0f} MB: {within} within ±15%; "
            f"median |error| {100 * statistics.median(abs(e) for e in write_errors):.1f}%, largest {100 * max(write_errors, key=abs):+.1f}%. "
            f"· : under {WRITES_JUDGED / 1e6:.0f} MB written, not judged. Workers a/b/c: per launch. "
            f"Time: the h100 machine's prediction (sim/timing/) against the run's median of 20; every timed launch, "
            f"with the kernels recorded since, is in time_prediction.md.\n")
print(f"{out}/prediction.md")
PY
