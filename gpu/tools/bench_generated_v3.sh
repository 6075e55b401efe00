#!/usr/bin/env bash
# Generated CUDA against the hand-written fa2_v3_mma, one after the other in one run (issue 38's
# benchmark): at n = 4096 and 16384, d = 64 and 128, fp16 and bf16, 262,144 query rows (64 heads
# at n = 4096, 16 at 16384), Br = 128, the median of 10 launches each:
#   - fa2_v3_mma, the hand-written kernel (Bc = 64, its best);
#   - CUDA generated from programs/attention/schedules/fa2_v3_mma.toy (fa2.toy's instructions with
#     v3's schedule: warps 4, K and V `stages 2`), Bc = 64 and 128;
#   - CUDA generated from programs/attention/fa2.toy (no schedule), Bc = 64 and 128.
# Each generated program's faster Bc is set against the hand-written time. Every run counts its
# traffic against the simulator's and checks its outputs (`ok`). Writes
# OUT/bench_generated_v3_<gpu>.json and .md (OUT: gpu/results by default).
#
#   bash gpu/tools/bench_generated_v3.sh [path/to/toysim] [OUT]
set -euo pipefail
toysim=${1:-build/toysim}
out=${2:-gpu/results}
mkdir -p "$out"
v3=programs/attention/schedules/fa2_v3_mma.toy
rows=$(mktemp)
trap 'rm -f "$rows"' EXIT
run() {  # LABEL PROGRAM KERNEL N D BC HEADS DTYPE
  local json
  json=$("$toysim" gpu run "$2" --kernel "$3" --set n="$4" --set d="$5" --set Br=128 --set Bc="$6" --heads "$7" --dtype "$8" \
    --warmups 2 --repeats 10 --format json) || true
  python3 - "$1" "$4" "$5" "$6" "$8" "$json" >>"$rows" <<'PY'
import json, sys
label, n, d, bc, dtype, text = sys.argv[1:]
r = json.loads(text)
print(json.dumps({"label": label, "n": int(n), "d": int(d), "Bc": int(bc), "dtype": dtype, "device": r["device"]["name"],
                  "ms": r["time_ms"]["median"], "tflops": r.get("tflops"),
                  "ok": bool(r.get("traffic_equal")) and bool(r.get("check", {}).get("passed", False))}))
PY
}
for dtype in fp16 bf16; do
  for d in 64 128; do
    for n in 4096 16384; do
      heads=$((262144 / n))
      run hand "$v3" fa2_v3_mma $n $d 64 $heads $dtype
      for bc in 64 128; do
        run schedule "$v3" generated $n $d $bc $heads $dtype
        run plain programs/attention/fa2.toy generated $n $d $bc $heads $dtype
      done
    done
  done
done
python3 - "$rows" "$out" <<'PY'
import json, re, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
device = rows[0]["device"]
tag = re.sub(r"[^a-z0-9]+", "", device.lower().replace("nvidia", ""))[:4]
cells = {}
for r in rows:
    cells.setdefault((r["dtype"], r["n"], r["d"]), {}).setdefault(r["label"], []).append(r)
table = []
for (dtype, n, d), c in cells.items():
    hand = c["hand"][0]
    best = {k: min(c[k], key=lambda r: r["ms"]) for k in ("schedule", "plain")}
    table.append({"dtype": dtype, "n": n, "d": d, "hand": hand, "schedule": best["schedule"], "plain": best["plain"],
                  "schedule_over_hand": hand["ms"] / best["schedule"]["ms"], "plain_over_hand": hand["ms"] / best["plain"]["ms"]})
json.dump({"device": device, "runs": rows, "cells": table}, open(f"{sys.argv[2]}/bench_generated_v3_{tag}.json", "w"), indent=1)
with open(f"{sys.argv[2]}/bench_generated_v3_{tag}.md", "w") as f:
    f.write(f"# Generated fa2 against the hand-written fa2_v3_mma ({device})\n\n")
    f.write("One run (`bash gpu/tools/bench_generated_v3.sh`), median of 10 launches, Br = 128, 262,144 query rows; generated: the faster of\n"
            "Bc = 64 and 128. `schedule`: CUDA generated from schedules/fa2_v3_mma.toy (warps 4, K and V stages 2); `plain`: from fa2.toy.\n\n")
    f.write("| dtype | n | d | hand ms | schedule ms (Bc) | schedule / hand | plain ms (Bc) | plain / hand | ok |\n|---|---:|---:|---:|---:|---:|---:|---:|---|\n")
    for t in table:
        ok = all(r["ok"] for r in (t["hand"], t["schedule"], t["plain"]))
        f.write(f"| {t['dtype']} | {t['n']} | {t['d']} | {t['hand']['ms']:.3f} | {t['schedule']['ms']:.3f} ({t['schedule']['Bc']}) | "
                f"{t['schedule_over_hand']:.2f}× | {t['plain']['ms']:.3f} ({t['plain']['Bc']}) | {t['plain_over_hand']:.2f}× | {'ok' if ok else 'FAILED'} |\n")
print(open(f"{sys.argv[2]}/bench_generated_v3_{tag}.md").read())
PY
