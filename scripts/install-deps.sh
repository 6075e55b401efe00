#!/usr/bin/env bash
# Installs what building and running toysim needs on Debian 12 (run as root), and nothing else:
# g++, CMake and Ninja; CLI11, fmt and nlohmann-json; libedit for the stepper's line editing;
# libjs-chart.js (Chart.js, inlined into `toysim view`'s pages and HTML plots). CUDA support is
# built where nvcc is present (the CUDA Toolkit is not a Debian package here). What the tests
# need besides: scripts/install-test-deps.sh, which names them here as arguments.
#   bash scripts/install-deps.sh [MORE_PACKAGES...]
set -euo pipefail
packages=(g++ cmake ninja-build libcli11-dev libfmt-dev nlohmann-json3-dev libedit-dev libjs-chart.js "$@")
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  apt-get update -qq
  # The quick start takes no recommended packages; the tests' (Chromium's fonts, ...) do.
  recommends=(--no-install-recommends)
  (($#)) && recommends=()
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${recommends[@]}" "${missing[@]}"
fi
