#!/usr/bin/env python3
"""Regenerates the output of every ```console block of README.md that starts with
"$ build/toysim ARGS", by running it (tests/test_readme.cpp checks they agree).
Usage: scripts/update-readme.py [path/to/toysim]   (default: build/toysim)"""
import pathlib
import shlex
import subprocess
import sys

root = pathlib.Path(__file__).resolve().parent.parent
toysim = sys.argv[1] if len(sys.argv) > 1 else "build/toysim"
lines = (root / "README.md").read_text().split("\n")
out, i = [], 0
while i < len(lines):
    out.append(lines[i])
    if lines[i] == "```console" and lines[i + 1].startswith("$ build/toysim "):
        command = lines[i + 1]
        args = shlex.split(command[len("$ build/toysim "):])
        result = subprocess.run([toysim, *args], cwd=root, capture_output=True, text=True, check=True)
        out.append(command)
        out.extend(result.stdout.rstrip("\n").split("\n"))
        i += 2
        while lines[i] != "```":
            i += 1
        continue
    i += 1
(root / "README.md").write_text("\n".join(out))
