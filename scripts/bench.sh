#!/usr/bin/env bash
# Simulator speed, numeric mode with every counter on, two workloads:
#  1. scalar: the 256×256 inner-product matmul (50.4 million instructions), in simulated
#     instructions per second;
#  2. tiles: FlashAttention-2 at n = 4096, d = 64, 64×64 blocks (2.1 billion multiply-adds in
#     62,016 tile instructions), in GFLOP/s of its MAC and MAC_Z (2 flops per multiply-add).
# Prints each run's rate and the median of the runs for each.
# Usage: scripts/bench.sh [runs] [path/to/toysim]   (defaults: 7, build/toysim)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-7}
toysim=${2:-build/toysim}

median() {
  sort -n | awk -v what="$1" '{ r[NR] = $1 } END { printf "median of %d runs: %.2f %s\n", NR, (NR % 2) ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2, what }'
}

rates=()
for ((i = 0; i < runs; i++)); do
  line=$("$toysim" run programs/matmul_inner.toy --set n=256 --stats | grep '^speed:')
  echo "$line"
  rates+=("$(echo "$line" | sed -E 's/.* = ([0-9.]+) M instructions\/s/\1/')")
done
printf '%s\n' "${rates[@]}" | median "M instructions/s (scalar matmul, n = 256)"

rates=()
for ((i = 0; i < runs; i++)); do
  line=$("$toysim" run programs/attention/fa2.toy --set n=4096 --set d=64 --set Br=64 --set Bc=64 --stats | grep -A1 '^speed:' | tail -1)
  echo "$line"
  rates+=("$(echo "$line" | sed -E 's/.*, ([0-9.]+) GFLOP\/s.*/\1/')")
done
printf '%s\n' "${rates[@]}" | median "GFLOP/s (FlashAttention-2 tiles, n = 4096, d = 64)"
