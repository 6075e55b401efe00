"""Errors are toysim.ToyError carrying exactly what `toysim` prints on stderr for the same input
(str(error) + "\n"), for malformed programs, bad settings, run-time faults and the step limit."""

import pathlib
import re
import shlex

import pytest

import toysim
from conftest import ROOT, cli


def bad_program_cases():
    """tests/bad/*.toy that `toysim run` rejects with only --set NAME=INTEGER or --max-steps N
    (the ones Python can say too): (file, params, max_steps)."""
    cases = []
    for path in sorted((ROOT / "tests" / "bad").glob("*.toy")):
        head = path.read_text(errors="replace").splitlines()[:5]
        args = next((shlex.split(line.split(":", 1)[1]) for line in head if line.startswith("# args:")), ["run"])
        if args[0] != "run" or path.name == "too_long_to_run.toy":  # Python has no ten-minute refusal: Ctrl-C stops a run
            continue
        params, max_steps, ok = {}, None, True
        rest = args[1:]
        while rest and ok:
            if rest[0] == "--set" and len(rest) > 1 and re.fullmatch(r"\w+=-?\d+", rest[1]):
                name, value = rest[1].split("=")
                params[name] = int(value)
            elif rest[0] == "--max-steps" and len(rest) > 1:
                max_steps = int(rest[1])
            else:
                ok = False
            rest = rest[2:]
        if ok:
            cases.append((path.relative_to(ROOT).as_posix(), params, max_steps))
    return cases


CASES = bad_program_cases()


def cli_error(path, params, max_steps):
    args = ["run", path]
    for name, value in params.items():
        args += ["--set", f"{name}={value}"]
    if max_steps:
        args += ["--max-steps", str(max_steps)]
    done = cli(*args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    return done.stderr


def python_error(load, params, max_steps):
    with pytest.raises(toysim.ToyError) as caught:
        toysim.load(load, **params).run(max_steps=max_steps)
    return str(caught.value) + "\n", caught.value


def test_enough_bad_programs_are_compared():
    assert len(CASES) >= 60


@pytest.mark.parametrize("path,params,max_steps", CASES, ids=[c[0].rsplit("/", 1)[1] for c in CASES])
def test_the_message_is_the_cli_s(path, params, max_steps):
    text, error = python_error(path, params, max_steps)
    assert text == cli_error(path, params, max_steps)
    assert isinstance(error, Exception) and type(error) is toysim.ToyError


FIVE = {
    "parse error": ("tests/bad/unknown_opcode_laod.toy", {}, None,
                    "tests/bad/unknown_opcode_laod.toy:6:1: error: unknown opcode 'LAOD'; did you mean 'LOAD'?\n"
                    "    6 | LAOD x[0], R0\n"
                    "      | ^^^^\n"),
    "operand": ("tests/bad/misspelt_register.toy", {}, None, None),
    "bad setting": ("tests/bad/set_unknown_param.toy", {"m": 3}, None, None),
    "tile shapes": ("tests/bad/tile_matmul_shapes.toy", {}, None, None),
    "out of bounds at run time": ("tests/bad/index_out_of_bounds_1d.toy", {}, None,
                                  "tests/bad/index_out_of_bounds_1d.toy:8:10: error: x[4] is out of bounds: x has 4 elements (index 0..3) (at i = 4)\n"
                                  "    8 |     LOAD x[i], R0\n"
                                  "      |          ^^^^\n"),
    "read before written": ("tests/bad/unwritten_register.toy", {}, None, None),
}


@pytest.mark.parametrize("name", list(FIVE))
def test_five_bad_programs_by_name(name):
    path, params, max_steps, literal = FIVE[name]
    text, _ = python_error(path, params, max_steps)
    assert text == cli_error(path, params, max_steps)
    if literal:
        assert text == literal
    assert re.match(r"tests/bad/\w+\.toy(:\d+:\d+)?: error: ", text)


def test_program_text_is_named_string():
    source = (ROOT / "tests/bad/unknown_opcode_laod.toy").read_text()
    text, _ = python_error(source, {}, None)
    done = cli("run", "-", input=source)
    assert done.returncode == 2
    assert text == done.stderr.replace("<stdin>", "<string>")
    assert text.startswith("<string>:6:1: error: unknown opcode 'LAOD'")


def test_a_fault_carries_the_json_the_cli_prints():
    path = "tests/bad/index_out_of_bounds_1d.toy"
    _, error = python_error(path, {}, None)
    done = cli("run", path, "--format", "json")
    assert done.returncode == 2
    assert error.result.json == __import__("json").loads(done.stdout)
    assert error.result.passed is False and error.result.fault == str(error)


def test_the_step_limit_raises_as_the_cli():
    text, error = python_error("programs/p1_c00.toy", {}, 5)
    assert text == cli_error("programs/p1_c00.toy", {}, 5)
    assert "step limit reached: 5 instructions ran" in text and text.rstrip().endswith("^")
    assert error.result.counters["instructions"] == 5
    with pytest.raises(ValueError):
        toysim.load("programs/p1_c00.toy").run(max_steps=0)


def test_a_missing_file_and_a_bad_exercise():
    done = cli("run", "no/such/file.toy")
    for given in (pathlib.Path("no/such/file.toy"), "no/such/file.toy"):
        with pytest.raises(toysim.ToyError) as caught:
            toysim.load(given)
        assert str(caught.value) + "\n" == done.stderr == "toysim: error: cannot open 'no/such/file.toy': no such file or not readable\n"
    with pytest.raises(toysim.ToyError) as caught:
        toysim.grade("p2_matmul_3re", "programs/p1_c00.toy")
    done = cli("grade", "p2_matmul_3re", "programs/p1_c00.toy")
    assert done.returncode == 2 and str(caught.value) + "\n" == done.stderr
    assert "did you mean 'p2_matmul_3reg'?" in str(caught.value)


def test_a_setting_out_of_range_is_said_as_the_cli_says_it():
    big = 2**70
    done = cli("run", "programs/p5_online_softmax.toy", "--set", f"n={big}")
    assert done.returncode == 2
    with pytest.raises(toysim.ToyError) as caught:
        toysim.load("programs/p5_online_softmax.toy", n=big)
    assert str(caught.value) + "\n" == done.stderr
    with pytest.raises(toysim.ToyError) as caught:
        toysim.load("programs/p5_online_softmax.toy").with_params(n=big)
    assert str(caught.value) + "\n" == done.stderr
    assert toysim.load("programs/p5_online_softmax.toy").with_params(n=6).params["n"] == 6


def test_a_message_that_asks_for_a_change_names_it_as_the_module_spells_it():
    """The command layer's messages name what to change in the front end's words: the CLI's
    flags there, this module's arguments here; the rest of the message is the CLI's."""
    long_run = ("programs/p5_online_softmax.toy", "n=1000000")
    done = cli("view", long_run[0], "--set", long_run[1], "-o", "/dev/null")
    assert done.returncode == 2 and "--set" in done.stderr and "--max-steps" in done.stderr
    with pytest.raises(toysim.ToyError) as caught:
        toysim.load(long_run[0], n=1000000).view()
    assert str(caught.value) + "\n" == done.stderr.replace("--set", "with_params()").replace("--max-steps", "max_steps=")

    done = cli("step", long_run[0], "--set", long_run[1], "--values", "symbolic")
    assert done.returncode == 2 and "use --values numeric" in done.stderr
    with pytest.raises(toysim.ToyError) as caught:
        toysim.load(long_run[0], n=1000000).session(values="symbolic")
    assert str(caught.value) + "\n" == done.stderr.replace("--values numeric", 'values="numeric"')

    done = cli("cost", "programs/p1_c00.toy", "--heads", "4")
    assert done.returncode == 2
    assert done.stderr == ("programs/p1_c00.toy: error: --heads: heads, workers and launches say how the accesses reach a cache; "
                           "give a cache too (--cache h100)\n")
    with pytest.raises(toysim.ToyError) as caught:
        toysim.load("programs/p1_c00.toy").cost(heads=4)
    assert str(caught.value) == ("programs/p1_c00.toy: error: cost(heads=...): heads, workers and launches say how the accesses reach "
                                 "a cache; give a cache too (a `cache h100` line in the program)")
