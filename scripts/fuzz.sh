#!/usr/bin/env bash
# Builds the libFuzzer target toysim_fuzz (clang++, ASan + UBSan + _GLIBCXX_ASSERTIONS; preset
# "fuzz") and runs it in one of two ways:
#
#   scripts/fuzz.sh SECONDS      open-ended fuzzing for SECONDS seconds (default 60) from a random
#                                seed: what a developer runs (10 minutes at least) before a change
#                                to the parser, compiler, machine, stepper, viewer or grader.
#   scripts/fuzz.sh --ci [RUNS]  the reproducible stage of scripts/test.sh: every file of
#                                tests/fuzz/corpus/ and tests/fuzz/crashes/ once, then RUNS inputs
#                                (default 20000) mutated from the corpus with a fixed seed. The same
#                                commit gives the same inputs and the same answer on every run.
#
# Both start from a copy of tests/fuzz/corpus/ with the dictionary tests/fuzz/toy.dict. Every
# input that crashes the target (or times out, runs out of memory or leaks) is copied to
# tests/fuzz/crashes/, which the test suite replays (tests/test_fuzz_regressions.cpp), and the
# script then fails.
#
#   TOYSIM_FUZZ_BUILD_DIR  build folder (default build-fuzz)
#   JOBS                   parallel compile jobs (default: the number of cores)
set -euo pipefail
cd "$(dirname "$0")/.."
ci=0
if [[ "${1:-}" == "--ci" ]]; then
  ci=1
  runs=${2:-20000}
else
  seconds=${1:-60}
fi
readonly seed=20261124  # the CI stage's; open-ended runs take a random one and print it
build=${TOYSIM_FUZZ_BUILD_DIR:-build-fuzz}
jobs=${JOBS:-$(nproc)}

cmake --preset fuzz -B "$build" >/dev/null
cmake --build "$build" --target toysim_fuzz -j "$jobs"
fuzzer="$build/tests/fuzz/toysim_fuzz"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$work/artifacts" tests/fuzz/crashes
# Copied in name order, so that the corpus folder lists the same way on every run.
while IFS= read -r f; do cp "tests/fuzz/corpus/$f" "$work/corpus/"; done < <(ls tests/fuzz/corpus | LC_ALL=C sort)

export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
common=(-dict=tests/fuzz/toy.dict -max_len=4096 -rss_limit_mb=2048 -artifact_prefix="$work/artifacts/" -print_final_stats=1)
# The CI stage runs without address-space randomization (setarch -R, where it works): code that
# hashes or orders by address would otherwise cover different paths from run to run, and the
# same seed would then explore different inputs.
norandom() { if setarch "$(uname -m)" -R true 2>/dev/null; then setarch "$(uname -m)" -R "$@"; else "$@"; fi; }
status=0
if ((ci)); then
  # 1. Replay: each saved input once, in name order (a slow machine gets a generous timeout:
  #    only a real hang exceeds it).
  mapfile -t saved < <(find tests/fuzz/corpus tests/fuzz/crashes -type f ! -name 'README*' | LC_ALL=C sort)
  norandom "$fuzzer" "${common[@]}" -timeout=60 -runs=1 "${saved[@]}" > "$work/replay.log" 2>&1 || status=$?
  if ((status != 0)); then tail -40 "$work/replay.log"; fi
  echo "fuzz: replayed ${#saved[@]} saved inputs (tests/fuzz/corpus, tests/fuzz/crashes)"
  # 2. Fixed seed, fixed number of runs, one process: the same inputs every time.
  if ((status == 0)); then
    norandom "$fuzzer" "$work/corpus" "${common[@]}" -timeout=60 -seed="$seed" -runs="$runs" -shuffle=0 > "$work/fuzz.log" 2>&1 || status=$?
    grep -E '^#[0-9]+\s+(INITED|DONE)|stat::number_of_executed_units|stat::new_units_added' "$work/fuzz.log" || true
    if ((status != 0)); then tail -60 "$work/fuzz.log"; fi
  fi
else
  "$fuzzer" "$work/corpus" "${common[@]}" -timeout=10 -max_total_time="$seconds" || status=$?
fi

shopt -s nullglob
found=("$work"/artifacts/*)
for f in "${found[@]}"; do
  cp "$f" tests/fuzz/crashes/
  echo "fuzz: $(basename "$f") -> tests/fuzz/crashes/ (replay: $fuzzer tests/fuzz/crashes/$(basename "$f"))"
done
if ((status != 0 || ${#found[@]} > 0)); then
  echo "fuzz: FAILED (exit status $status, ${#found[@]} input(s) saved in tests/fuzz/crashes/)" >&2
  exit 1
fi
if ((ci)); then
  echo "fuzz: no crash in $runs runs from seed $seed"
else
  echo "fuzz: no crash in ${seconds} s"
fi
