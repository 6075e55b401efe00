#!/usr/bin/env bash
# Installs what toysim needs to build and test on Debian 12 (run as root): g++ for the
# Release build, clang with its sanitizer and libFuzzer runtimes for the sanitize and fuzz builds,
# libedit for the stepper's line editing, tmux for its test in a real terminal, librsvg2-bin
# (rsvg-convert) for `--plot FILE.png`, libjs-chart.js (Chart.js, inlined into `toysim view`'s
# pages) and chromium for the viewer's test in a real browser (tests/browser/run.sh; node and
# npm install its playwright-core).
set -euo pipefail
packages=(g++ clang libclang-rt-14-dev cmake ninja-build libcli11-dev libfmt-dev nlohmann-json3-dev catch2 libedit-dev tmux librsvg2-bin libjs-chart.js chromium)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi
