#!/usr/bin/env bash
# Nsight Compute figures of the tensor-core progression (v0 to v5 of fa2's forward and the FP8
# one, the causal versions and the backward): one timed launch of each at n = 4096, fp16 (FP8:
# e4m3), 16 heads, through
# `toysim gpu run`. Writes each launch's report to OUT/<name>.txt and the table of the README
# (gpu/README.md) to OUT/ncu_versions.md.
#
#   bash gpu/tools/ncu_versions.sh build/toysim traces/gpu/ncu            # every run below
#   bash gpu/tools/ncu_versions.sh build/toysim traces/gpu/ncu 'v4|causal' # the runs whose names match
#
# The figures: the tensor pipe's busy share (sm__pipe_tensor_op_hmma_cycles_active: mma.sync
# and wgmma alike on Hopper), achieved occupancy (sm__warps_active), shared-memory bank
# conflicts of loads and stores, DRAM bytes read and written, registers a thread, duration.
set -u
toysim=${1:?usage: gpu/tools/ncu_versions.sh TOYSIM OUTDIR}
out=${2:?usage: gpu/tools/ncu_versions.sh TOYSIM OUTDIR}
only=${3:-.}
mkdir -p "$out"
command -v ncu >/dev/null || { echo "ncu_versions: no ncu on PATH"; exit 77; }
metrics=sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active
metrics+=,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum
metrics+=,dram__bytes_read.sum,dram__bytes_write.sum,launch__registers_per_thread,gpu__time_duration.sum
# For the time model: shared-memory wavefronts (each up to 128 bytes) of loads and stores, and
# the instructions issued.
metrics+=,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,smsp__inst_executed.sum

fa2=programs/attention/fa2.toy causal=programs/attention/fa2_causal_heaviest_first.toy backward=programs/attention/fa2_backward.toy
# name | program | options (the kernel, its tiles; 16 heads but for the backward, whose inputs O
# and L the CPU computes: 8 or 4 heads, under its limit)
runs=(
  "v0.d64|$fa2|--kernel fa2_forward --set d=64 --set Br=64 --set Bc=64 --heads 16"
  "v1.d64|$fa2|--kernel fa2_v1_wmma --set d=64 --set Br=64 --set Bc=64 --heads 16"
  "v2.d64|$fa2|--kernel fa2_v2_mma --set d=64 --set Br=128 --set Bc=64 --heads 16"
  "v3.d64|$fa2|--kernel fa2_v3_mma --set d=64 --set Br=128 --set Bc=64 --heads 16"
  "v4.d64|$fa2|--kernel fa2_v4_wgmma --set d=64 --set Br=128 --set Bc=128 --heads 16"
  "v3.d128|$fa2|--kernel fa2_v3_mma --set d=128 --set Br=128 --set Bc=32 --heads 16"
  "v4.d128|$fa2|--kernel fa2_v4_wgmma --set d=128 --set Br=128 --set Bc=128 --heads 16"
  "v5.d64|$fa2|--kernel fa2_v5_wgmma --set d=64 --set Br=128 --set Bc=128 --heads 16"
  "v5.d128|$fa2|--kernel fa2_v5_wgmma --set d=128 --set Br=128 --set Bc=128 --heads 16"
  "fp8.d128|$fa2|--kernel fa2_fp8_wgmma --set d=128 --set Br=128 --set Bc=128 --heads 16 --dtype e4m3"
  "causal_v3.d64|$causal|--kernel fa2_causal_v3_mma --set d=64 --set B=128 --heads 16"
  "causal_v4.d64|$causal|--kernel fa2_causal_v4_wgmma --set d=64 --set B=128 --heads 16"
  "backward_mma.d64|$backward|--kernel fa2_backward_mma --set d=64 --set Br=128 --set Bc=128 --heads 8"
  "backward_mma.d128|$backward|--kernel fa2_backward_mma --set d=128 --set Br=64 --set Bc=128 --heads 4"
)
selected=()
for run in "${runs[@]}"; do
  IFS='|' read -r name program options <<<"$run"
  [[ $name =~ $only ]] || continue
  selected+=("$run")
  # shellcheck disable=SC2086 # options are words
  timeout 300 ncu --launch-count 1 --kernel-name regex:'fa2|backward' --csv --print-units base --metrics "$metrics" \
    "$toysim" gpu run "$program" $options --set n=4096 $([[ $options == *--dtype* ]] || echo --dtype fp16) --warmups 0 --repeats 1 >"$out/$name.txt" 2>&1 ||
    echo "ncu_versions: $name failed (see $out/$name.txt)"
  sed -i "s|$PWD/||g" "$out/$name.txt"  # ncu names the binary by its absolute path: keep the report machine-free
done

python3 - "$out" "${selected[@]}" <<'EOF'
import csv, io, os, sys
out, runs = sys.argv[1], sys.argv[2:]
short = {"sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active": "tensor pipe %",
         "sm__warps_active.avg.pct_of_peak_sustained_active": "warps active %",
         "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": "conflicts ld",
         "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": "conflicts st",
         "dram__bytes_read.sum": "DRAM read B", "dram__bytes_write.sum": "DRAM write B",
         "launch__registers_per_thread": "regs", "gpu__time_duration.sum": "time ns",
         "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": "shared ld wavefronts",
         "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum": "shared st wavefronts",
         "smsp__inst_executed.sum": "instructions"}
lines = ["| run | kernel | " + " | ".join(short.values()) + " |", "|" + " --- |" * (2 + len(short))]
for run in runs:
    name = run.split("|")[0]
    text = open(os.path.join(out, name + ".txt"), errors="replace").read()
    rows = [r for r in csv.reader(io.StringIO("\n".join(l for l in text.splitlines() if l.startswith('"'))))]
    if len(rows) < 2:
        lines.append(f"| {name} | (no figures: see {name}.txt) |" + " |" * len(short))
        continue
    head, values = rows[0], {}
    for r in rows[1:]:
        values[r[head.index("Metric Name")]] = r[head.index("Metric Value")]
    kernel = rows[1][head.index("Kernel Name")].split("(")[0].replace("void ", "").split("::")[-1]
    lines.append(f"| {name} | `{kernel}` | " + " | ".join(values.get(m, "?") for m in short) + " |")
open(os.path.join(out, "ncu_versions.md"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
EOF
