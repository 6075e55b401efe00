#!/usr/bin/env bash
# Generated CUDA (toysim gpu run --kernel generated) against each hand-written kernel of the
# catalog, on the same program and sizes, one after the other in one run: median time of 10
# launches (TOYSIM_REPEATS), TFLOP/s where the seeds count flops, and whether counted = simulated and the checks
# passed. Writes OUT/bench_generated_<gpu>.json and .md (OUT: gpu/results by default).
#
#   bash gpu/tools/bench_generated.sh [path/to/toysim] [OUT]
#   ONLY='matmul|softmax' bash gpu/tools/bench_generated.sh ...   (the rows whose name matches)
set -euo pipefail
toysim=${1:-build/toysim}
out=${2:-gpu/results}
mkdir -p "$out"
attention="--set d=64 --set Br=64 --set Bc=64"
timing="--warmups 2 --repeats ${TOYSIM_REPEATS:-10}"
rows=$(mktemp)
trap 'rm -f "$rows"' EXIT

bench() {  # NAME GENERATED_FLAGS PROGRAM ARGS...   (the hand-written kernel: the program's own, or --kernel K among ARGS;
           # GENERATED_FLAGS: what the generated run adds, "-" for nothing)
    local name=$1 flags=$2 program=$3
    shift 3
    [[ -n ${ONLY:-} && ! $name =~ $ONLY ]] && return 0
    [[ $flags == - ]] && flags=""
    local hand generated
    hand=$("$toysim" gpu run "$program" "$@" $timing --format json) || true
    # --kernel K names the hand-written twin; the generated run drops it.
    local args=() skip=0
    for a in "$@"; do
        if [[ $skip == 1 ]]; then skip=0; continue; fi
        if [[ $a == --kernel ]]; then skip=1; continue; fi
        args+=("$a")
    done
    # shellcheck disable=SC2086
    generated=$("$toysim" gpu run "$program" "${args[@]}" --kernel generated $flags $timing --format json) || true
    python3 - "$name" "$hand" "$generated" "$flags" >> "$rows" <<'PY'
import json, sys
name, hand, gen, flags = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3]), sys.argv[4]
def ok(d): return bool(d.get("traffic_equal")) and bool(d.get("check", {}).get("passed", False))
print(json.dumps({"name": name, "program": hand["program"], "params": hand["params"], "heads": hand["heads"], "dtype": hand["dtype"],
                  "device": hand["device"]["name"],
                  "hand": {"kernel": hand["kernel"], "ms": hand["time_ms"]["median"], "tflops": hand.get("tflops"), "ok": ok(hand)},
                  "generated": {"flags": flags, "ms": gen["time_ms"]["median"], "tflops": gen.get("tflops"), "ok": ok(gen)}}))
PY
    tail -1 "$rows"
}

# The scalar programs, at smaller sizes: their `parallel for` loops run a thread an iteration
# (matmul_outer's tile of sums over a block of lanes, gpu/codegen/codegen_lanes.cpp), and
# the softmaxes' serial reductions split over a block per head (codegen_reduce.cpp).
bench matmul_inner - programs/matmul_inner.toy --set n=256
bench matmul_outer - programs/matmul_outer.toy --set n=256 --set t=32
# n = 1024: 1,024 tiles of 32 × 32 (at n = 256, 64: fewer warps than SMs).
bench matmul_inner - programs/matmul_inner.toy --set n=1024
bench matmul_outer - programs/matmul_outer.toy --set n=1024 --set t=32
bench softmax_3pass - programs/p4_softmax_3pass.toy --set n=100000 --heads 16
bench softmax_online - programs/p5_online_softmax.toy --set n=100000 --heads 16
# fp16: the generated products run on the tensor cores where whole fragments fit, unless
# --no-tensor-cores (the CUDA-core rows, against the CUDA-core kernels).
bench standard_tiled --no-tensor-cores programs/attention/standard_tiled.toy --set n=4096 $attention --heads 16 --dtype fp16
bench standard_tiled - programs/attention/standard_tiled.toy --set n=4096 $attention --heads 16 --dtype fp16
bench fa1 --no-tensor-cores programs/attention/fa1.toy --set n=4096 $attention --heads 16 --dtype fp16
bench fa1 - programs/attention/fa1.toy --set n=4096 $attention --heads 16 --dtype fp16
bench fa2 --no-tensor-cores programs/attention/fa2.toy --set n=4096 $attention --heads 64 --dtype fp16
bench fa2 - programs/attention/fa2.toy --set n=4096 $attention --heads 64 --dtype fp16
bench fa2_vs_v3_mma - programs/attention/fa2.toy --kernel fa2_v3_mma --set n=4096 --set d=64 --set Br=128 --set Bc=64 --heads 64 --dtype fp16
bench fa2_vs_v3_mma - programs/attention/fa2.toy --kernel fa2_v3_mma --set n=4096 --set d=64 --set Br=128 --set Bc=64 --heads 64 --dtype bf16
bench fa2_backward --no-tensor-cores programs/attention/fa2_backward.toy --set n=1024 $attention --heads 4 --dtype fp16
bench fa2_backward - programs/attention/fa2_backward.toy --set n=1024 $attention --heads 4 --dtype fp16
bench fa2_backward_no_d_trick - programs/attention/fa2_backward_no_d_trick.toy --set n=1024 $attention --heads 4 --dtype fp16

python3 - "$rows" "$out" <<'PY'
import json, re, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
device = rows[0]["device"] if rows else "unknown"
tag = re.sub(r"[^a-z0-9]+", "_", device.lower()).strip("_")
tag = "h100" if "h100" in tag else tag
json.dump({"device": device, "rows": rows}, open(f"{sys.argv[2]}/bench_generated_{tag}.json", "w"), indent=1)
def fmt_t(t): return f"{t:.1f}" if t else "–"
lines = [f"# Generated CUDA against the hand-written kernels ({device})", "",
         "Same program, same sizes, one run (`bash gpu/tools/bench_generated.sh`); median of 10 launches. Both count",
         "their traffic and pass the checks (`ok`) or say so.", "",
         "| program | sizes | hand-written kernel | ms | TFLOP/s | generated | ms | TFLOP/s | generated speed (hand = 1) | ok |",
         "|---|---|---|---:|---:|---|---:|---:|---:|---|"]
for r in rows:
    sizes = ", ".join(f"{k}={v}" for k, v in r["params"].items()) + f", {r['heads']} heads, {r['dtype']}"
    h, g = r["hand"], r["generated"]
    how = "CUDA cores" if g["flags"] == "--no-tensor-cores" else ("tensor cores" if r["dtype"] != "fp32" and "attention" in r["program"] else "CUDA cores")
    lines.append(f"| {r['name']} | {sizes} | {h['kernel']} | {h['ms']:.3f} | {fmt_t(h['tflops'])} | {how} | {g['ms']:.3f} | {fmt_t(g['tflops'])} | "
                 f"{h['ms'] / g['ms']:.2f}× | {'ok' if h['ok'] and g['ok'] else 'NOT OK'} |")
open(f"{sys.argv[2]}/bench_generated_{tag}.md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
