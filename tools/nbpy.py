"""Edit notebooks as plain text: convert between .ipynb and a "percent" script.

    python tools/nbpy.py export notebooks/01_x.ipynb > /tmp/01.py   # edit the script...
    python tools/nbpy.py import /tmp/01.py notebooks/01_x.ipynb [--framework tf|torch]   # ...and back

Cells are separated by ``# %%`` lines; ``# %% [markdown]`` starts a markdown cell (each line prefixed with
``# ``), and ``# %% tags=["parameters"]`` carries cell tags. The notebook is written clean (no outputs,
stable metadata) by `tools.notebook_conventions`, with the generated badge and install cells in front (the
script may start with placeholders for them; they are replaced). ``--framework`` is needed for a new notebook.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling tools, not the checkout
from notebook_conventions import FRAMEWORKS, normalise, regenerate  # noqa: E402

_HEADER = re.compile(r"^# %%(?: \[(markdown)\])?(?: tags=(\[.*\]))?\s*$")


def export(path: str) -> str:
    nb = nbformat.read(path, as_version=4)
    parts = []
    for cell in nb.cells:
        tags = cell.metadata.get("tags", [])
        head = "# %%" + (" [markdown]" if cell.cell_type == "markdown" else "")
        if tags:
            head += " tags=" + json.dumps(tags)
        body = cell.source
        if cell.cell_type == "markdown":
            body = "\n".join(("# " + line) if line else "#" for line in body.split("\n"))
        parts.append(head + "\n" + body)
    return "\n\n".join(parts) + "\n"


def parse(text: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    current = None
    lines: list[str] = []

    def flush():
        if current is None:
            return
        kind, tags = current
        body = "\n".join(lines).strip("\n")
        if kind == "markdown":
            body = "\n".join(re.sub(r"^# ?", "", line) for line in body.split("\n"))
            cell = nbformat.v4.new_markdown_cell(body)
        else:
            cell = nbformat.v4.new_code_cell(body)
        if tags:
            cell.metadata["tags"] = tags
        nb.cells.append(cell)

    for line in text.split("\n"):
        m = _HEADER.match(line)
        if m:
            flush()
            current = (m.group(1) or "code", json.loads(m.group(2)) if m.group(2) else [])
            lines = []
        elif current is not None:
            lines.append(line)
    flush()
    return nb


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "export":
        sys.stdout.write(export(argv[1]))
        return 0
    framework = None
    if "--framework" in argv:
        i = argv.index("--framework")
        framework = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
        if framework not in FRAMEWORKS:
            raise SystemExit(f"--framework must be one of {FRAMEWORKS}")
    if len(argv) == 3 and argv[0] == "import":
        nb = parse(Path(argv[1]).read_text())
        dst = Path(argv[2])
        if dst.exists():
            nb.metadata.update(nbformat.read(dst, as_version=4).metadata)
        if framework:
            nb.metadata["tpu_course"] = {"framework": framework}
        # placeholders for the generated cells are dropped; regenerate() puts the real ones in front
        if nb.cells and nb.cells[0].cell_type == "markdown" and nb.cells[0].source.strip() in ("badge", ""):
            nb.cells = nb.cells[1:]
        nbformat.write(normalise(nb), dst)
        dst.write_text(nbformat.writes(regenerate(dst)) + "\n", encoding="utf-8")
        print("wrote", dst)
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
