#!/usr/bin/env bash
# Installs what the tests need on Debian 12 (run as root), on top of scripts/install-deps.sh:
# Catch2; clang with its sanitizer and libFuzzer runtimes (the sanitize and fuzz builds); tmux
# (the stepper's test in a real terminal); librsvg2-bin (rsvg-convert, for `--plot FILE.png`);
# chromium (the viewer's test in a real browser; node and npm install its playwright-core);
# pybind11, NumPy, pytest, matplotlib, nbclient and ipykernel (the Python module, its tests and
# the course notebook); man-db, groff-base, dpkg-dev and bash-completion (the packaging tests:
# man pages, the .deb's dependencies, completion); emscripten and libjs-codemirror (the browser
# engine, built by the wasm preset, and its playground page's editor).
set -euo pipefail
cd "$(dirname "$0")/.."
exec bash scripts/install-deps.sh catch2 clang libclang-rt-14-dev tmux librsvg2-bin chromium \
  python3-dev pybind11-dev python3-numpy python3-pytest python3-matplotlib python3-nbclient python3-ipykernel python3-nbformat \
  man-db groff-base dpkg-dev bash-completion emscripten libjs-codemirror
