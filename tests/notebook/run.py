"""Executes notebooks/flashattention_from_scratch.ipynb headless (nbclient, the python3 kernel of
this interpreter), from the repository's root, and prints what each code cell printed; any cell
that raises (an assertion on the course's figures included) fails the test. Also checks that the
.ipynb is what notebooks/make_notebook.py writes, so the two never drift apart.

    python3 tests/notebook/run.py        (PYTHONPATH: the module; TOYSIM_EXE: the CLI, for the GPU cell)
Exit: 0 ran, 1 a cell failed or the notebook is stale, 77 (skipped) without nbclient or ipykernel.
"""
import pathlib
import subprocess
import sys
import tempfile

root = pathlib.Path(__file__).resolve().parents[2]
notebook_path = root / "notebooks" / "flashattention_from_scratch.ipynb"
try:
    import nbclient
    import nbformat
    import ipykernel  # noqa: F401 (the kernel nbclient starts)
except ImportError as e:
    print(f"skipped: the notebook runs with nbclient and ipykernel (python3-nbclient, python3-ipykernel): {e}")
    sys.exit(77)

with tempfile.TemporaryDirectory() as tmp:
    made = pathlib.Path(tmp) / "made.ipynb"
    subprocess.run([sys.executable, str(root / "notebooks" / "make_notebook.py"), str(made)], check=True)
    if made.read_text(encoding="utf-8") != notebook_path.read_text(encoding="utf-8"):
        print("error: notebooks/flashattention_from_scratch.ipynb is not what notebooks/make_notebook.py writes: run it again")
        sys.exit(1)

nb = nbformat.read(str(notebook_path), as_version=4)
client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(root)}})
try:
    client.execute()
except nbclient.exceptions.CellExecutionError as e:
    print(str(e)[-3000:])
    sys.exit(1)
ran = 0
for cell in nb.cells:
    if cell.cell_type != "code":
        continue
    ran += 1
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            sys.stdout.write(out.get("text", ""))
        elif out.get("output_type") in ("execute_result", "display_data") and "text/plain" in out.get("data", {}):
            print(out["data"]["text/plain"])
print(f"notebook: {ran} code cells ran, every figure as the course states")
