#!/usr/bin/env python3
"""Regenerates the output of every ```console block of README.md and of the pages of docs/ that
runs "$ build/toysim ARGS" (or a printf piped into it), by running it (tests/test_readme.cpp
checks they agree).
Usage: scripts/update-readme.py [path/to/toysim]   (default: build/toysim)"""
import pathlib
import subprocess
import sys

root = pathlib.Path(__file__).resolve().parent.parent
toysim = sys.argv[1] if len(sys.argv) > 1 else "build/toysim"
for page in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
    lines = page.read_text().split("\n")
    out, i = [], 0
    while i < len(lines):
        out.append(lines[i])
        if lines[i] == "```console" and i + 1 < len(lines):
            command = lines[i + 1]
            # The forms tests/test_readme.cpp runs: "$ printf '...' | build/toysim ARGS" feeds a
            # scripted session, and a trailing "  # exits N" is the exit code expected.
            run, stdin_text, code = command, "", 0
            if run.startswith("$ printf '"):
                close = run.index("' | build/toysim ")
                stdin_text = run[len("$ printf '"):close].encode().decode("unicode_escape")
                run = "$ " + run[close + 4:]
            if "  # exits " in run:
                run, exits = run.split("  # exits ")
                code = int(exits)
            if not run.startswith("$ build/toysim "):
                i += 1
                continue
            args = run[len("$ build/toysim "):].split()
            result = subprocess.run([toysim, *args], cwd=root, input=stdin_text, capture_output=True, text=True)
            if result.returncode != code:
                sys.exit(f"{command}: exit code {result.returncode}, expected {code}\n{result.stderr}")
            out.append(command)
            out.extend(result.stdout.rstrip("\n").split("\n"))
            i += 2
            while lines[i] != "```":
                i += 1
            continue
        i += 1
    page.write_text("\n".join(out))
