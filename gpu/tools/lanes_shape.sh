#!/usr/bin/env bash
# The lanes of a scalar grid (gpu/codegen/codegen_lanes.cpp): generated matmul_outer at every
# shape from 4 × 4 to 32 × 32 lanes an iteration (TOYSIM_LANES=XxY forces one), at several n and
# t, beside its hand-written kernel and the shape the generator picks (kLaneThreads): the
# measurement behind that rule. Median of 10 launches (ms), fp32, one head; a shape whose run
# did not pass its checks or count what the simulator counts is marked "!".
#
#   bash gpu/tools/lanes_shape.sh [path/to/toysim] [OUT_DIR]    (writes OUT_DIR/lanes_shape_<gpu>.md)
set -euo pipefail
toysim=${1:-build/toysim}
out=${2:-gpu/results}
program=programs/matmul_outer.toy
shapes="32x32 32x8 16x16 16x8 8x8 8x4 4x4 32x1 16x1"
ms() {  # median ms of a run's JSON on stdin, "!" appended where the run did not check out
  python3 -c "import json,sys; r=json.load(sys.stdin); print('%.4f%s' % (r['time_ms']['median'], '' if r['check']['passed'] and r['traffic_equal'] else ' !'))"
}
device=$("$toysim" gpu run programs/p1_c00.toy --kernel generated --repeats 1 --warmups 0 --format json | python3 -c "import json,sys; print(json.load(sys.stdin)['device']['name'])")
name=$(echo "$device" | tr 'A-Z ' 'a-z_' | sed 's/nvidia_//; s/_.*//')
{
  echo "# Lanes of generated matmul_outer, by shape ($device)"
  echo
  echo "\`bash gpu/tools/lanes_shape.sh\`, one run ($(date -u +%F)): median of 10 launches, ms, fp32, one head. \`picked\`: the shape the"
  echo "generator takes (the fewest lanes that give the grid 65,536 threads, kLaneThreads in gpu/codegen/codegen_lanes.cpp)."
  echo
  echo "| n | t | tiles | hand-written | picked | $(echo $shapes | sed 's/ / | /g') |"
  echo "|---:|---:|---:|---:|---|$(for s in $shapes; do printf -- '---:|'; done)"
  for nt in "256 16" "256 32" "1024 16" "1024 32" "2048 32"; do
    set -- $nt
    n=$1 t=$2
    hand=$("$toysim" gpu run $program --set n=$n --set t=$t --repeats 10 --format json | ms)
    picked=$("$toysim" gpu cuda $program --set n=$n --set t=$t | grep -o 'its lanes ([0-9]* × [0-9]*)' | grep -o '[0-9]* × [0-9]*')
    row="| $n | $t | $(( (n / t) * (n / t) )) | $hand | $picked |"
    for s in $shapes; do row="$row $(TOYSIM_LANES=$s "$toysim" gpu run $program --kernel generated --set n=$n --set t=$t --repeats 10 --format json | ms) |"; done
    echo "$row"
  done
} > "$out/lanes_shape_$name.md"
cat "$out/lanes_shape_$name.md"
