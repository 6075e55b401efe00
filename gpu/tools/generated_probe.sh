#!/usr/bin/env bash
# What generated CUDA's own loops cost on this GPU, for the h100 machine's generated-code rows
# (isa/machine.cpp), each the median of 20 launches, fp16, tensor cores on:
#   - gpu/tools/generated_probe.toy (tiles in shared memory) with no work, with Ke element-wise
#     additions of 64 × 64 tiles and with Km 64 × 64 × 64 products: the differences over the
#     elements added and the multiply-adds done, per SM, are the rates;
#   - the same at E = 4 (16 elements: fewer than a block's threads): what a tile instruction
#     costs an SM beyond its elements (the time over the instructions, less their elements at
#     the rate above);
#   - the same at one block an SM (132 blocks): what a block waits for an instruction (E = 4
#     additions) and for a step of a product's fragments (16 steps of 64 × 64 × 64 less 2 of
#     16 × 16 × 16, over 14; on the CUDA cores, a step of k: 4 × 128 × 4 less 4 × 16 × 4, over
#     112, at the same shape of result so that only k's chain differs, on the loop that reads 16
#     bytes at a time and on the one that reads an element);
#   - gpu/tools/generated_probe_products.toy: the throughput of the two loops a product takes on
#     the CUDA cores where its shapes are not whole fragments (k = 60: read 16 bytes at a time;
#     k = 61: an element at a time), at 1, 4 and 16 results a thread; and generated_probe.toy's
#     loads into a fp32 tile (x's 64 × 64 fp16 rows loaded again, from L1 or the L2: their bytes
#     are not what bounds it);
#   - gpu/tools/generated_probe_registers.toy (tiles in the tensor cores' fragment layout, in
#     registers): the rates of additions and mma.sync products there, from the difference
#     between two counts of them (the loads before them would hide a small count).
# Prints the rows machine_h100.txt holds (under "-- generated CUDA").
#
#   bash gpu/tools/generated_probe.sh [path/to/toysim]
set -euo pipefail
toysim=${1:-build/toysim}
python3 - "$toysim" <<'PY'
import json, subprocess, sys
toysim = sys.argv[1]
def run(program, **params):
    if "E" in params: params.setdefault("K", params["E"])  # generated_probe.toy: x and y square unless a run sets K
    args = [toysim, "gpu", "run", program, "--kernel", "generated", "--dtype", "fp16", "--repeats", "20", "--format", "json"]
    for k, v in params.items(): args += ["--set", f"{k}={v}"]
    d = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
    launch = d["launches"][0]
    return launch["time_ms"]["median"] * 1e-3, launch.get("resident_blocks_per_sm"), d["device"]
shared, registers = "gpu/tools/generated_probe.toy", "gpu/tools/generated_probe_registers.toy"
B, Ke, Km = 2112, 256, 64  # 2112 blocks: 8 waves of 2 resident blocks on 132 SMs
base, resident, device = run(shared, B=B, E=64, Ke=0, Km=0)
elementwise, _, _ = run(shared, B=B, E=64, Ke=Ke, Km=0)
products, _, _ = run(shared, B=B, E=64, Ke=0, Km=Km)
sms = device["sm_count"]
per_element = B * Ke * 64 * 64 / (elementwise - base) / sms
per_mac = B * Km * 64 * 64 * 64 / (products - base) / sms
Bs = 8448  # E = 4: 8 waves of 8 resident blocks (256 threads each) on 132 SMs
small_base, small_resident, _ = run(shared, B=Bs, E=4, Ke=0, Km=0)
small, _, _ = run(shared, B=Bs, E=4, Ke=Ke, Km=0)
per_instruction = (small - small_base) * sms / (Bs * Ke) - 16 / per_element  # an SM's seconds per block instruction
B1 = 132  # one block an SM: what a block waits for, nothing beside it
one_base, _, _ = run(shared, B=B1, E=4, Ke=0, Km=0)
one_add, _, _ = run(shared, B=B1, E=4, Ke=Ke, Km=0)
latency = (one_add - one_base) / Ke
Kp = 256
one_base16, _, _ = run(shared, B=B1, E=16, Ke=0, Km=0)
one_mac16, _, _ = run(shared, B=B1, E=16, Ke=0, Km=Kp)
one_base64, _, _ = run(shared, B=B1, E=64, Ke=0, Km=0)
one_mac64, _, _ = run(shared, B=B1, E=64, Ke=0, Km=Kp)
# A 16 x 16 x 16 product: 1 fragment, 2 steps of k = 8 (one warp); 64 x 64 x 64: 16 fragments on
# 8 warps, 2 each, 8 steps of k each: 16 in turn.
step = ((one_mac64 - one_base64) - (one_mac16 - one_base16)) / Kp / (16 - 2)
# Not whole fragments, so on the CUDA cores: 4 x 4 results, one a lane (16 lanes), each a chain
# of K multiply-adds; K = 128 less K = 16 (the loads of x, y and w in the base at the same K).
# x·yᵀ reads 16 bytes at a time (tile_product4); x·w, b not transposed and a lane's one column,
# an element at a time (tile_product).
Ks, Kl = 16, 128
one_base_s, _, _ = run(shared, B=B1, E=4, K=Ks, Kw=Ks, Ke=0, Km=0)
one_mac_s, _, _ = run(shared, B=B1, E=4, K=Ks, Kw=Ks, Ke=0, Km=Kp)
one_element_s, _, _ = run(shared, B=B1, E=4, K=Ks, Kw=Ks, Ke=0, Km=0, Kg=Kp)
one_base_l, _, _ = run(shared, B=B1, E=4, K=Kl, Kw=Kl, Ke=0, Km=0)
one_mac_l, _, _ = run(shared, B=B1, E=4, K=Kl, Kw=Kl, Ke=0, Km=Kp)
one_element_l, _, _ = run(shared, B=B1, E=4, K=Kl, Kw=Kl, Ke=0, Km=0, Kg=Kp)
scalar_step = ((one_mac_l - one_base_l) - (one_mac_s - one_base_s)) / Kp / (Kl - Ks)
element_step = ((one_element_l - one_base_l) - (one_element_s - one_base_s)) / Kp / (Kl - Ks)
# Products on the CUDA cores (generated_probe_products.toy): an SM's time for a multiply-add is
# a + b · the reads from shared memory it takes, each loop its own a and b (a thread's tm × tn
# results read tm elements of a and tn of b a step of k: 1/tm + 1/tn reads a multiply-add an
# element at a time, a quarter of that 16 bytes at a time). Each loop's a and b from 1 × 1 and
# 2 × 2 results a thread (4 blocks an SM each); the 4 × 4 patch (3 an SM) checks them, printed
# with its error.
products_probe = "gpu/tools/generated_probe_products.toy"
Kc = 64
def mac_seconds(R, C, K, loop):
    extra = {"Kn": Kc, "Kt": 0} if loop == "element" else {"Kn": 0, "Kt": Kc}
    none, resident, _ = run(products_probe, B=B, R=R, C=C, K=K, Kn=0, Kt=0)
    some, _, _ = run(products_probe, B=B, R=R, C=C, K=K, **extra)
    return (some - none) * sms / (B * Kc * R * C * K), resident
def reads(tm, loop): return 2 / tm / (1 if loop == "element" else 4)
loops = {}
for loop, K in (("element", 61), ("16 bytes", 60)):
    (t1, r1), (t2, r2), (t4, r4) = mac_seconds(8, 32, K, loop), mac_seconds(32, 32, K, loop), mac_seconds(64, 64, K, loop)
    read = (t1 - t2) / (reads(1, loop) - reads(2, loop))
    mac = t1 - read * reads(1, loop)
    loops[loop] = (mac, read, [(1, t1, r1), (2, t2, r2), (4, t4, r4)], K)
# A load into a tile in shared memory: x's rows loaded again Kc times (fp16 to fp32).
loads, _, _ = run(shared, B=B, E=64, Ke=0, Km=0, Kl=Kc)
per_load = B * Kc * 64 * 64 / (loads - base) / sms
Br = 2112
Ke1, Ke2, Km1, Km2 = 2048, 4096, 512, 1024  # two counts each: the difference is the work's own time
reg_add1, reg_resident, _ = run(registers, B=Br, Ke=Ke1, Km=0)
reg_add2, _, _ = run(registers, B=Br, Ke=Ke2, Km=0)
reg_mac1, _, _ = run(registers, B=Br, Ke=0, Km=Km1)
reg_mac2, _, _ = run(registers, B=Br, Ke=0, Km=Km2)
reg_element = Br * (Ke2 - Ke1) * 128 * 64 / (reg_add2 - reg_add1) / sms
reg_mac = Br * (Km2 - Km1) * 128 * 64 * 64 / (reg_mac2 - reg_mac1) / sms
print(f"# generated CUDA: {device['name']}, {sms} SMs; shared: {resident} resident blocks an SM, base {base * 1e3:.3f} ms, "
      f"+{Ke} additions {elementwise * 1e3:.3f} ms, +{Km} products {products * 1e3:.3f} ms; E = 4: {small_resident} an SM, base "
      f"{small_base * 1e3:.3f} ms, +{Ke} additions {small * 1e3:.3f} ms; registers: {reg_resident} an SM, "
      f"{Ke1} additions {reg_add1 * 1e3:.3f} ms, {Ke2} {reg_add2 * 1e3:.3f} ms, {Km1} products {reg_mac1 * 1e3:.3f} ms, {Km2} {reg_mac2 * 1e3:.3f} ms")
def row(name, figure, how):
    print(f"{name:<30} {figure:<30} {'':<24} {'':>5}  {how:<70} ")
how = f"generated_probe.toy, fp16, {B} blocks of 256 threads, {resident} an SM"
row("generated element-wise op", f"{per_element / 1e9:.2f} G elements/s/SM", how + f", {Ke} ADDs of 64x64 less none")
row("generated product (tf32 wmma)", f"{per_mac / 1e9:.1f} G MACs/s/SM", how + f", {Km} MACs 64x64x64 less none")
row("generated tile instruction", f"{per_instruction * 1e9:.1f} ns/SM", f"generated_probe.toy E=4, fp16, {Bs} blocks, {small_resident} an SM, {Ke} ADDs of 4x4 less none, less 16 elements at the rate above")
howr = f"generated_probe_registers.toy, fp16, {Br} blocks of 256 threads, {reg_resident} an SM"
row("generated instruction latency", f"{latency * 1e9:.1f} ns", f"generated_probe.toy E=4, fp16, {B1} blocks (one an SM), {Ke} ADDs of 4x4 less none, per ADD")
row("generated product step", f"{step * 1e9:.2f} ns", f"generated_probe.toy, fp16, {B1} blocks, {Kp} MACs 64x64x64 (16 steps) less {Kp} 16x16x16 (2), per step")
row("generated scalar product step", f"{scalar_step * 1e9:.2f} ns", f"generated_probe.toy E=4, fp16, {B1} blocks, {Kp} MACs 4x{Kl}x4 less {Kp} 4x{Ks}x4, per step of k")
row("generated element product step", f"{element_step * 1e9:.2f} ns", f"generated_probe.toy E=4, fp16, {B1} blocks, {Kp} MACs x·w 4x{Kl}x4 less {Kp} 4x{Ks}x4, per step of k")
for loop, name, unit in (("element", "element", "4 bytes"), ("16 bytes", "scalar", "16 bytes")):
    mac, read, points, K = loops[loop]
    row(f"generated {name} MAC", f"{mac * 1e12:.2f} ps/SM", f"generated_probe_products.toy K={K} ({loop}), fp16, {B} blocks: 1x1 and 2x2 results a thread, {Kc} MACs, a of a + b x reads")
    row(f"generated {name} read", f"{read * 1e12:.2f} ps/SM", f"the same two: b, a read of {unit} (a MAC's: 2/t of t x t results a thread" + (")" if loop == "element" else ", over 4)"))
    for t, measured, resident in points:
        model = mac + read * reads(t, loop)
        print(f"#   {loop:8} {t}x{t} results a thread ({resident} blocks an SM): {measured * 1e12:.2f} ps a MAC an SM; a + b x {reads(t, loop):.3f} reads = {model * 1e12:.2f} ({(model / measured - 1) * 100:+.1f}%)")
row("generated load", f"{per_load / 1e9:.2f} G elements/s/SM", how + f", {Kc} LOADs of 64x64 fp16 into fp32 less none")
row("generated op in registers", f"{reg_element / 1e9:.1f} G elements/s/SM", howr + f", {Ke2} ADDs of 128x64 less {Ke1}")
row("generated product (mma.sync)", f"{reg_mac / 1e9:.1f} G MACs/s/SM", howr + f", {Km2} MACs 128x64x64 less {Km1}")
PY
