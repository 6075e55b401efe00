"""The README's Python examples (its ```pycon block under "From Python"), run as doctests from the
repository's root: what the README shows is what the module prints."""
import doctest
import os
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_the_readme_examples_print_what_the_readme_shows():
    os.chdir(ROOT)
    result = doctest.testfile(str(ROOT / "README.md"), module_relative=False, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.attempted >= 10
    assert result.failed == 0
