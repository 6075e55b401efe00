#!/usr/bin/env bash
# Regenerates the golden outputs in traces/ from traces/MANIFEST, and the plots in traces/plots/
# from traces/plots/MANIFEST, with the built toysim.
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
# The plots: each line of traces/plots/MANIFEST writes its file with --plot.
grep -v '^#' traces/plots/MANIFEST | while read -r file args; do
  [ -n "$file" ] || continue
  # shellcheck disable=SC2086
  "$toysim" $args > /dev/null || { echo "failed: toysim $args" >&2; exit 1; }
  echo "wrote traces/plots/$file"
done
