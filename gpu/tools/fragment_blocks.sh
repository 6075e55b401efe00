#!/usr/bin/env bash
# Generated fa2 with 128-row tiles (Q, O, S and P in registers: the fragment layout) under two
# builds of toysim, on the GPU, interleaved in one run: BEFORE's generator asked every block
# kernel for two blocks an SM (__launch_bounds__(256, 2): 128 registers a thread, spilling where
# the fragments need more), AFTER's asks for one where they hold more than
# kTwoBlockFragmentFloats (gpu/codegen/codegen_emit.h). n = 4096, 16 heads, fp16, the median
# of 20 launches, twice each. gpu/results/fragment_blocks_h100.txt is its output on the H100.
#
#   bash gpu/tools/fragment_blocks.sh BEFORE_DIR AFTER_DIR    # each holds toysim and libtoysim_cuda.so
set -u
before=${1:?the folder of the earlier build}
after=${2:?the folder of the later build}
for d in 64 128; do
  for bc in 16 32 64 128; do
    for rep in 1 2; do
      for which in before after; do
        dir=$before
        [[ $which == after ]] && dir=$after
        ms=$(TOYSIM_CUDA_LIBRARY=$(realpath "$dir/libtoysim_cuda.so") "$dir/toysim" gpu run programs/attention/fa2.toy --kernel generated \
               --set n=4096 --set d=$d --set Br=128 --set Bc=$bc --heads 16 --dtype fp16 --repeats 20 --format json 2>/dev/null |
             python3 -c "import json, sys; print('%.4f' % json.load(sys.stdin)['time_ms']['median'])" 2>/dev/null)
        echo "d=$d Bc=$bc rep=$rep $which ${ms:-failed} ms"
      done
    done
  done
done
