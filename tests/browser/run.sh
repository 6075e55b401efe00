#!/usr/bin/env bash
# The browser test of `toysim view` (test.mjs), as ctest runs it: tests/browser/run.sh BUILD_DIR.
# With a script after it (tests/browser/run.sh BUILD_DIR SCRIPT.mjs ARGS...), runs that instead,
# as node SCRIPT.mjs BUILD_DIR ARGS...: the playground's test (tests/web/browser.mjs) does.
# Node modules are installed with `npm ci` from package-lock.json into BUILD_DIR/browser-test,
# not into the source tree. Exits 77 (skipped) only where Chromium (Debian's chromium package,
# installed by scripts/install-deps.sh) or node/npm is missing; otherwise 0 (passed) or 1.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [[ $# -lt 1 || ! -d $1 ]]; then
  echo "usage: tests/browser/run.sh BUILD_DIR [SCRIPT.mjs ARGS...]" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
shift
script=$here/test.mjs
if (($#)); then
  script=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
  shift
fi
chromium=${TOYSIM_CHROMIUM:-/usr/bin/chromium}
if [[ ! -x $chromium ]]; then
  echo "skipped: Chromium not found at $chromium: install it with scripts/install-deps.sh (Debian's chromium package), or set TOYSIM_CHROMIUM to a Chromium binary"
  exit 77
fi
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "skipped: the browser test needs node (>= 20) and npm, to install playwright-core; neither is optional here"
  exit 77
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if ((major < 20)); then
  echo "skipped: node $(node --version) is too old for playwright-core (it needs node >= 20)"
  exit 77
fi
if [[ ! -x $build/toysim ]]; then
  echo "error: $build/toysim is not built" >&2
  exit 1
fi
modules=$build/browser-test
if [[ ! -f $modules/node_modules/playwright-core/package.json ]] || ! cmp -s "$here/package-lock.json" "$modules/package-lock.json"; then
  mkdir -p "$modules"
  cp "$here/package.json" "$here/package-lock.json" "$modules/"
  if ! (cd "$modules" && npm ci --no-audit --no-fund --loglevel=error); then
    echo "error: npm ci failed in $modules: it installs playwright-core (the version package-lock.json pins) from the npm registry once" >&2
    exit 1
  fi
fi
cd "$here/../.."
exec node "$script" "$build" "$@"
