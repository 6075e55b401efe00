"""Program.trace, Program.cost and Program.sweep against `toysim trace`, `cost` and `sweep`
with --format json."""

import pytest

import toysim
from conftest import cli_json, sets
from test_run import at, json_path

FA2 = {"n": 16, "d": 4, "Br": 4, "Bc": 8}


@pytest.mark.parametrize("path,params,values", [
    ("programs/p1_c00.toy", {}, "auto"),
    ("programs/p5_online_softmax.toy", {"n": 4}, "auto"),
    ("programs/p5_online_softmax.toy", {"n": 4}, "numeric"),
    ("programs/attention/fa2.toy", FA2, "auto"),
])
def test_trace_is_the_cli_trace(path, params, values):
    expected = cli_json("trace", path, *sets(**params), "--values", values, "--format", "json")
    t = toysim.load(path, **params).trace(values=values)
    assert t.json == expected
    assert list(t) == expected["steps"] and len(t) > 0
    assert t.complete is True and t.fault is None
    for name, value in t.counters.items():
        assert at(expected["counters"], json_path(name)) == value, name


def test_the_readme_s_step_6():
    t = toysim.load("programs/p1_c00.toy").trace()
    assert t[5] == {"step": 6, "cycle": 6, "cost": 1, "at": "programs/p1_c00.toy:29:1", "line": 29, "col": 1,
                    "instruction": "MAC R0, R1, R2, R2",
                    "writes": [{"register": "R2", "old": "a00·b00", "new": "c00"}],
                    "dram": [],
                    "counters": {"cycles": 1, "instructions": 1, "MAC": 1},
                    "registers": {"R0": "a01", "R1": "b10", "R2": "c00"}}


def test_a_trace_past_its_limit_raises_with_the_rows_before():
    with pytest.raises(toysim.ToyError) as caught:
        toysim.load("programs/p5_online_softmax.toy", n=4).trace(max_steps=10)
    expected = cli_json("trace", "programs/p5_online_softmax.toy", "--set", "n=4", "--max-steps", "10", "--format", "json", codes=(2,))
    assert caught.value.trace.json == expected
    assert len(caught.value.trace) == 10 and caught.value.trace.complete is False
    assert "step limit reached" in str(caught.value)


@pytest.mark.parametrize("path,params", [
    ("programs/attention/fa2.toy", {}),
    ("programs/attention/fa2.toy", FA2),
    ("programs/p5_online_softmax.toy", {"n": 1000}),
    ("programs/attention/fa1.toy", {}),
])
def test_cost_is_the_cli_cost(path, params):
    expected = cli_json("cost", path, *sets(**params), "--format", "json")
    c = toysim.load(path, **params).cost()
    assert c.json == expected
    for name, info in expected["arrays"].items():
        for which in ("reads", "writes"):
            f = c[which][name]
            assert (f.text, f.value, f.counted, f.exact) == (info[which]["formula"], info[which]["value"], info[which]["counted"],
                                                             info["exact"])
            assert f() == info[which]["value"]  # at the program's own parameters
    assert c["work"].text == expected["time"]["work"]["formula"]
    assert c["cycles"].value == expected["time"]["cycles"]["value"]


def test_a_program_with_a_cache():
    path = "programs/cache_conflict.toy"
    c = toysim.load(path).cost()
    assert c.json == cli_json("cost", path, "--format", "json")  # the count through the cache
    assert c.json["counters"]["l2"]["misses"] > 0
    assert c["reads"]["x"].text == "n" and c["reads"]["x"](n=64) == 64
    r = toysim.load(path).run()
    assert r.json == cli_json("run", path, "--format", "json")
    for name in ("l2_hits", "l2_misses", "l2_misses(x)", "dram_bytes_read"):
        assert at(r.json["counters"], json_path(name)) == r.counters[name]


def test_a_formula_is_a_function_of_the_parameters():
    c = toysim.load("programs/attention/fa2.toy").cost()
    assert c["reads"]["K"].text == "n·d·Tr"
    at_4096 = dict(n=4096, d=64, Br=64, Bc=64)
    expected = cli_json("cost", "programs/attention/fa2.toy", *sets(**at_4096), "--format", "json")
    assert c["reads"]["K"](**at_4096) == expected["arrays"]["K"]["reads"]["value"] == 4096 * 64 * 64
    assert c["writes"]["O"](**at_4096) == expected["arrays"]["O"]["writes"]["value"]
    assert c["cycles"](**at_4096) == expected["time"]["cycles"]["value"]
    assert c["work"](**at_4096) == expected["time"]["work"]["value"]
    # Only what is given changes: n alone keeps the program's d = 4, Br = 2.
    assert c["reads"]["Q"](n=1000) == 1000 * 4
    assert c.reads["K"](n=1000) == 1000 * 4 * 500


@pytest.mark.parametrize("path,own,swept,cli_sets", [
    ("programs/p5_online_softmax.toy", {}, {"n": [10, 100, 1000]}, ["--set", "n=10,100,1000"]),
    ("programs/attention/fa2.toy", {"d": 4}, {"n": [8, 16], "Bc": [4, 8]}, ["--set", "d=4", "--set", "n=8,16", "--set", "Bc=4,8"]),
])
def test_sweep_is_the_cli_sweep(path, own, swept, cli_sets):
    expected = cli_json("sweep", path, *cli_sets, "--format", "json")
    rows = toysim.load(path, **own).sweep(**swept)
    assert rows.json == expected
    assert len(rows) == len(expected)
    used = {op for entry in expected for op, count in entry["counters"]["by_opcode"].items() if count}
    for row, entry in zip(rows, expected):
        for name, value in entry["params"].items():
            assert row[name] == value
        assert row["ok"] == entry["ok"]
        counters = {k: v for k, v in row.items() if k not in entry["params"] and k != "ok"}
        for name, value in counters.items():
            assert at(entry["counters"], json_path(name)) == value, name
        assert used <= set(counters)
        assert {"cycles", "reads", "writes", "traffic"} <= set(counters)


def test_cost_on_a_machine_is_the_cli_cost():
    # cost(machine="h100") is `toysim cost --machine h100`: the same JSON, predicted time included.
    params = {"n": 4096, "d": 64, "Br": 64, "Bc": 64}
    p = toysim.load("programs/attention/schedules/fa2_forward.toy", **params)
    got = p.cost(heads=16, machine="h100").json
    assert got == cli_json("cost", "programs/attention/schedules/fa2_forward.toy", *sets(**params), "--machine", "h100", "--heads", "16",
                           "--format", "json")
    assert got["predicted_time"]["occupancy"]["resident_blocks_per_sm"] == 2
    with pytest.raises(toysim.ToyError, match=r"cost\(machine=\.\.\.\) 'a100': no such machine"):
        p.cost(machine="a100")


def test_tune_schedule_is_the_cli_tune():
    # The seed's 3-register matmul: 25 cycles, proven; the module's dict is the CLI's JSON.
    p = toysim.load("programs/p2_matmul_inner_3reg.toy")
    t = p.tune_schedule()
    assert t == cli_json("tune", "--schedule", "programs/p2_matmul_inner_3reg.toy", "--format", "json")
    assert t["cycles"] == 25 and t["lower_bound"] == 20
    assert p.tune_schedule(registers=6)["cycles"] == 20
    with pytest.raises(toysim.ToyError, match="2 registers cannot compute these sums"):
        p.tune_schedule(registers=2)


def test_tune_is_the_cli_tune():
    # v3's space at n = 512: the module's rows are the CLI's JSON, and the refused points say why.
    p = toysim.load("programs/attention/schedules/fa2_v3_mma.toy", n=512, d=64)
    t = p.tune(Br=[64, 128], Bc=[64, 128])
    assert t == cli_json("tune", "programs/attention/schedules/fa2_v3_mma.toy", "--set", "n=512", "--set", "d=64",
                         "--vary", "Br=64,128", "--vary", "Bc=64,128", "--format", "json")
    assert [r["params"] for r in t["ranked"]] == [{"Br": 64, "Bc": 128}, {"Br": 64, "Bc": 64}]
    assert "registers a thread" in t["dropped"][0]["why"]


def test_tune_as_a_kernel_runs_it_is_the_cli_tune():
    # kernel= is --kernel: each point as fa2_v3_mma runs it, the tiles it refuses dropped with its reason.
    p = toysim.load("programs/attention/schedules/fa2_v3_mma.toy", n=512, d=64)
    t = p.tune(Br=[64, 128], Bc=[32, 64], dtype="fp16", kernel="fa2_v3_mma")
    assert t == cli_json("tune", "programs/attention/schedules/fa2_v3_mma.toy", "--set", "n=512", "--set", "d=64", "--vary", "Br=64,128",
                         "--vary", "Bc=32,64", "--dtype", "fp16", "--kernel", "fa2_v3_mma", "--format", "json")
    assert t["kernel"] == "kernel fa2_v3_mma"
    assert [r["params"] for r in t["ranked"]] == [{"Br": 128, "Bc": 64}, {"Br": 128, "Bc": 32}]
    assert t["dropped"][0]["why"] == "fa2_v3_mma takes Br = 128 (4 warps of 32 rows) and Bc = 32 or 64, not Br = 64, Bc = 32"
