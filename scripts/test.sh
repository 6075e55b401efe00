#!/usr/bin/env bash
# Builds toysim and runs every test: once in Release (g++), once under ASan + UBSan +
# _GLIBCXX_ASSERTIONS (clang++), then replays the fuzz corpus and past crashes and fuzzes FUZZ_RUNS
# inputs (default 20000) from a fixed seed with libFuzzer: the same commit, the same answer.
# Open-ended fuzzing is scripts/fuzz.sh SECONDS.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-test-deps.sh
jobs=$(nproc)
stage() { echo "== $* ($(date +%T))"; }

stage "release: g++"
cmake --preset release >/dev/null
cmake --build --preset release -j "$jobs"
ctest --preset release -j "$jobs"

stage "sanitize: clang++, ASan + UBSan + _GLIBCXX_ASSERTIONS"
cmake --preset sanitize >/dev/null
cmake --build --preset sanitize -j "$jobs"
ctest --preset sanitize -j "$jobs"

stage "fuzz: the saved inputs, then ${FUZZ_RUNS:-20000} runs from a fixed seed"
JOBS=$jobs bash scripts/fuzz.sh --ci "${FUZZ_RUNS:-20000}"
stage "done"
