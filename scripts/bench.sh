#!/usr/bin/env bash
# Simulator speed, numeric mode with every counter on, three workloads:
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

# 3. the stepper: Problem 5 at n = 1,000,000 (14 million steps), a scripted session that goes
#    to step 900,000, back 3, and reverse-continues to the last change of R1 (the running
#    max); wall-clock seconds for the whole session and its peak resident set.
times=()
for ((i = 0; i < runs; i++)); do
  line=$( { /usr/bin/time -f '%e s, %M KB' "$toysim" step programs/p5_online_softmax.toy --set n=1000000 \
            <<< $'goto 900000\nback 3\nwatch R1\nreverse-continue' >/dev/null; } 2>&1 | tail -1)
  echo "step session: $line"
  times+=("${line%% s,*}")
done
printf '%s\n' "${times[@]}" | median "s (step session on P5, n = 1,000,000)"
