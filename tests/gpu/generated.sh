#!/usr/bin/env bash
# Every shipped program and every exercise's reference solution, as CUDA generated from the
# program (toysim gpu run --kernel generated), on the GPU at each of the program's own `test`
# settings (ragged shapes among them), 3 heads: the counted traffic must equal the simulated
# traffic × heads, array by array, and the checks must pass (exit 0 of `gpu run`). fp32 at
# every test line; fp16 and bf16 at each program's last one.
# Usage: generated.sh path/to/toysim [FILTER]   (FILTER: a substring of the paths to run, or
# "fragments": the runs of tiles in registers only)
# Exits 77 (ctest: skipped) without a GPU or without NVRTC.
set -uo pipefail
toysim=$(realpath "$1")
filter=${2:-}
cd "$(dirname "$0")/../.."
probe=$("$toysim" gpu run programs/p1_c00.toy --kernel generated --repeats 1 --warmups 0 2>&1)
if [ $? -ne 0 ]; then
  echo "skipped: $(echo "$probe" | grep -m1 error)"
  exit 77
fi
failed=0 runs=0
# "n = 7 d = 3 Br = 3" -> "--set n=7 --set d=3 --set Br=3" (an exercise's words visible, hidden,
# points N and seed = N are not parameters).
settings() {
  sed -E 's/#.*$//; s/^test //; s/\b(visible|hidden)\b//g; s/points [0-9]+//; s/seed = [0-9]+//; s/([A-Za-z_][A-Za-z0-9_]*) = (-?[0-9]+)/--set \1=\2/g'
}
run() {  # FILE DTYPE SETTINGS [--exercise DIR]
  local file=$1 dtype=$2 sets=$3; shift 3
  runs=$((runs + 1))
  # shellcheck disable=SC2086
  if ! out=$("$toysim" gpu run "$file" "$@" --kernel generated $sets --heads 3 --dtype "$dtype" --repeats 1 --warmups 0 2>&1); then
    failed=$((failed + 1))
    echo "FAIL $file $* $sets --dtype $dtype"
    echo "$out" | sed 's/^/    /' | head -40
  fi
}
for file in programs/*.toy programs/attention/*.toy; do
  [[ -n $filter && $file != *$filter* ]] && continue
  mapfile -t tests < <(grep -E '^test ' "$file" | settings)
  [ ${#tests[@]} -eq 0 ] && tests=("")
  for t in "${tests[@]}"; do run "$file" fp32 "$t"; done
  for dtype in fp16 bf16; do run "$file" $dtype "${tests[-1]}"; done
done
for dir in programs/exercises/*/; do
  [[ -n $filter && $dir != *$filter* ]] && continue
  grep -q '^devices ' "$dir/exercise.toy" && continue  # several devices: the toy machine only
  mapfile -t tests < <(grep -E '^test ' "$dir/exercise.toy" | settings)
  [ ${#tests[@]} -eq 0 ] && tests=("")
  for t in "${tests[@]}"; do run "$dir/solution.toy" fp32 "$t" --exercise "$dir"; done
  run "$dir/solution.toy" fp16 "${tests[-1]}" --exercise "$dir"
done
# Tiles in registers (the tensor cores' fragment layout, gpu/codegen/codegen_fragment.cpp): 128- and
# 256-row tiles, in fp16 and bf16, masks and row statistics among them.
if [[ -z $filter || $filter == fragments ]]; then
  for dtype in fp16 bf16; do
    run programs/attention/fa2.toy $dtype "--set n=256 --set d=64 --set Br=128 --set Bc=64"
    run programs/attention/fa2.toy $dtype "--set n=384 --set d=32 --set Br=128 --set Bc=32"
    run programs/attention/fa2.toy $dtype "--set n=512 --set d=16 --set Br=256 --set Bc=16"
    run programs/attention/fa2_causal.toy $dtype "--set n=384 --set d=64 --set B=128"
    run programs/attention/fa2_causal_heaviest_first.toy $dtype "--set n=384 --set d=32 --set B=128"
    run programs/attention/fa2_gqa.toy $dtype "--set n=256 --set d=64 --set Br=128 --set Bc=64"
    run programs/attention/standard_tiled.toy $dtype "--set n=256 --set d=64 --set Br=128 --set Bc=64"
    # The schedule's warps (4 of 32 rows) and stages (K, V copied a tile ahead), ragged last tiles.
    run programs/attention/schedules/fa2_v3_mma.toy $dtype "--set n=1000 --set d=64 --set Br=128 --set Bc=64"
    run programs/attention/schedules/fa2_v3_mma.toy $dtype "--set n=333 --set d=128 --set Br=128 --set Bc=32"
    run programs/attention/schedules/fa2_causal_v3_mma.toy $dtype "--set n=384 --set d=64 --set B=128"
    # Q read from shared memory by ldmatrix at each product (too many floats in registers at once).
    run programs/attention/schedules/fa2_v3_mma.toy $dtype "--set n=384 --set d=128 --set Br=128 --set Bc=64"
    run programs/attention/fa2.toy $dtype "--set n=512 --set d=128 --set Br=256 --set Bc=64"
    # Twice the schedule's warps where 4 would spill (O, S and P 128 wide at d = 128).
    run programs/attention/schedules/fa2_v3_mma.toy $dtype "--set n=384 --set d=128 --set Br=128 --set Bc=128"
    run programs/attention/schedules/fa2_causal_v3_mma.toy $dtype "--set n=384 --set d=128 --set B=128"
    # wgmma on Hopper (tiles in the 128-byte swizzle): N = 128 from 4 warps, and at d = 256 Q, K
    # and V of 4 swizzle parts a row (both operands through descriptors for S = Q·Kᵀ).
    run programs/attention/schedules/fa2_v3_mma.toy $dtype "--set n=384 --set d=64 --set Br=128 --set Bc=128"
    run programs/attention/fa2.toy $dtype "--set n=256 --set d=256 --set Br=128 --set Bc=64"
  done
fi
# What the simulator stops on stops the generated kernel, reported at the instruction's line.
out=$("$toysim" gpu run tests/gpu/bad/edge_shape.toy --repeats 1 --warmups 0 2>&1)
code=$?
expected="tests/gpu/bad/edge_shape.toy:12:5: error: the generated kernel stopped at STORE x, Y[i*B..i*B+B][0..4]: operand shapes that do not fit"
runs=$((runs + 1))
if [[ $code != 2 || $out != "$expected"* ]]; then
  failed=$((failed + 1))
  echo "FAIL tests/gpu/bad/edge_shape.toy: exit $code, expected 2 and: $expected"
  echo "$out" | sed 's/^/    /' | head -10
fi
echo "$((runs - failed)) of $runs generated runs: counted = simulated and checks passed (the last: a located fault)"
[ $failed -eq 0 ]
