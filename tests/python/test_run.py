"""toysim.load and Program.run against `toysim run`: the same JSON, the same counters under the
counter table's names, the same verdicts, and outputs equal to what `run --show` prints."""

import math
import re

import numpy as np
import pytest

import toysim
from conftest import cli, cli_json, sets

RUNS = [
    ("programs/p1_c00.toy", {}),
    ("programs/p3_matmul_outer_6reg.toy", {}),
    ("programs/p5_online_softmax.toy", {"n": 8}),
    ("programs/p4_softmax_3pass.toy", {"n": 1000}),
    ("programs/attention/fa2.toy", {"n": 16, "d": 4, "Br": 4, "Bc": 8}),
    ("programs/attention/fa2.toy", {"n": 12, "d": 4, "Br": 4, "Bc": 8, "P": 3}),  # workers: work and utilization
    ("programs/cache_conflict.toy", {}),  # a cache: its counters under "l2"
]


def json_path(name):
    """Where `toysim run --format json` keeps the counter `name`, under "counters" (the counter table of docs/counters.md)."""
    fixed = {"cycles": "cycles", "instructions": "instructions", "reads": "dram/reads", "writes": "dram/writes",
             "traffic": "dram/traffic", "registers": "registers", "compute": "compute",
             "arithmetic_intensity": "arithmetic_intensity", "work": "workers/work", "utilization": "workers/utilization",
             "l2_hits": "l2/hits", "l2_misses": "l2/misses", "l2_hit_rate": "l2/hit_rate", "dram_bytes_read": "l2/dram_bytes_read",
             "dram_bytes_written": "l2/dram_bytes_written", "l2_dirty_bytes": "l2/dirty_bytes"}
    if name in fixed:
        return fixed[name].split("/")
    m = re.fullmatch(r"(\w+)\((\w+)\)", name)
    if m and m.group(1) in ("reads", "writes"):
        return ["dram", "arrays", m.group(2), m.group(1)]
    if m and m.group(1) == "work":
        return ["work_by_opcode", m.group(2)]
    if m and m.group(1) in ("l2_hits", "l2_misses", "dram_bytes_read", "dram_bytes_written"):
        return ["l2", "arrays", m.group(2), {"l2_hits": "hits", "l2_misses": "misses"}.get(m.group(1), m.group(1))]
    assert re.fullmatch(r"[A-Z_]+", name), name
    return ["by_opcode", name]


def at(data, path):
    for key in path:
        data = data[key]
    return data


def shown_arrays(text):
    """`toysim run --show NAME`'s blocks: name -> the printed cells, row by row."""
    blocks, name = {}, None
    for line in text.splitlines():
        m = re.fullmatch(r"(\w+) \((.*)\):", line)
        if m:
            name = m.group(1)
            blocks[name] = []
        elif name and line.startswith("  "):
            blocks[name].append(line.split())
        else:
            name = None
    return blocks


def cell(v):
    """A value as `run --show` prints it."""
    return "—" if math.isnan(v) else f"{0.0 if v == 0 else v:.4f}"


@pytest.mark.parametrize("path,params", RUNS, ids=[f"{p}{params}" for p, params in RUNS])
def test_run_is_the_cli_run(path, params):
    expected = cli_json("run", path, *sets(**params), "--format", "json")
    r = toysim.load(path, **params).run()
    assert r.json == expected
    assert r.passed is expected["ok"] is True
    assert r.checks == expected["check"]["checks"] and r.checks
    assert r.expects == expected["expect"]["figures"]
    assert r.arrays == expected["counters"]["dram"]["arrays"]
    assert r.fault is None
    # Every counter by its table name, with the JSON's value at that counter's path; every
    # opcode, as the JSON has them.
    for name, value in r.counters.items():
        assert at(expected["counters"], json_path(name)) == value, name
    assert set(expected["counters"]["by_opcode"]) <= set(r.counters)
    assert r.counters["cycles"] == expected["counters"]["cycles"] > 0


@pytest.mark.parametrize("path,params", RUNS, ids=[f"{p}{params}" for p, params in RUNS])
def test_outputs_are_what_run_show_prints(path, params):
    p = toysim.load(path, **params)
    r = p.run()
    outputs = [name for name, (role, _) in p.arrays.items() if role == "output"]
    assert sorted(r.outputs) == sorted(outputs) and outputs
    show = []
    for name in outputs:
        show += ["--show", name]
    done = cli("run", path, *sets(**params), *show)
    assert done.returncode == 0, done.stderr
    printed = shown_arrays(done.stdout)
    for name in outputs:
        values = r.outputs[name]
        assert values.dtype == np.float64
        assert values.shape == p.arrays[name][1]
        cols = values.shape[-1] if values.ndim else 1
        cells = [cell(v) for v in values.reshape(-1)]
        assert [cells[i:i + cols] for i in range(0, len(cells), cols)] == printed[name]


def test_an_input_array_and_the_reference():
    r = toysim.load("programs/p5_online_softmax.toy", n=8).run()
    x = r.array("x")
    assert x.shape == (8,)
    assert np.allclose(r.outputs["out"], np.exp(x - x.max()) / np.exp(x - x.max()).sum())
    with pytest.raises(KeyError):
        r.array("nope")


def test_a_program_from_text_and_a_failed_figure():
    text = open("programs/p1_c00.toy").read().replace("expect cycles = 7", "expect cycles = 6")
    assert "expect cycles = 6" in text
    r = toysim.load(text).run()
    assert r.passed is False
    failed = [f for f in r.expects if not f["ok"]]
    assert failed == [{"counter": "cycles", "relation": "=", "expected": 6, "actual": 7, "ok": False}]
    assert r.json["program"] == "<string>"
    done = cli("run", "-", "--format", "json", input=text)
    assert done.returncode == 1
    expected = __import__("json").loads(done.stdout)
    expected["program"] = "<string>"
    assert r.json == expected


def test_parameters_are_the_cli_settings():
    p = toysim.load("programs/p4_softmax_3pass.toy", n=1_000_000)
    assert p.params["n"] == 1_000_000
    r = p.run()
    assert (r.counters["reads"], r.counters["writes"]) == (3_000_000, 1_000_000)  # the README's figures
    assert p.with_params(n=10).run().counters["reads"] == 30
    with pytest.raises(TypeError):
        toysim.load("programs/p1_c00.toy", n=1.5)
