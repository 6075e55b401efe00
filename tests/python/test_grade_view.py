"""toysim.grade against `toysim grade`, and Program.view against `toysim view`."""

import html
import json
import re

import pytest

import toysim
from conftest import cli, cli_json


@pytest.mark.parametrize("exercise,solution,code", [
    ("p2_matmul_3reg", "tests/exercises/p2_matmul_3reg/over_cycles.toy", 1),
    ("programs/exercises/p2_matmul_3reg", "programs/exercises/p2_matmul_3reg/solution.toy", 0),
    ("p2_matmul_3reg", "tests/exercises/p2_matmul_3reg/wrong_result.toy", 1),
    ("p5_online_softmax", "programs/exercises/p5_online_softmax/solution.toy", 0),
    ("programs/exercises/fa2_forward/", "programs/exercises/fa2_forward/solution.toy", 0),
])
def test_grade_is_the_cli_grade(exercise, solution, code):
    expected = cli_json("grade", exercise, solution, "--format", "json", codes=(code,))
    g = toysim.grade(exercise, solution)
    assert g.json == expected
    assert g.gradescope == cli_json("grade", exercise, solution, "--format", "gradescope", codes=(code,))
    assert g.passed is (code == 0)
    assert g.score == expected["score"] and g.max_score == expected["max_score"]
    assert (g.score == g.max_score) is g.passed


def test_a_solution_as_text():
    path = "tests/exercises/p2_matmul_3reg/over_cycles.toy"
    g = toysim.grade("p2_matmul_3reg", open(path).read())
    expected = cli_json("grade", "p2_matmul_3reg", path, "--format", "json", codes=(1,))
    assert g.json["score"] == expected["score"]
    assert json.dumps(g.json).replace("<string>", path) == json.dumps(expected)


def test_view_is_the_page_toysim_view_writes(tmp_path):
    out = tmp_path / "p1.html"
    done = cli("view", "programs/p1_c00.toy", "-o", out)
    assert done.returncode == 0, done.stderr
    v = toysim.load("programs/p1_c00.toy").view()
    assert v.html == out.read_text()
    shown = v._repr_html_()
    m = re.fullmatch(r'<iframe srcdoc="([^"]*)"[^>]*></iframe>', shown)
    assert m and html.unescape(m.group(1)) == v.html
    assert "<script" in v.html and "http://" not in m.group(1).split("srcdoc")[0]
    v.save(tmp_path / "again.html")
    assert (tmp_path / "again.html").read_text() == v.html
