#!/usr/bin/env bash
# The h100 machine's predicted time against the GPU, live: three rows of
# traces/gpu/time_prediction.md (v3, v4 and the causal v4 at n = 4096, d = 64, 16 heads, fp16,
# cold L2), each read against the program of its kernel's schedule. `toysim diff` runs the
# kernel (median of 20 launches) and predicts its time; each must be within ±25% of the
# measured median. TOYSIM_TIME_N=16384 runs the same rows at another n.
# Usage: time_vs_measured.sh path/to/toysim
# Exits 77 (ctest: skipped) without a GPU.
set -euo pipefail
toysim=$(realpath "$1")
cd "$(dirname "$0")/../.."
n=${TOYSIM_TIME_N:-4096}
errors=$(mktemp)
trap 'rm -f "$errors"' EXIT
status=0
for row in "fa2_v3_mma|n=$n d=64 Br=128 Bc=64" "fa2_v4_wgmma|n=$n d=64 Br=128 Bc=128" "fa2_causal_v4_wgmma|n=$n d=64 B=128"; do
  kernel=${row%%|*}
  sets=()
  for s in ${row#*|}; do sets+=(--set "$s"); done
  if ! json=$("$toysim" diff "programs/attention/schedules/$kernel.toy" --kernel "$kernel" "${sets[@]}" --heads 16 --dtype fp16 \
                --measure cold --format json 2>"$errors"); then
    echo "skipped: toysim diff could not run $kernel: $(head -1 "$errors")"
    exit 77
  fi
  verdict=$(python3 - "$json" "$kernel" <<'PY'
import json, sys
d, kernel = json.loads(sys.argv[1]), sys.argv[2]
stage = d["stages"][0]
t = stage.get("predicted_time")
if t is None:
    print(f"fail {kernel}: no predicted time: " + d.get("prediction", {}).get("why_no_time", "")); sys.exit()
error = (t["seconds"] - stage["measured_seconds"]) / stage["measured_seconds"]
print(f"{'ok' if abs(error) <= 0.25 else 'fail'} {kernel} n={d['params']['n']}: predicted {t['seconds'] * 1e3:.3f} ms, "
      f"measured {stage['measured_seconds'] * 1e3:.3f} ms, error {100 * error:+.1f}% ({t['bound']})")
PY
)
  echo "$verdict"
  case $verdict in
    fail*) status=1 ;;
  esac
done
exit $status
