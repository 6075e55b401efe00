#!/usr/bin/env bash
# The browser engine's tests, as ctest runs them (tests/CMakeLists.txt), from the repository root:
#   tests/web/run.sh build             cmake --preset wasm, then build the playground (build-wasm/playground)
#   tests/web/run.sh manifest          the golden manifest under node (manifest.mjs)
#   tests/web/run.sh fuzz              the fuzz corpus through the engine under node (fuzz_replay.mjs)
#   tests/web/run.sh refusals BUILD_DIR  what the CLI refuses up front, refused alike (refusals.mjs), against BUILD_DIR's toysim
#   tests/web/run.sh browser BUILD_DIR the playground in headless Chromium (browser.mjs), BUILD_DIR's toysim beside it
# Exits 77 (skipped) where Emscripten (Debian's emscripten, installed by
# scripts/install-test-deps.sh) or node is missing, and says so; otherwise 0 or 1.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
what=${1:-}
if ! command -v em++ >/dev/null 2>&1; then
  echo "skipped: no Emscripten (em++): install Debian's emscripten (scripts/install-test-deps.sh) to build the browser engine"
  exit 77
fi
if ! command -v node >/dev/null 2>&1; then
  echo "skipped: no node, which runs the browser engine's tests"
  exit 77
fi
playground=build-wasm/playground
if [[ $what != build && ! -f $playground/toysim_engine.wasm ]]; then
  echo "error: $playground is not built: tests/web/run.sh build (cmake --preset wasm && cmake --build --preset wasm)" >&2
  exit 1
fi
case $what in
  build)
    cmake --preset wasm >/dev/null
    exec cmake --build --preset wasm ;;
  manifest) exec node tests/web/manifest.mjs "$playground" ;;
  fuzz) exec node tests/web/fuzz_replay.mjs "$playground" ;;
  refusals) exec node tests/web/refusals.mjs "$playground" "$2/toysim" ;;
  browser) exec bash tests/browser/run.sh "$2" tests/web/browser.mjs "$playground" ;;
  *)
    echo "usage: tests/web/run.sh build|manifest|fuzz|refusals BUILD_DIR|browser BUILD_DIR" >&2
    exit 2 ;;
esac
