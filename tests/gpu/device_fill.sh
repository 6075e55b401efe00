#!/usr/bin/env bash
# Inputs filled on the device (gpu/runtime/reference_fill.cu): past gpu run's CPU budget, a
# program's `input O = attention(Q, K, V)` and `input L = attention_lse(Q, K)` (and their causal
# forms) are computed on the GPU, checked at sampled rows against the CPU's reference. At the
# budget's edge (tests/gpu/device_fill.toy, n = 2048, d = 64: 5.4·10^8 multiply-adds a plain fill
# a head, half that a causal one) the device fills all four at 8 heads, the plain two at 4, none
# at 3; every run's checks pass, in fp16 and fp32. Then the backward at 16 heads, n = 4096 and
# n = 16384, d = 128 (O alone 1.6·10^11 multiply-adds on the CPU, refused before).
# Usage: device_fill.sh path/to/toysim. Exits 77 (ctest: skipped) without a GPU or NVRTC.
set -uo pipefail
toysim=$(realpath "$1")
cd "$(dirname "$0")/../.."
probe=$("$toysim" gpu run programs/p1_c00.toy --kernel generated --repeats 1 --warmups 0 2>&1) || {
  echo "skipped: $(echo "$probe" | head -1)"
  exit 77
}
failed=0
run() {  # expected-device-fills description args...
  local want=$1 what=$2
  shift 2
  local json
  if ! json=$("$toysim" gpu run "$@" --repeats 3 --warmups 1 --format json 2>&1); then
    echo "FAIL $what: $(echo "$json" | head -3)"
    failed=$((failed + 1))
    return
  fi
  python3 - "$want" "$what" "$json" <<'PY' || failed=$((failed + 1))
import json, sys
want, what, j = int(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
arrays = j["check"]["arrays"]
filled = [c for c in arrays if c["reference"].endswith("filled on the device")]
bad = [c for c in arrays if not c["passed"]]
ok = j["check"]["passed"] and j["traffic_equal"] and len(filled) == want and not bad
worst = max((c["max_abs_error"] for c in filled), default=0)
print(f"{'ok  ' if ok else 'FAIL'} {what}: {len(filled)} inputs filled on the device (largest error {worst:.2g}), "
      f"{len(arrays) - len(filled)} checks, {j['time_ms']['median']:.3f} ms")
for c in bad: print(f"    {c['array']} = {c['reference']}: {c.get('first_mismatch', '')}")
sys.exit(0 if ok else 1)
PY
}
shape=(--set n=2048 --set d=64 --set B=64 --kernel generated)
run 4 "device_fill.toy, 8 heads, fp16" tests/gpu/device_fill.toy "${shape[@]}" --heads 8 --dtype fp16
run 4 "device_fill.toy, 8 heads, fp32" tests/gpu/device_fill.toy "${shape[@]}" --heads 8 --dtype fp32
run 2 "device_fill.toy, 4 heads, fp16 (the causal fills the CPU's)" tests/gpu/device_fill.toy "${shape[@]}" --heads 4 --dtype fp16
run 0 "device_fill.toy, 3 heads, fp16 (the CPU's)" tests/gpu/device_fill.toy "${shape[@]}" --heads 3 --dtype fp16
bwd=(programs/attention/fa2_backward.toy --kernel fa2_backward_mma --heads 16 --dtype fp16)
run 2 "fa2_backward_mma, n = 4096, d = 64, 16 heads" "${bwd[@]}" --set n=4096 --set d=64 --set Br=128 --set Bc=128
run 2 "fa2_backward_mma, n = 16384, d = 128, 16 heads" "${bwd[@]}" --set n=16384 --set d=128 --set Br=64 --set Bc=128
[ $failed -eq 0 ]
