#!/usr/bin/env python3
"""Generated CUDA at a language model's shapes, next to PyTorch SDPA, in one run.

    python3 gpu/tools/bench_lm_shapes.py --json-out gpu/results/bench_lm_shapes_h200.json

Two workloads, each at the shapes of a published model (the models' configs: 128-wide heads):

  prefill  grouped-query attention, programs/attention/fa2_gqa_scheduled.toy: Llama-3-8B
           (32 query heads, 8 K/V heads: G = 4) and Llama-3-70B (64 query heads, 8 K/V heads:
           G = 8), batch 1, n = 4096 and 16384 positions, non-causal. A block holds Mr = G·B_r
           = 128 packed rows (B_r = 32 at G = 4, 16 at G = 8), B_c = 64. toysim runs one K/V
           head a program head (Hkv = 1, --heads 8). SDPA gets Q (1, Hq, n, 128) and K, V
           (1, 8, n, 128) with enable_gqa=True.
  decode   one query a head against a cache of n keys (MHA, Llama-2-7B: 32 heads), batch 4
           (128 heads), n = 4096 and 32768, programs/attention/flash_decoding_scheduled.toy
           with S = 16 splits, B_c = 32. SDPA gets Q (4, 32, 1, 128), K, V (4, 32, n, 128).

Both in fp16, scale folded into Q (SDPA's scale = 1.0). toysim's runs go through the CLI
(`toysim gpu run PROGRAM --kernel generated ... --format json`), which also checks the output
against the CPU reference and the counted traffic against the simulator's; its time is the
median of --repeats launches of every stage (decode: the splits and the merge). PyTorch's the
same way as gpu/tools/bench_attention.py (warm-ups, then the median between CUDA events).
TFLOP/s: 4·n²·d·Hq for prefill; decode is bound by reading K and V, so its column is GB/s:
2·n·d·2 bytes a head over the time.
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_attention import REPO, bench_torch  # noqa: E402  (the same timing as the attention bench)

PREFILL = [  # model, query heads, K/V heads
    ("Llama-3-8B", 32, 8),
    ("Llama-3-70B", 64, 8),
]
DECODE = [  # model, heads, batch
    ("Llama-2-7B", 32, 4),
]
D = 128
ROWS = 128  # packed query rows a block: G·B_r
BC = 64
# Decode: the fastest of S in {4, 8, 16, 32} × B_c in {16, 32, 64} measured at n = 32768 on the
# H200 (10 of the 12 points; gpu/results/bench_lm_shapes_h200.md): 0.88 ms at S = 16, B_c = 32,
# 1.45 at the S = 8, B_c = 64 first tried.
DECODE_BC = 32
SPLITS = 16


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--toysim", default="build/toysim")
    p.add_argument("--prefill-sizes", default="4096,16384")
    p.add_argument("--decode-sizes", default="4096,32768")
    p.add_argument("--warmups", type=int, default=3)
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--timeout", type=float, default=900)
    p.add_argument("--json-out")
    p.add_argument("--table-from", help="print the table of a saved --json-out file and run nothing")
    a = p.parse_args()
    a.prefill_sizes = [int(s) for s in a.prefill_sizes.split(",") if s]
    a.decode_sizes = [int(s) for s in a.decode_sizes.split(",") if s]
    return a


def run_toysim(args, program, settings, heads):
    cmd = [args.toysim, "gpu", "run", program, "--kernel", "generated"] + [x for k, v in settings for x in ("--set", f"{k}={v}")]
    cmd += ["--heads", str(heads), "--dtype", "fp16", "--warmups", str(args.warmups), "--repeats", str(args.repeats), "--format", "json"]
    cell = {"command": " ".join(["toysim"] + cmd[1:])}  # relative paths: no machine path in the results
    started = time.time()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, cwd=REPO)
    except subprocess.TimeoutExpired:
        return {**cell, "error": f"timed out after {args.timeout:.0f} s"}
    cell["wall_s"] = round(time.time() - started, 1)
    try:
        out = json.loads(done.stdout)
    except json.JSONDecodeError:
        text = (done.stderr or done.stdout).strip().splitlines()
        return {**cell, "error": text[-1] if text else f"exit code {done.returncode}"}
    cell.update(ms=(out.get("time_ms") or {}).get("median"), check_passed=(out.get("check") or {}).get("passed"),
                traffic_equal=out.get("traffic_equal"), compile=out.get("compile"), cli=out)
    return cell


def run_sdpa(torch, args, q_shape, kv_shape, gqa):
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    gen = torch.Generator(device="cuda").manual_seed(q_shape[2] * 1000 + q_shape[1])
    q = torch.randn(q_shape, device="cuda", dtype=torch.float16, generator=gen) * (D ** -0.5)
    k = torch.randn(kv_shape, device="cuda", dtype=torch.float16, generator=gen)
    v = torch.randn(kv_shape, device="cuda", dtype=torch.float16, generator=gen)
    cells = {}
    for key, backend in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION),
                         ("efficient", SDPBackend.EFFICIENT_ATTENTION)):
        extra = {"enable_gqa": True} if gqa else {}
        try:
            with sdpa_kernel(backend):
                cells[key] = {"ms": bench_torch(torch, lambda: F.scaled_dot_product_attention(q, k, v, scale=1.0, **extra), args.warmups,
                                                args.repeats)}
        except Exception as e:  # a backend this build lacks, or one without GQA
            cells[key] = {"error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"}
    del q, k, v
    torch.cuda.empty_cache()
    return cells


def main():
    warnings.filterwarnings("ignore", category=UserWarning)  # SDPA says why a backend declined: the table has it
    args = parse_args()
    if args.table_from:
        with open(args.table_from) as f:
            saved = json.load(f)
        print(table(saved["rows"], saved["meta"]["device"]))
        return
    try:
        import torch
        have_torch = torch.cuda.is_available()
    except ImportError:
        torch, have_torch = None, False
    rows = []
    for model, hq, hkv in PREFILL:
        g = hq // hkv
        for n in args.prefill_sizes:
            settings = [("n", n), ("d", D), ("Br", ROWS // g), ("Bc", BC), ("G", g), ("Hkv", 1)]
            row = {"workload": "prefill", "model": model, "n": n, "d": D, "query_heads": hq, "kv_heads": hkv, "batch": 1,
                   "flop": 4.0 * n * n * D * hq,
                   "toysim": run_toysim(args, "programs/attention/fa2_gqa_scheduled.toy", settings, hkv)}
            if have_torch:
                row["sdpa"] = run_sdpa(torch, args, (1, hq, n, D), (1, hkv, n, D), True)
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "toysim"} | {"toysim_ms": row["toysim"].get("ms"), "wall_s": row["toysim"].get("wall_s")}), flush=True)
    for model, heads, batch in DECODE:
        for n in args.decode_sizes:
            settings = [("n", n), ("d", D), ("S", SPLITS), ("Bc", DECODE_BC)]
            row = {"workload": "decode", "model": model, "n": n, "d": D, "query_heads": heads, "kv_heads": heads, "batch": batch,
                   "kv_bytes": 2.0 * n * D * 2 * heads * batch,
                   "toysim": run_toysim(args, "programs/attention/flash_decoding_scheduled.toy", settings, heads * batch)}
            if have_torch:
                row["sdpa"] = run_sdpa(torch, args, (batch, heads, 1, D), (batch, heads, n, D), False)
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "toysim"} | {"toysim_ms": row["toysim"].get("ms"), "wall_s": row["toysim"].get("wall_s")}), flush=True)

    device = torch.cuda.get_device_name() if have_torch else None
    print(table(rows, device))
    if args.json_out:
        meta = {"device": device, "torch": torch.__version__ if torch else None, "python": platform.python_version(),
                "warmups": args.warmups, "repeats": args.repeats}
        with open(args.json_out, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)


def rate(row, ms):
    if not ms:
        return "–"
    if row["workload"] == "prefill":
        return f"{row['flop'] / (ms * 1e-3) / 1e12:.1f} TFLOP/s"
    return f"{row['kv_bytes'] / (ms * 1e-3) / 1e9:.0f} GB/s"


def table(rows, device):
    out = [f"# Generated CUDA at language-model shapes against SDPA ({device or 'no GPU'})", "",
           "| workload | model | n | heads (q / kv × batch) | generated ms | rate | ok | SDPA flash ms | cuDNN ms | efficient ms | generated / flash | generated / best SDPA |",
           "|---|---|---:|---|---:|---:|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        t = r["toysim"]
        sdpa = r.get("sdpa", {})
        ms = {k: sdpa.get(k, {}).get("ms") for k in ("flash", "cudnn", "efficient")}
        best = min((v for v in ms.values() if v), default=None)
        ok = "ok" if t.get("check_passed") and t.get("traffic_equal") else t.get("error", "check or counts failed")
        speed = f"{best / t['ms']:.2f}×" if best and t.get("ms") else "–"
        over_flash = f"{ms['flash'] / t['ms']:.2f}×" if ms["flash"] and t.get("ms") else "–"
        cell = lambda v: f"{v:.3f}" if v else "–"
        out.append(f"| {r['workload']} | {r['model']} | {r['n']} | {r['query_heads']} / {r['kv_heads']} × {r['batch']} | {cell(t.get('ms'))} | "
                   f"{rate(r, t.get('ms'))} | {ok} | {cell(ms['flash'])} | {cell(ms['cudnn'])} | {cell(ms['efficient'])} | {over_flash} | {speed} |")
    return "\n".join(out)


if __name__ == "__main__":
    main()
