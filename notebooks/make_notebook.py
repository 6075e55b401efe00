"""Writes notebooks/flashattention_from_scratch.ipynb from the cells below (outputs empty: the
test suite executes it, tests/notebook/run.py). Edit the cells here, then run
`python3 notebooks/make_notebook.py`; a test checks the .ipynb is what this makes."""
import json
import pathlib
import sys

cells = []


def md(text):
    cells.append(("markdown", text.strip("\n")))


def code(text):
    cells.append(("code", text.strip("\n")))


md("""
# FlashAttention from scratch, on a toy machine

This notebook walks the course with `toysim`'s Python module: the five problems of the seed,
the loop order that decides what gets reloaded, FA1 against FA2 as the sizes grow, and a
stepped look at the rescale that makes online softmax work. Every number below comes from
running the simulator (or its cost formulas); the cells assert the figures the course states,
so the notebook fails if they ever stop holding.

Run it from the repository's root with the module on `PYTHONPATH` (the build folder's
`python/`), or with toysim installed (`cmake --install`, or the .deb).
""")

code("""
import os, pathlib, shutil, subprocess
import matplotlib
matplotlib.use("Agg")  # headless in the test suite; Jupyter still shows the figures below
import matplotlib.pyplot as plt
import toysim

# The repository's root: where programs/ is (the notebook may run from notebooks/).
root = pathlib.Path.cwd()
while not (root / "programs").is_dir() and root != root.parent:
    root = root.parent
os.chdir(root)
toysim.__version__
""")

md("""
## Problems 1–5

Each problem is a program in `programs/`, with its checks (`check out = softmax(x)`) and the
figures the seed states (`expect reads = 2n`). `run()` returns every counter by its name in the
counter table, the verdicts, and the outputs as NumPy arrays.
""")

code("""
problems = ["p1_c00.toy", "p2_matmul_inner_3reg.toy", "p3_matmul_outer_6reg.toy",
            "p4_softmax_3pass.toy", "p5_online_softmax.toy"]
print(f"{'program':28} {'cycles':>7} {'reads':>6} {'writes':>6}  verdict")
for name in problems:
    r = toysim.load(f"programs/{name}").run()
    assert r.passed, name
    c = r.counters
    print(f"{name:28} {c['cycles']:>7} {c['reads']:>6} {c['writes']:>6}  "
          f"{len(r.checks)} checks, {len(r.expects)} expected figures: ok")
""")

md("""
Problem 5 at a larger n: online softmax reads x twice instead of three times (Problem 4),
and its output is the softmax to within rounding.
""")

code("""
import numpy as np
p4 = toysim.load("programs/p4_softmax_3pass.toy", n=1000).run()
p5 = toysim.load("programs/p5_online_softmax.toy", n=1000).run()
print("reads: 3-pass", p4.counters["reads"], " online", p5.counters["reads"])
assert p4.counters["reads"] == 3 * 1000 and p5.counters["reads"] == 2 * 1000
x = p5.array("x")
expected = np.exp(x - x.max()) / np.exp(x - x.max()).sum()
print("max |out − softmax(x)| =", np.abs(p5.outputs["out"] - expected).max())
""")

md("""
## The loop order decides what is reloaded

Seed 004 compares an outer loop over queries (inner product) with an outer loop over K and V
(outer product), one element being one row of d numbers: Q is loaded n vs n² times, K and V
n² vs n, O n vs n².
""")

code("""
inner = toysim.load("programs/attention/loop_inner_product.toy", n=16, d=4).run()
outer = toysim.load("programs/attention/loop_outer_product.toy", n=16, d=4).run()
rows = ["reads(Q)", "reads(K)", "reads(V)", "reads(O)", "writes(O)"]
print(f"{'counter':10} {'inner product':>14} {'outer product':>14}")
for k in rows:
    print(f"{k:10} {inner.counters[k]:>14} {outer.counters[k]:>14}")
n, d = 16, 4
assert inner.counters["reads(Q)"] == n * d and outer.counters["reads(Q)"] == n * n * d
assert inner.counters["reads(K)"] == n * n * d and outer.counters["reads(K)"] == n * d
""")

md("""
## FA1 against FA2, as n and B_c grow

At tile granularity the same choice separates the two FlashAttentions: FA1 keeps a K/V tile
on chip and sends O, m and ℓ through DRAM once per K/V tile; FA2 keeps a Q tile and its
output on chip. `cost()` gives each array's traffic as a formula of the parameters, without
running; each formula is also a function of them. One point is checked against a real run.
""")

code("""
fa1 = toysim.load("programs/attention/fa1.toy", n=256, d=64, Br=64, Bc=64)
fa2 = toysim.load("programs/attention/fa2.toy", n=256, d=64, Br=64, Bc=64)
c1, c2 = fa1.cost(), fa2.cost()
for name, c in (("fa1", c1), ("fa2", c2)):
    print(name, "  ".join(f"reads({a}) = {f}" for a, f in c.reads.items()))

def traffic(cost, **params):
    # every array's reads and writes, in elements
    return sum(f(**params) for f in cost.reads.values()) + sum(f(**params) for f in cost.writes.values())

# The formulas against a run at n = 256:
run2 = fa2.run()
assert traffic(c2) == run2.counters["reads"] + run2.counters["writes"]
""")

code("""
ns = [256, 512, 1024, 2048, 4096]
bcs = [16, 32, 64, 128, 256]
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
for name, c in (("FA1", c1), ("FA2", c2)):
    left.plot(ns, [traffic(c, n=n) / 1e6 for n in ns], marker="o", label=name)
    right.plot(bcs, [traffic(c, n=4096, Bc=bc) / 1e6 for bc in bcs], marker="o", label=name)
left.set(xscale="log", yscale="log", xlabel="n", ylabel="DRAM traffic (M elements)", title="d = 64, 64×64 tiles")
right.set(xscale="log", yscale="log", xlabel="B_c", ylabel="DRAM traffic (M elements)", title="n = 4096, d = 64, B_r = 64")
for ax in (left, right):
    ax.legend(); ax.grid(True, which="both", alpha=0.3)
plt.tight_layout()
plt.show()
print("at n = 4096: FA1 moves", round(traffic(c1, n=4096) / traffic(c2, n=4096), 2), "× what FA2 moves")
assert traffic(c1, n=4096) > traffic(c2, n=4096)
""")

md("""
## A stepped look at the rescale

In Problem 5's loop, when x_i raises the running max from m to m', the sum so far is
multiplied by e^(m − m') ≤ 1 (line 43). A breakpoint on line 43 stops once it has run: R2 is
the old sum times the factor. The registers are symbolic, the seed's names, so each says what
it holds: with x1 the new max, m1 = max(x0, x1) and the sum 1 became e^(x0 − m1).
""")

code("""
s = toysim.Session(toysim.load("programs/p5_online_softmax.toy", n=4))
s.break_at("43")
stop = s.continue_()
print(stop)
print(s.regs())
""")

md("""
One step more adds the new term e^(x1 − m1): R2 becomes s1, the running sum under the new max.
""")

code("""
before = dict(s.registers)
s.step()
print(s.regs())
# One step back is the machine as it was: going back replays from a checkpoint.
s.back()
assert dict(s.registers) == before
""")

md("""
## The same program on a GPU

Where this machine has a GPU, `toysim diff` runs the program's CUDA kernel, counts its traffic
and sets it beside the simulator's and what the hardware measured. Without one, the cell says
so and moves on.
""")

code("""
toysim_exe = os.environ.get("TOYSIM_EXE", "build/toysim")
has_gpu = shutil.which("nvidia-smi") is not None and subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0
if not has_gpu:
    print("skipped: no GPU on this machine (nvidia-smi -L found none); toysim diff needs one")
else:
    done = subprocess.run([toysim_exe, "diff", "programs/attention/fa2.toy", "--set", "n=4096", "--set", "d=64",
                           "--set", "Br=64", "--set", "Bc=64", "--heads", "8", "--dtype", "fp16"],
                          capture_output=True, text=True)
    print(done.stdout or done.stderr)
""")

notebook = {
    "cells": [
        {"cell_type": kind, "metadata": {}, "source": text.splitlines(keepends=True),
         **({"outputs": [], "execution_count": None} if kind == "code" else {})}
        for kind, text in cells
    ],
    "metadata": {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    },
    "nbformat": 4,
    "nbformat_minor": 5,
}
for i, cell in enumerate(notebook["cells"]):
    cell["id"] = f"cell-{i:02d}"
# (A path as argument: write there instead; the test compares the two.)
out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else pathlib.Path(__file__).with_name("flashattention_from_scratch.ipynb")
out.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
