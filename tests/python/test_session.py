"""toysim.Session: the engine of `toysim step`, so the same moves print the same text; and a
session moved back and forth stands where a fresh run stands at that step."""

import numpy as np
import pytest

import toysim
from conftest import cli


def cli_step(path, commands, *args):
    """`toysim step PATH` fed `commands`: the text each command printed, in order."""
    done = cli("step", path, *args, input="".join(c + "\n" for c in commands))
    assert done.returncode == 0, done.stderr
    parts = done.stdout.split("(toysim) ")[1:]
    out = []
    for command, part in zip(commands, parts):
        assert part.startswith(command + "\n")
        out.append(part[len(command) + 1:])
    return out


def test_the_readme_s_session_prints_what_toysim_step_prints():
    path = "programs/p5_online_softmax.toy"
    expected = cli_step(path, ["break 43", "continue", "continue", "back 2", "watch R2", "reverse-continue", "print R2", "counters"])
    s = toysim.Session(toysim.load(path))
    assert s.values == "symbolic" and s.position == 0
    assert s.break_at(43) == 1
    stops = [s.continue_(), s.cont()]
    assert [(x.reason, x.breakpoint, x.step) for x in stops] == [("breakpoint", 1, 13), ("breakpoint", 1, 22)]
    back = s.back(2)
    assert (back.reason, back.step) == ("moved", 20)
    assert s.watch("R2") == 2
    rc = s.reverse_continue()
    assert (rc.reason, rc.breakpoint, rc.step) == ("breakpoint", 2, 14)
    assert [stops[0].text, stops[1].text, back.text, rc.text] == [expected[1], expected[2], expected[3], expected[5]]
    assert s.print("R2") == expected[6]
    assert s.counters_text() == expected[7]
    assert s.registers["R2"] == "s1"
    assert [b["text"] for b in s.breakpoints] == ["break 43", "watch R2"]
    s.delete(1)
    assert [b["number"] for b in s.breakpoints] == [2]
    with pytest.raises(toysim.ToyError) as caught:
        s.delete(7)
    assert str(caught.value) == "error: no breakpoint 7"
    with pytest.raises(toysim.ToyError) as caught:
        s.break_at("nowhere")
    assert str(caught.value).startswith("error: ")


def state(s):
    return s.position, s.cycle, s.registers, {k: np.asarray(v).tolist() for k, v in s.tiles.items()}, s.counters, s.where()


@pytest.mark.parametrize("path,params,values", [
    ("programs/p5_online_softmax.toy", {"n": 8}, "symbolic"),
    ("programs/p5_online_softmax.toy", {"n": 8}, "numeric"),
    ("programs/attention/fa2.toy", {"n": 16, "d": 4, "Br": 4, "Bc": 8}, "auto"),
])
def test_back_and_forth_is_a_fresh_run(path, params, values):
    p = toysim.load(path, **params)
    s = toysim.Session(p, values=values)
    s.goto(40)
    s.back(7)
    s.step(3)
    s.goto(90)
    s.goto(12)
    s.step(24)
    s.back(10)
    assert s.position == 26
    fresh = toysim.Session(p, values=values)
    fresh.step(26)
    assert state(s) == state(fresh)
    if values == "symbolic":  # the registers as the trace names them at step 26
        assert s.registers == p.trace()[25]["registers"]
    elif p.arrays and "tile" in p.text:
        assert s.tiles and all(np.isfinite(t).all() for t in s.tiles.values())
    else:
        assert s.registers and all(isinstance(v, float) for v in s.registers.values())
    # To the end: the counters of a whole run.
    end = s.goto(10**9)
    assert end.reason == "end" and s.end == s.position
    assert s.counters == {k: v for k, v in p.run().counters.items() if k in s.counters}
    assert s.counters["cycles"] == p.run().counters["cycles"]


def test_tiles_are_numbers_and_a_fault_is_a_stop():
    s = toysim.Session(toysim.load("programs/attention/fa2.toy", n=16, d=4, Br=4, Bc=8))
    assert s.values == "numeric"
    s.step(5)
    assert s.tiles and all(isinstance(t, np.ndarray) and t.ndim == 2 for t in s.tiles.values())
    f = toysim.Session(toysim.load("tests/bad/index_out_of_bounds_1d.toy"))
    stop = f.continue_()
    assert stop.reason == "fault" and f.fault.startswith("tests/bad/index_out_of_bounds_1d.toy:8:10: error: x[4] is out of bounds")
    assert stop.text.endswith("^\n")


def test_workers_prints_what_info_devices_prints():
    path = "programs/devices/ring_attention.toy"
    expected = cli_step(path, ["step 40", "info devices"])
    s = toysim.Session(toysim.load(path))
    s.step(40)
    assert s.workers() == expected[1]
    assert s.workers().startswith("device  clock  next line  state\n")
