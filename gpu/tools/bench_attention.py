#!/usr/bin/env python3
"""Attention forward on one GPU: toysim's kernels next to PyTorch's, in one run.

    python3 gpu/tools/bench_attention.py                      # n = 1024, 4096, 16384; d = 64, 128
    python3 gpu/tools/bench_attention.py --quick              # n = 1024, d = 64 only
    python3 gpu/tools/bench_attention.py --sizes 4096 --dims 64 --Br 128 --Bc 64 --json-out attention.json
    python3 gpu/tools/bench_attention.py --programs fa2,v1,v2,v3,v4        # the tensor-core versions
    python3 gpu/tools/bench_attention.py --programs v3,v4,gen              # generated CUDA beside v3, v4, SDPA
    python3 gpu/tools/bench_attention.py --programs v4 --dtype bf16         # v4 (Hopper) in bf16
    python3 gpu/tools/bench_attention.py --causal --sizes 4096,16384        # causal: fa2_causal, v3, v4
    python3 gpu/tools/bench_attention.py --backward --sizes 4096            # backward: fa2_backward_mma
    python3 gpu/tools/bench_attention.py --programs v4,fp8 --dims 128       # FP8 (e4m3) beside v4 in fp16

For each n and d (fp16, or --dtype bf16; non-causal, batch·heads BH = 262144 // n so that BH·n ≈ 262k tokens
at every n), it times

  toysim     each program's CUDA twin through the CLI, `toysim gpu run PROGRAM --set n=N
             --set d=D --set Br=.. --set Bc=.. --heads BH --dtype fp16 --format json`, which
             also checks the output against the CPU reference and the counted traffic against
             the simulator's (programs/attention/standard_tiled.toy, fa1.toy, fa2.toy), and
             the tensor-core versions of fa2 (v1 WMMA, v2 and v3 mma.sync, v4 wgmma) on fa2.toy through
             --kernel, each at its own Br, Bc (VERSIONS below), and CUDA generated from the
             schedule programs (`gen`: schedules/fa2_v3_mma.toy; `genc`, causal:
             schedules/fa2_causal_v3_mma.toy) through --kernel generated, and the FP8 forward
             (`fp8`, `fp8c` causal: fa2_fp8_wgmma, --dtype e4m3 whatever --dtype says, d = 128)
             with its output's largest error against the reference under the table;
  PyTorch    scaled_dot_product_attention with the flash and the cuDNN backends, and the naive
             version that materializes S = Q·Kᵀ and P = softmax(S) (softmax in fp32, as
             the anchor measurements in ../shared/anchors/ did);

all the same way: 3 warm-up launches, then the median of 20, each launch between two CUDA
events. TFLOP/s = 4·n²·d·BH / time, the seeds' forward count (Q·Kᵀ and P·V, a multiply-add
being two). The 1/√d scale is folded into Q (scale = 1.0), so no backend spends time on it.

--causal times causal attention instead: SDPA with is_causal=True, the naive version with the
mask, and toysim's fa2_causal_heaviest_first.toy on the CUDA cores (B = --Br) and through
--kernel fa2_causal_v3_mma and fa2_causal_v4_wgmma (B = 128); TFLOP/s = 2·n·(n+1)·d·BH / time, the visible pairs'
products (as the kernel catalog counts them; the masked halves of diagonal tiles not counted).

--backward times the backward pass instead: SDPA's flash (and cuDNN) backward, the gradients
of a forward output with a given dO (torch.autograd.grad of the output, the forward run once
outside the timing), against toysim's fa2_backward.toy through --kernel fa2_backward_mma (its
stages: D = rowsum(dO∘O), then the gradient pass) and, with --programs bwd, fa2_backward on the
CUDA cores; TFLOP/s = 10·n²·d·BH / time, the seeds' backward count (S, dP, dV, dK, dQ: five
n²·d products, 2.5 times the forward's 4·n²·d). No naive column. BH is the forward's: toysim
fills the program's inputs O and L on the GPU past its CPU budget (gpu/runtime/reference_fill.cu,
checked at sampled rows; before, the CPU filled them and BH was capped at 9 for n = 4096, d = 64).

It prints a markdown table like the anchor (sdpa_h100.md) with the toysim columns added,
each with its ratio to SDPA flash, and with --json-out writes every figure, the toysim CLI's
own JSON included. Numbers from one run: compare within a run, not across runs.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # gpu/tools/ -> the root
TOKENS = 262144  # BH·n, the anchor's 16 × 16384


def batch_heads(n, d, backward):
    """BH = TOKENS // n, forward and backward alike (the backward's O and L filled on the GPU)."""
    return max(1, TOKENS // n)

# toysim columns: (key, heading, program). The CUDA-core kernels take --Br and --Bc.
TOYSIM = [
    ("standard", "toysim standard", "programs/attention/standard_tiled.toy"),
    ("fa1", "toysim FA1", "programs/attention/fa1.toy"),
    ("fa2", "toysim FA2", "programs/attention/fa2.toy"),
    ("v1", "toysim FA2 v1 (WMMA)", "programs/attention/fa2.toy"),
    ("v2", "toysim FA2 v2 (mma.sync)", "programs/attention/fa2.toy"),
    ("v3", "toysim FA2 v3 (mma.sync, 32 rows a warp)", "programs/attention/fa2.toy"),
    ("v4", "toysim FA2 v4 (wgmma, TMA)", "programs/attention/fa2.toy"),
    ("v5", "toysim FA2 v5 (v4, K and V released apart)", "programs/attention/fa2.toy"),
    ("fp8", "toysim FA2 FP8 (e4m3 wgmma)", "programs/attention/fa2.toy"),
    ("gen", "toysim FA2 generated (v3's schedule)", "programs/attention/schedules/fa2_v3_mma.toy"),
    ("fa2c", "toysim FA2 causal", "programs/attention/fa2_causal_heaviest_first.toy"),
    ("v3c", "toysim FA2 causal v3 (mma.sync)", "programs/attention/fa2_causal_heaviest_first.toy"),
    ("v4c", "toysim FA2 causal v4 (wgmma, TMA)", "programs/attention/fa2_causal_heaviest_first.toy"),
    ("v5c", "toysim FA2 causal v5", "programs/attention/fa2_causal_heaviest_first.toy"),
    ("fp8c", "toysim FA2 causal FP8 (e4m3 wgmma)", "programs/attention/fa2_causal_heaviest_first.toy"),
    ("genc", "toysim FA2 causal generated (v3's schedule)", "programs/attention/schedules/fa2_causal_v3_mma.toy"),
    ("bwd", "toysim FA2 backward (CUDA cores)", "programs/attention/fa2_backward.toy"),
    ("bwd_mma", "toysim FA2 backward (mma.sync)", "programs/attention/fa2_backward.toy"),
]
CAUSAL = ("fa2c", "v3c", "v4c", "v5c", "fp8c", "genc")  # the columns of --causal (square tiles: --set B)
BACKWARD = ("bwd", "bwd_mma")  # the columns of --backward
BACKWARD_DEFAULT = ("bwd_mma",)  # the CUDA-core backward only when asked for (--programs bwd,bwd_mma)
# The tensor-core versions of fa2_forward (gpu/kernels/attention_tensor_core.cu) run fa2.toy through
# --kernel, each at the tile shape it is fastest at, per head dimension: {d: (Br, Bc)}.
VERSIONS = {
    "v1": ("fa2_v1_wmma", {64: (64, 64), 128: (64, 64)}),
    "v2": ("fa2_v2_mma", {64: (128, 64), 128: (128, 64)}),
    "v3": ("fa2_v3_mma", {64: (128, 64), 128: (128, 32)}),
    "v3c": ("fa2_causal_v3_mma", {64: (128, 128), 128: (128, 128)}),
    "v4": ("fa2_v4_wgmma", {64: (128, 128), 128: (128, 128)}),
    "v4c": ("fa2_causal_v4_wgmma", {64: (128, 128), 128: (128, 128)}),
    "v5": ("fa2_v5_wgmma", {64: (128, 128), 128: (128, 128)}),
    "v5c": ("fa2_causal_v5_wgmma", {64: (128, 128), 128: (128, 128)}),
    "fp8": ("fa2_fp8_wgmma", {128: (128, 128)}),  # d = 128 only
    "fp8c": ("fa2_causal_fp8_wgmma", {128: (128, 128)}),
    "bwd_mma": ("fa2_backward_mma", {64: (128, 128), 128: (64, 128)}),
    # CUDA generated from the schedule programs (toysim gpu cuda), at the Bc each was fastest at
    # (gpu/results/bench_generated_v3_h200.md).
    "gen": ("generated", {64: (128, 128), 128: (128, 64)}),
    "genc": ("generated", {64: (128, 128), 128: (128, 128)}),
}
# The CUDA-core kernels' tiles where --Br, --Bc would not fit: fa2_backward holds six fp32 tiles,
# more than a block's shared memory at d = 128 with Br = Bc = 64.
OWN_TILES = {"bwd": {64: (64, 64), 128: (64, 32)}}
TORCH_DTYPES = {"fp16": "float16", "bf16": "bfloat16"}  # --dtype: torch's name of each
OWN_DTYPE = {"fp8": "e4m3", "fp8c": "e4m3"}  # columns whose storage type is their own
# PyTorch columns: (key, heading)
TORCH = [("flash", "SDPA flash"), ("cudnn", "cuDNN"), ("naive", "naive PyTorch (S, P materialized)")]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ints = lambda text: [int(v) for v in text.replace(",", " ").split()]
    p.add_argument("--sizes", type=ints, default=[1024, 4096, 16384], help="sequence lengths n (default: 1024,4096,16384)")
    p.add_argument("--dims", type=ints, default=[64, 128], help="head dimensions d (default: 64,128)")
    p.add_argument("--quick", action="store_true", help="one small size: n = 1024, d = 64")
    p.add_argument("--Br", type=int, default=64, help="toysim Q tile rows (--set Br=..., default 64)")
    p.add_argument("--Bc", type=int, default=64, help="toysim K/V tile rows (--set Bc=..., default 64)")
    p.add_argument("--tiles", default="", help="the versions' tiles, e.g. v2:64=128x64,v3:128=128x32 (default: VERSIONS)")
    p.add_argument("--toysim", default=os.path.join(REPO, "build", "toysim"), help="the toysim binary (default: build/toysim)")
    p.add_argument("--causal", action="store_true", help="causal attention (the toysim columns fa2c, v3c, v4c, genc)")
    p.add_argument("--backward", action="store_true", help="the backward pass (the toysim columns bwd_mma, bwd)")
    p.add_argument("--programs", default=None,
                   help="toysim columns to run, of standard, fa1, fa2, v1, v2, v3, v4, v5, fp8, gen, or with --causal fa2c, v3c, v4c, v5c, fp8c, genc, or with "
                        "--backward bwd_mma, bwd "
                        "(default: all of them; 'none' for PyTorch only)")
    p.add_argument("--dtype", choices=("fp16", "bf16"), default="fp16", help="the inputs' type, of every column (default fp16)")
    p.add_argument("--no-torch", action="store_true", help="leave out the PyTorch columns")
    p.add_argument("--warmups", type=int, default=3)
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--timeout", type=float, default=900, help="seconds one toysim run may take (default 900)")
    p.add_argument("--json-out", help="write every figure here as JSON")
    a = p.parse_args()
    if a.quick:
        a.sizes, a.dims = [1024], [64]
    for item in filter(None, (t.strip() for t in a.tiles.split(","))):
        key, _, rest = item.partition(":")
        d, _, shape = rest.partition("=")
        br, _, bc = shape.partition("x")
        if key not in VERSIONS or not (d.isdigit() and br.isdigit() and bc.isdigit()):
            p.error(f"--tiles: {item!r} is not VERSION:D=BRxBC with VERSION one of {', '.join(VERSIONS)}")
        VERSIONS[key][1][int(d)] = (int(br), int(bc))
    if a.causal and a.backward:
        p.error("--causal and --backward: one at a time (there is no causal backward)")
    known = {k for k, _, _ in TOYSIM if (k in CAUSAL) == a.causal and (k in BACKWARD) == a.backward}
    if a.programs is None:
        a.programs = ",".join(k for k, _, _ in TOYSIM if k in known and (not a.backward or k in BACKWARD_DEFAULT))
    a.programs = [] if a.programs == "none" else [k.strip() for k in a.programs.split(",") if k.strip()]
    mode = " (with --causal)" if a.causal else " (with --backward)" if a.backward else ""
    for k in a.programs:
        if k not in known:
            p.error(f"--programs: {k!r} is not one of {', '.join(sorted(known))}{mode}")
    return a


def tflops(n, d, heads, ms, causal, backward=False):
    # Causal: the n·(n+1)/2 pairs a query sees; otherwise all n² (a multiply-add being two).
    # Backward: five n²·d products where the forward has two (the seeds' 10·n²·d).
    pairs = n * (n + 1) / 2 if causal else n * n
    return (10.0 if backward else 4.0) * pairs * d * heads / (ms * 1e-3) / 1e12 if ms else None


# ---- toysim: one CLI run per cell ----

def run_toysim(args, key, program, n, d, heads):
    """The CLI's JSON, reduced to what the table needs, plus the whole of it under 'cli'."""
    br, bc = args.Br, args.Bc
    kernel = []
    if key in VERSIONS:
        name, tiles = VERSIONS[key]
        if d not in tiles:
            return {"label": f"{name} at n = {n}, d = {d}", "error": f"{name} takes d = {', '.join(map(str, tiles))}"}
        br, bc = tiles[d]
        kernel = ["--kernel", name]
    elif key in OWN_TILES:
        br, bc = OWN_TILES[key][d]
    tiles = ["--set", f"B={br}"] if key in CAUSAL else ["--set", f"Br={br}", "--set", f"Bc={bc}"]  # causal: square tiles
    settings = kernel + ["--set", f"n={n}", "--set", f"d={d}"] + tiles + ["--heads", str(heads),
                         "--dtype", OWN_DTYPE.get(key, args.dtype), "--warmups", str(args.warmups), "--repeats", str(args.repeats), "--format", "json"]
    cmd = [args.toysim, "gpu", "run", program] + settings  # relative: results carry no machine path (cwd is the repository)
    label = f"{os.path.basename(program)}{' ' + kernel[1] if kernel else ''} at n = {n}, d = {d}"
    cell = {"command": " ".join(["toysim gpu run", program] + settings), "label": label, "Br": br, "Bc": bc}
    started = time.time()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, cwd=REPO)
    except FileNotFoundError:
        return {**cell, "error": f"no toysim binary at {args.toysim} (--toysim PATH)"}
    except subprocess.TimeoutExpired:
        return {**cell, "error": f"timed out after {args.timeout:.0f} s"}
    cell["wall_s"] = round(time.time() - started, 1)
    cell["exit_code"] = done.returncode
    try:
        out = json.loads(done.stdout)
    except json.JSONDecodeError:
        # Exit 2 and a message on stderr: refused (shared memory, device memory) or failed.
        text = (done.stderr or done.stdout).strip().splitlines()
        return {**cell, "error": text[-1] if text else f"exit code {done.returncode}, no output"}
    cell["cli"] = out
    median = (out.get("time_ms") or {}).get("median")
    cell["ms"] = median
    cell["tflops"] = tflops(n, d, heads, median, args.causal, args.backward) if median else out.get("tflops")
    cell["check_passed"] = (out.get("check") or {}).get("passed")
    cell["traffic_equal"] = out.get("traffic_equal")
    return cell


# ---- PyTorch: the anchor's method ----

def bench_torch(torch, fn, warmups, repeats):
    for _ in range(warmups):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(repeats):
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def run_torch(args, torch, n, d, heads):
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    cells = {}
    shape = (1, heads, n, d)
    gen = torch.Generator(device="cuda").manual_seed(n * 1000 + d)
    dtype = getattr(torch, TORCH_DTYPES[args.dtype])
    q = torch.randn(shape, device="cuda", dtype=dtype, generator=gen) * (d ** -0.5)  # the scale, folded into Q
    k = torch.randn(shape, device="cuda", dtype=dtype, generator=gen)
    v = torch.randn(shape, device="cuda", dtype=dtype, generator=gen)

    for key, backend in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
        try:
            with sdpa_kernel(backend):
                ms = bench_torch(torch, lambda: F.scaled_dot_product_attention(q, k, v, scale=1.0, is_causal=args.causal), args.warmups,
                                 args.repeats)
            cells[key] = {"ms": ms, "tflops": tflops(n, d, heads, ms, args.causal)}
        except Exception as e:  # a backend this build or GPU lacks
            cells[key] = {"error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"}

    above = torch.ones(n, n, device="cuda", dtype=torch.bool).triu(1) if args.causal else None  # key after query

    def naive():
        s = q @ k.transpose(-1, -2)
        if above is not None:
            s = s.masked_fill(above, float("-inf"))
        p = torch.softmax(s.float(), dim=-1).to(q.dtype)
        return p @ v

    # S (fp16), its fp32 copy and softmax, and P (fp16) live at once: about 12 bytes per score.
    need = 12 * n * n * heads
    free, _ = torch.cuda.mem_get_info()
    if need > 0.9 * free:
        cells["naive"] = {"error": f"needs about {need / 2**30:.0f} GiB, {free / 2**30:.0f} GiB free"}
    else:
        try:
            ms = bench_torch(torch, naive, args.warmups, args.repeats)
            cells["naive"] = {"ms": ms, "tflops": tflops(n, d, heads, ms, args.causal)}
        except torch.cuda.OutOfMemoryError:
            cells["naive"] = {"error": "out of memory"}
    del q, k, v
    torch.cuda.empty_cache()
    return cells


def run_torch_backward(args, torch, n, d, heads):
    """SDPA's backward: dQ, dK, dV of one forward output for a given dO, timed alone."""
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    cells = {}
    shape = (1, heads, n, d)
    gen = torch.Generator(device="cuda").manual_seed(n * 1000 + d)
    dtype = getattr(torch, TORCH_DTYPES[args.dtype])
    q = (torch.randn(shape, device="cuda", dtype=dtype, generator=gen) * (d ** -0.5)).requires_grad_()
    k = torch.randn(shape, device="cuda", dtype=dtype, generator=gen).requires_grad_()
    v = torch.randn(shape, device="cuda", dtype=dtype, generator=gen).requires_grad_()
    dout = torch.randn(shape, device="cuda", dtype=dtype, generator=gen)

    for key, backend in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
        try:
            with sdpa_kernel(backend):
                out = F.scaled_dot_product_attention(q, k, v, scale=1.0)  # once: the backward reads its saved O and L
                # retain_graph: every repeat runs the same backward kernels on the same saved tensors.
                ms = bench_torch(torch, lambda: torch.autograd.grad(out, (q, k, v), dout, retain_graph=True), args.warmups, args.repeats)
            cells[key] = {"ms": ms, "tflops": tflops(n, d, heads, ms, False, True)}
            del out
        except Exception as e:  # a backend this build or GPU lacks
            cells[key] = {"error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"}
    cells["naive"] = {"error": "not timed with --backward"}
    del q, k, v, dout
    torch.cuda.empty_cache()
    return cells


# ---- the table ----

def figure(cell):
    return f"{cell['tflops']:.1f}" if cell and cell.get("tflops") is not None else ("n/a" if cell else "")


def toysim_text(cell, flash, cudnn, notes):
    if not cell:
        return ""
    if cell.get("tflops") is None:
        notes.append(f"{cell['label']}: {cell.get('error', 'no time in its JSON')}")
        return f"n/a [{len(notes)}]"
    text = f"{cell['tflops']:.1f}"
    if flash and flash.get("tflops"):
        text += f" ({cell['tflops'] / flash['tflops']:.2f}×)"
    if cudnn and cudnn.get("tflops"):
        text += f" [{cell['tflops'] / cudnn['tflops']:.2f}× cuDNN]"
    problems = []
    if cell.get("check_passed") is False:
        problems.append("output check failed")
    if cell.get("traffic_equal") is False:
        problems.append("counted traffic differs from the simulator's")
    if problems:
        notes.append(f"{cell['label']}: {', '.join(problems)}")
        text += f" [{len(notes)}]"
    return text


def table(rows, args):
    torch_columns = [(k, h) for k, h in TORCH if not args.no_torch and not (args.backward and k == "naive")]
    columns = torch_columns + [(k, h) for k, h, _ in TOYSIM if k in args.programs]
    lines = ["| n | d | BH | " + " | ".join(h for _, h in columns) + " |", "|---|---|---|" + "---|" * len(columns)]
    notes = []
    for r in rows:
        cells = []
        for key, _ in columns:
            if key in r["torch"]:
                c = r["torch"][key]
                if c.get("error"):
                    notes.append(f"{key} at n = {r['n']}, d = {r['d']}: {c['error']}")
                    cells.append(f"n/a [{len(notes)}]")
                else:
                    cells.append(figure(c))
            else:
                cells.append(toysim_text(r["toysim"].get(key), r["torch"].get("flash"), r["torch"].get("cudnn"), notes))
        lines.append(f"| {r['n']} | {r['d']} | {r['heads']} | " + " | ".join(cells) + " |")
    out = "\n".join(lines)
    if args.programs and not args.no_torch:
        out += ("\n\nTFLOP/s = {} / median time; toysim cells: (×) is the ratio to SDPA flash, [× cuDNN] to cuDNN. ".format(
                    "2·n·(n+1)·d·BH (causal)" if args.causal else "10·n²·d·BH (backward)" if args.backward else "4·n²·d·BH") +
                "Tiles: FA2 Br = {}, Bc = {}; ".format(args.Br, args.Bc) +
                "; ".join(f"{k} {name} (Br, Bc) by d {tiles}" for k, (name, tiles) in VERSIONS.items() if k in args.programs) + ".")
    for r in rows:  # the FP8 columns' error against the reference (the checks' bound: their tolerance)
        for key in ("fp8", "fp8c"):
            checks = ((r["toysim"].get(key) or {}).get("cli") or {}).get("check", {}).get("arrays", [])
            if checks:
                out += (f"\n\n{key} at n = {r['n']}, d = {r['d']}, largest error against the reference: " +
                        ", ".join(f"{c['array']} {c['max_abs_error']:.3g} (tolerance {c['tolerance']:.3g})" for c in checks) + ".")
    if notes:
        out += "\n\n" + "\n".join(f"[{i + 1}] {t}" for i, t in enumerate(notes))
    return out


def main():
    args = parse_args()
    torch = None
    if not args.no_torch:
        import torch
        torch.backends.cuda.matmul.allow_tf32 = False
        if not torch.cuda.is_available():
            sys.exit("bench_attention: PyTorch sees no CUDA device (--no-torch runs toysim alone)")
    header = {"python": platform.python_version(), "Br": args.Br, "Bc": args.Bc, "warmups": args.warmups, "repeats": args.repeats,
              "dtype": args.dtype, "causal": args.causal, "backward": args.backward}
    if torch:
        header.update(torch=torch.__version__, device=torch.cuda.get_device_name())
    what = "backward" if args.backward else "forward"
    print(f"# Attention {what}, {args.dtype}, {'causal' if args.causal else 'non-causal'}, BH·n ≈ {TOKENS} tokens; toysim Br = {args.Br}, "
          f"Bc = {args.Bc}", flush=True)
    print(", ".join(f"{k} {v}" for k, v in header.items()), flush=True)

    rows = []
    for d in args.dims:
        for n in args.sizes:
            heads = batch_heads(n, d, args.backward)
            row = {"n": n, "d": d, "heads": heads, "toysim": {}, "torch": {}}
            # toysim first, while PyTorch holds no device memory (its cache is emptied after each row).
            for key, _, program in TOYSIM:
                if key in args.programs:
                    row["toysim"][key] = run_toysim(args, key, program, n, d, heads)
            if torch:
                row["torch"] = (run_torch_backward if args.backward else run_torch)(args, torch, n, d, heads)
            brief = {k: round(c["tflops"], 1) if c.get("tflops") else c.get("error", "n/a")
                     for k, c in {**row["torch"], **row["toysim"]}.items()}
            print(json.dumps({"n": n, "d": d, "BH": heads, **brief}), flush=True)
            rows.append(row)
            if args.json_out:  # after every row, so an interrupted run keeps what it measured
                with open(args.json_out, "w") as f:
                    json.dump({"run": header, "rows": rows}, f, indent=1)

    if not rows:
        sys.exit("bench_attention: no sizes to run")
    device = header.get("device") or next((c["cli"]["device"]["name"] for r in rows for c in r["toysim"].values() if "cli" in c), "?")
    print(f"\n## Attention {what}{' (causal)' if args.causal else ''} on one {device}, {args.dtype}: TFLOP/s\n")
    print(table(rows, args))


if __name__ == "__main__":
    main()
