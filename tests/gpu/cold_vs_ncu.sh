#!/usr/bin/env bash
# One cold-L2 launch measured two ways must agree within 5%: toysim's own in-process CUPTI
# measurement (`gpu run --measure cold`) and Nsight Compute's with its cache control
# (`ncu --cache-control all`, which writes back and invalidates the caches before each profiled
# launch), on the same command: fa2_forward at n = 8192, d = 64, Br = Bc = 64, 64 heads, fp16.
# DRAM bytes read and written, each. A launch's DRAM writes vary from launch to launch (what
# the L2 still holds dirty when the kernel ends is never written during it, and that depends on
# the blocks' timing), so ncu profiles three launches of the same kind as toysim's measured one
# (the timed variant, from restored arrays: two warm-ups and the timed launch) and toysim's
# figure must lie within 5% of their range.
#
#   tests/gpu/cold_vs_ncu.sh path/to/toysim read|write|both
#
# On an H100 (2026-11-25): reads 201.9-202.3 MB against ncu's 201.9-202.2; writes 62.0-62.3 MB against
# ncu's 61.9-64.3 MB. 64 heads, because O and L (69 MB) are more than the L2 keeps dirty, so
# most of what the launch writes must reach DRAM during it: at 16 heads (17.3 MB written) the
# launch writes back 8.4-8.9 MB against ncu's 9.4-11.7, as the blocks' timing decides. Before
# the profiler's throwaway first range (gpu/runtime/profiler.cu), every measured launch also counted
# about 20 MB of writes that were CUPTI's own (gpu/README.md, "Cold L2").
# Exits 77 (skipped) without a CUDA build, a GPU, ncu, or the permission to read counters.
set -euo pipefail
toysim=${1:?usage: tests/gpu/cold_vs_ncu.sh path/to/toysim read|write|both}
which=${2:-both}
ncu=${TOYSIM_NCU:-$(command -v ncu || true)}
[[ -n $ncu && -x $ncu ]] || { echo "skipped: no ncu (Nsight Compute) on PATH"; exit 77; }
args=(gpu run programs/attention/fa2.toy --set n=8192 --set d=64 --set Br=64 --set Bc=64 --heads 64 --dtype fp16 --repeats 1)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

status=0
"$toysim" "${args[@]}" --warmups 0 --measure cold --format json > "$work/toysim.json" 2> "$work/toysim.err" || status=$?
if ((status != 0)); then
  if grep -qE "no CUDA device|no usable CUDA device|without CUDA|built without" "$work/toysim.err"; then
    echo "skipped: $(head -1 "$work/toysim.err")"; exit 77
  fi
  cat "$work/toysim.err" >&2; exit 1
fi
# Three launches of fa2_forward after the checked and the counted ones (two warm-ups and a timed
# one, each from restored arrays), each with ncu's flush before it.
"$ncu" --cache-control all --clock-control none --launch-skip 2 --launch-count 3 -k regex:fa2 --csv --print-units base \
  --metrics dram__bytes_read.sum,dram__bytes_write.sum "$toysim" "${args[@]}" --warmups 2 --measure off --format json \
  > "$work/ncu.csv" 2> "$work/ncu.err" || { cat "$work/ncu.err" "$work/ncu.csv" >&2; exit 1; }
if grep -q "ERR_NVGPUCTRPERM" "$work/ncu.csv" "$work/ncu.err"; then echo "skipped: no permission to read GPU performance counters"; exit 77; fi

python3 - "$work/toysim.json" "$work/ncu.csv" "$which" <<'PY'
import csv, json, sys
run = json.load(open(sys.argv[1]))
stage = run["launches"][0]["measured"]
if not stage.get("available"):
    print("skipped: toysim could not measure:", stage.get("why_not")); sys.exit(77)
ours = {"read": stage["dram_read_bytes"], "write": stage["dram_write_bytes"]}
theirs = {"read": [], "write": []}
rows = [r for r in csv.reader(l for l in open(sys.argv[2]) if l.startswith('"'))]
head = rows[0]
for r in rows[1:]:
    rec = dict(zip(head, r))
    name = rec.get("Metric Name", "")
    if name.startswith("dram__bytes_"):
        theirs["read" if "read" in name else "write"].append(float(rec["Metric Value"].replace(",", "")))
if len(theirs["read"]) != 3 or len(theirs["write"]) != 3:
    print(f"ncu profiled {len(theirs['read'])} launches, not 3:", open(sys.argv[2]).read()[-2000:]); sys.exit(1)
failed = False
for k in (("read", "write") if sys.argv[3] == "both" else (sys.argv[3],)):
    a, lo, hi = ours[k], min(theirs[k]), max(theirs[k])
    ok = 0.95 * lo <= a <= 1.05 * hi
    failed |= not ok
    print(f"DRAM {k:5}: toysim --measure cold {a / 1e6:8.2f} MB; ncu --cache-control all, three launches: "
          f"{', '.join(f'{b / 1e6:.2f}' for b in theirs[k])} MB; {'ok' if ok else 'FAIL'} (within 5% of {lo / 1e6:.2f}..{hi / 1e6:.2f} MB)")
sys.exit(1 if failed else 0)
PY
