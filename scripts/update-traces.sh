#!/usr/bin/env bash
# Regenerates the golden outputs in traces/ from traces/MANIFEST with the built toysim.
# Usage: scripts/update-traces.sh [path/to/toysim]   (default: build/toysim)
set -euo pipefail
cd "$(dirname "$0")/.."
toysim=${1:-build/toysim}
grep -v '^#' traces/MANIFEST | while read -r file args; do
  [ -n "$file" ] || continue
  # shellcheck disable=SC2086
  "$toysim" $args > "traces/$file" || { echo "failed: toysim $args" >&2; exit 1; }
  echo "wrote traces/$file"
done
