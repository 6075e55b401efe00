#!/usr/bin/env bash
# What generated CUDA's own loops cost on this GPU, for the h100 machine's generated-code rows
# (isa/machine.cpp): gpu/tools/generated_probe.toy run as generated CUDA (fp16, tensor cores on)
# with no work, with Ke element-wise additions of 64 × 64 tiles and with Km 64 × 64 × 64
# products, each the median of 20 launches. The differences over the elements added and the
# multiply-adds done, per SM, are the rates the model reads. Prints the rows machine_h100.txt
# holds (under "-- generated CUDA").
#
#   bash gpu/tools/generated_probe.sh [path/to/toysim]
set -euo pipefail
toysim=${1:-build/toysim}
python3 - "$toysim" <<'PY'
import json, subprocess, sys
toysim = sys.argv[1]
B, Ke, Km = 2112, 256, 64  # 2112 blocks: 8 waves of 2 resident blocks on 132 SMs
def run(ke, km):
    out = subprocess.run([toysim, "gpu", "run", "gpu/tools/generated_probe.toy", "--kernel", "generated", "--dtype", "fp16",
                          "--set", f"B={B}", "--set", f"Ke={ke}", "--set", f"Km={km}", "--format", "json"],
                         check=True, capture_output=True, text=True).stdout
    d = json.loads(out)
    launch = d["launches"][0]
    return launch["time_ms"]["median"] * 1e-3, launch.get("resident_blocks_per_sm"), d["device"]
base, resident, device = run(0, 0)
elementwise, _, _ = run(Ke, 0)
products, _, _ = run(0, Km)
sms = device["sm_count"]
elements = B * Ke * 64 * 64
macs = B * Km * 64 * 64 * 64
per_element = elements / (elementwise - base) / sms
per_mac = macs / (products - base) / sms
print(f"# generated CUDA: {device['name']}, {sms} SMs, {resident} resident blocks an SM; base {base * 1e3:.3f} ms, "
      f"+{Ke} additions {elementwise * 1e3:.3f} ms, +{Km} products {products * 1e3:.3f} ms")
how = f"generated_probe.toy, fp16, {B} blocks of 256 threads, {resident} an SM"
print(f"{'generated element-wise op':<30} {f'{per_element / 1e9:.2f} G elements/s/SM':<30} {'':<24} {'':>5}  {how + f', {Ke} ADDs of 64x64 less none':<70} ")
print(f"{'generated product (tf32 wmma)':<30} {f'{per_mac / 1e9:.1f} G MACs/s/SM':<30} {'':<24} {'':>5}  {how + f', {Km} MACs 64x64x64 less none':<70} ")
PY
