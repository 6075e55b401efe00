#!/usr/bin/env bash
# Builds toysim and runs every test: once in Release (g++), once under ASan + UBSan +
# _GLIBCXX_ASSERTIONS (clang++), then fuzzes for FUZZ_SECONDS (default 60) with libFuzzer.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
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

stage "fuzz: ${FUZZ_SECONDS:-60} s"
JOBS=$jobs bash scripts/fuzz.sh "${FUZZ_SECONDS:-60}"
stage "done"
