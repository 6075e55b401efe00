#!/usr/bin/env bash
# The modeled L2's error table: for every recorded cold run of a catalog kernel (traces/gpu/*.cold.json)
# and every point of the FA2 and standard-attention sweeps, the DRAM bytes read that the
# simulator predicts (the program walked through the h100 cache preset, sim/exec/cached_count.h)
# against what CUPTI measured on the H100. Needs no GPU: it reads the recorded measurements.
# Writes traces/gpu/prediction.md (the README's table comes from it).
#
#   bash gpu/prediction_table.sh [path/to/toysim]
#
# A recorded run is read back by `toysim diff --gpu FILE`, which predicts on the resident blocks
# per SM the run recorded. A sweep point is a `toysim diff` row without its per-launch counts,
# so it is predicted by `toysim cost --cache h100 --cold-launches` at the point's parameters,
# heads and dtype, on the workers the kernel's recorded n = 4096 run had (occupancy does not
# depend on n).
set -euo pipefail
toysim=${1:-build/toysim}
out=${TOYSIM_RESULTS_DIR:-traces/gpu}
python3 - "$toysim" "$out" <<'PY'
import json, statistics, subprocess, sys
toysim, out = sys.argv[1], sys.argv[2]

def run(args):
    return json.loads(subprocess.run([toysim] + args, check=True, capture_output=True, text=True).stdout)

runs = ["matmul_inner", "matmul_outer", "softmax_3pass", "softmax_online",
        "standard_tiled.n4096.fp16", "standard_tiled.n4096.fp32", "fa1.n4096.fp16", "fa1.n4096.fp32",
        "fa2.n4096.fp16", "fa2.n4096.fp32", "fa2_v1_wmma.n4096.fp16", "fa2_v2_mma.n4096.fp16", "fa2_v3_mma.n4096.fp16",
        "fa2_backward.n1024.fp16", "fa2_backward_no_d_trick.n1024.fp16"]
rows, errors, workers_of = [], [], {}
for name in runs:
    path = f"{out}/{name}.cold.json"
    recorded = json.load(open(path))
    d = run(["diff", recorded["program"], "--gpu", path, "--format", "json"])
    p = d["prediction"]
    measured = sum(s["dram_read_bytes"] for s in d["stages"])
    error = (p["dram_read_bytes"] - measured) / measured
    workers_of.setdefault(recorded["program"], p["workers"])
    shape = ", ".join(f"{k} = {v}" for k, v in recorded["params"].items())
    rows.append((f"{d['kernel']} ({shape}; {recorded['heads']} heads, {recorded['dtype']})", p["workers"], p["dram_read_bytes"], measured, error))
    errors.append(error)
    print(f"{name}: {100 * error:+.1f}%", file=sys.stderr)

for program in ["fa2", "standard_tiled"]:
    for point in json.load(open(f"{out}/{program}.sweep.json")):
        path = f"programs/attention/{program}.toy"
        workers = workers_of[path]
        sets = [a for k, v in point["params"].items() for a in ("--set", f"{k}={v}")]
        c = run(["cost", path] + sets + ["--cache", "h100", "--dtype", point["dtype"], "--heads", str(point["heads"]),
                                          "--workers", str(workers), "--cold-launches", "--format", "json"])
        predicted = c["counters"]["l2"]["dram_bytes_read"]
        measured = sum(s["dram_read_bytes"] for s in point["stages"])
        error = (predicted - measured) / measured
        rows.append((f"{point['kernel']} sweep, n = {point['params']['n']} ({point['heads']} heads, {point['dtype']})", workers, predicted, measured, error))
        errors.append(error)
        print(f"{program} n={point['params']['n']}: {100 * error:+.1f}%", file=sys.stderr)

with open(f"{out}/prediction.md", "w") as f:
    f.write("| kernel and shape (cold L2) | workers | DRAM read, predicted | measured | error |\n| --- | --- | --- | --- | --- |\n")
    for what, workers, predicted, measured, error in rows:
        f.write(f"| {what} | {workers} | {predicted / 1e6:.2f} MB | {measured / 1e6:.2f} MB | {100 * error:+.1f}% |\n")
    within = sum(abs(e) <= 0.15 for e in errors)
    f.write(f"\n{len(errors)} points: {within} within ±15%; median |error| {100 * statistics.median(abs(e) for e in errors):.1f}%, "
            f"largest {100 * max(errors, key=abs):+.1f}%.\n")
print(f"{out}/prediction.md")
PY
