#!/usr/bin/env bash
# Simulator speed: numeric mode, all counters on, the 256×256 inner-product matmul
# (50.4 million instructions). Prints each run's rate and the median of the runs.
# Usage: scripts/bench.sh [runs] [path/to/toysim]   (defaults: 7, build/toysim)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-7}
toysim=${2:-build/toysim}
rates=()
for ((i = 0; i < runs; i++)); do
  line=$("$toysim" run programs/matmul_inner.toy --set n=256 --stats | grep '^speed:')
  echo "$line"
  rates+=("$(echo "$line" | sed -E 's/.* = ([0-9.]+) M instructions\/s/\1/')")
done
printf '%s\n' "${rates[@]}" | sort -n | awk '{ r[NR] = $1 } END { printf "median of %d runs: %.1f M instructions/s\n", NR, (NR % 2) ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2 }'
