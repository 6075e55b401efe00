"""Shared by the Python module's tests: the built `toysim` executable (TOYSIM_EXE, set by ctest,
python/CMakeLists.txt) whose output every test compares the module with, run from the
repository's root as the module is."""

import json
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True, scope="session")
def at_repository_root():
    """Programs are named relative to the root, as in the README, so both sides print the same paths."""
    os.chdir(ROOT)


def toysim_exe():
    exe = os.environ.get("TOYSIM_EXE")
    if not exe:
        pytest.fail("TOYSIM_EXE is not set: run these tests with ctest (-R python), or set it to a built toysim")
    return exe


def cli(*args, input=None):
    """`toysim ARGS...`: its CompletedProcess (text). Under the sanitizers this python has their
    runtime preloaded for the module (python/CMakeLists.txt); the executable links its own."""
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    return subprocess.run([toysim_exe(), *map(str, args)], capture_output=True, text=True, input=input, cwd=ROOT, timeout=600, env=env)


def cli_json(*args, codes=(0,)):
    """`toysim ARGS...`'s standard output as JSON, after checking its exit code is one of `codes`."""
    done = cli(*args)
    assert done.returncode in codes, done.stderr
    return json.loads(done.stdout)


def sets(**params):
    """--set NAME=VALUE for each parameter."""
    out = []
    for name, value in params.items():
        out += ["--set", f"{name}={value}"]
    return out
