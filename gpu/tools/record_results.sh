#!/usr/bin/env bash
# Records the GPU reference results under traces/gpu/ (run on a GPU machine, from the
# repository root, with a CUDA build of toysim): every program with a kernel, measured with a
# cold and a warm L2, and the FA2 and standard-attention sweeps over n. `toysim diff --gpu FILE`
# reads them back on any machine, and tests/test_gpu_results.cpp checks that the simulator's
# counts still equal the counts recorded here. After the sweeps, gpu/tools/prediction_table.sh writes
# the modeled L2's error table (prediction.md).
#
#   bash gpu/tools/record_results.sh [path/to/toysim] [runs|sweeps|kernels]   (default: all)
#
# kernels: only the runs the time model added (v4, the causal kernels, the backward on tensor
# cores, generated CUDA), whose medians traces/gpu/time_prediction.md predicts.
#
# TOYSIM_RESULTS_DIR writes elsewhere than traces/gpu (a folder that outlives a remote run);
# TOYSIM_L2_STATES="cold" records the cold runs only.
set -euo pipefail
toysim=${1:-build/toysim}
what=${2:-all}
out=${TOYSIM_RESULTS_DIR:-traces/gpu}
mkdir -p "$out"
attention="--set d=64 --set Br=64 --set Bc=64"

record() {  # NAME PROGRAM ARGS...
    local name=$1 program=$2
    shift 2
    for l2 in ${TOYSIM_L2_STATES:-cold warm}; do
        "$toysim" gpu run "$program" "$@" --measure "$l2" --format json > "$out/$name.$l2.json"
        echo "$out/$name.$l2.json"
    done
}

if [[ $what == all || $what == runs ]]; then
record matmul_inner programs/matmul_inner.toy --set n=1024
record matmul_outer programs/matmul_outer.toy --set n=1024 --set t=32
record matmul_outer.n1536 programs/matmul_outer.toy --set n=1536 --set t=32  # the walk of a long scalar program (issue 34)
record matmul_outer.n1536.t16 programs/matmul_outer.toy --set n=1536 --set t=16  # the shape the walk once refused (issue 34)
record softmax_3pass programs/p4_softmax_3pass.toy --set n=1000000 --heads 16
record softmax_online programs/p5_online_softmax.toy --set n=1000000 --heads 16
for dtype in fp16 fp32; do
    record "standard_tiled.n4096.$dtype" programs/attention/standard_tiled.toy --set n=4096 $attention --heads 16 --dtype $dtype
    record "fa1.n4096.$dtype" programs/attention/fa1.toy --set n=4096 $attention --heads 16 --dtype $dtype
    record "fa2.n4096.$dtype" programs/attention/fa2.toy --set n=4096 $attention --heads 16 --dtype $dtype
done
# The tensor-core versions of fa2_forward, on fa2.toy through --kernel at their own tiles.
record fa2_v1_wmma.n4096.fp16 programs/attention/fa2.toy --kernel fa2_v1_wmma --set n=4096 --set d=64 --set Br=64 --set Bc=64 --heads 16 --dtype fp16
record fa2_v2_mma.n4096.fp16 programs/attention/fa2.toy --kernel fa2_v2_mma --set n=4096 --set d=64 --set Br=128 --set Bc=64 --heads 16 --dtype fp16
record fa2_v3_mma.n4096.fp16 programs/attention/fa2.toy --kernel fa2_v3_mma --set n=4096 --set d=64 --set Br=128 --set Bc=64 --heads 16 --dtype fp16
record fa2_backward.n1024.fp16 programs/attention/fa2_backward.toy --set n=1024 $attention --heads 4 --dtype fp16
record fa2_backward_no_d_trick.n1024.fp16 programs/attention/fa2_backward_no_d_trick.toy --set n=1024 $attention --heads 4 --dtype fp16
fi
if [[ $what == all || $what == kernels ]]; then
# Every kernel of the catalog at its own tiles, and generated CUDA, for the time model.
record fa2_v4_wgmma.n4096.fp16 programs/attention/fa2.toy --kernel fa2_v4_wgmma --set n=4096 --set d=64 --set Br=128 --set Bc=128 --heads 16 --dtype fp16
record fa2_causal.n4096.fp16 programs/attention/fa2_causal.toy --set n=4096 --set d=64 --set B=64 --heads 16 --dtype fp16
record fa2_causal_v3_mma.n4096.fp16 programs/attention/fa2_causal_heaviest_first.toy --kernel fa2_causal_v3_mma --set n=4096 --set d=64 --set B=128 --heads 16 --dtype fp16
record fa2_causal_v4_wgmma.n4096.fp16 programs/attention/fa2_causal_heaviest_first.toy --kernel fa2_causal_v4_wgmma --set n=4096 --set d=64 --set B=128 --heads 16 --dtype fp16
record fa2_generated.n4096.fp16 programs/attention/fa2.toy --kernel generated $attention --set n=4096 --heads 16 --dtype fp16
record fa1_generated.n4096.fp16 programs/attention/fa1.toy --kernel generated $attention --set n=4096 --heads 16 --dtype fp16
record fa2_backward_mma.n4096.fp16 programs/attention/fa2_backward.toy --kernel fa2_backward_mma --set n=4096 --set d=64 --set Br=128 --set Bc=128 --heads 8 --dtype fp16
fi
[[ $what == all || $what == sweeps ]] || exit 0
# K and V of 4 heads outgrow the 50 MB L2 of an H100 between n = 16384 and 65536 (fp16, d = 64).
for program in fa2 standard_tiled; do
    "$toysim" diff "programs/attention/$program.toy" $attention --heads 4 --dtype fp16 \
        --sweep n=1024,2048,4096,8192,16384,32768,65536 --format json --plot "$out/$program.sweep.svg" > "$out/$program.sweep.json"
    echo "$out/$program.sweep.json"
done
# The modeled L2's error against what was just recorded (needs no GPU: it reads the files).
TOYSIM_RESULTS_DIR=$out bash gpu/tools/prediction_table.sh "$toysim"
