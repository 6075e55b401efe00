"""The Python examples of the README and of docs/ (the ```pycon block of docs/python.md), run as
doctests from the repository's root: what the pages show is what the module prints."""
import doctest
import os
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_the_examples_of_the_readme_and_docs_print_what_they_show():
    os.chdir(ROOT)
    attempted = failed = 0
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        result = doctest.testfile(str(page), module_relative=False, optionflags=doctest.ELLIPSIS, verbose=False)
        attempted += result.attempted
        failed += result.failed
    assert attempted >= 10
    assert failed == 0
