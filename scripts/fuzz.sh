#!/usr/bin/env bash
# Builds the libFuzzer target toysim_fuzz (clang++, ASan + UBSan + _GLIBCXX_ASSERTIONS; preset
# "fuzz") and fuzzes it for SECONDS seconds (default 60), starting from a copy of
# tests/fuzz/corpus/ with the dictionary tests/fuzz/toy.dict. Every input that crashes it (or
# times out, runs out of memory or leaks) is copied to tests/fuzz/crashes/, which the test
# suite replays (tests/test_fuzz_regressions.cpp), and the script then fails.
#
# usage: scripts/fuzz.sh [SECONDS]
#   TOYSIM_FUZZ_BUILD_DIR  build folder (default build-fuzz)
#   JOBS                   parallel compile jobs (default: the number of cores)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
build=${TOYSIM_FUZZ_BUILD_DIR:-build-fuzz}
jobs=${JOBS:-$(nproc)}

cmake --preset fuzz -B "$build" >/dev/null
cmake --build "$build" --target toysim_fuzz -j "$jobs"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$work/artifacts" tests/fuzz/crashes
cp tests/fuzz/corpus/* "$work/corpus/"

status=0
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  "$build/tests/fuzz/toysim_fuzz" "$work/corpus" -dict=tests/fuzz/toy.dict -max_len=4096 -timeout=10 \
  -rss_limit_mb=2048 -max_total_time="$seconds" -artifact_prefix="$work/artifacts/" -print_final_stats=1 || status=$?

shopt -s nullglob
found=("$work"/artifacts/*)
for f in "${found[@]}"; do
  cp "$f" tests/fuzz/crashes/
  echo "fuzz: $(basename "$f") -> tests/fuzz/crashes/ (replay: $build/tests/fuzz/toysim_fuzz tests/fuzz/crashes/$(basename "$f"))"
done
if ((status != 0 || ${#found[@]} > 0)); then
  echo "fuzz: FAILED (exit status $status, ${#found[@]} input(s) saved in tests/fuzz/crashes/)" >&2
  exit 1
fi
echo "fuzz: no crash in ${seconds} s"
