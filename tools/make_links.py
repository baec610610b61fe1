"""Regenerate colab_links.md, every notebook's badge and install cells, the Cloud TPU VM recipe (README and
notebook 03), and the lesson packages' lesson_cells.py from the cells tagged ``save`` (./course links).

    ./course links                 # rewrite in place
    ./course links --check         # exit 1 if anything is out of date (what the test checks)
    TPU_COURSE_GITHUB=me/fork ./course links   # point the badges at a fork
"""
from __future__ import annotations

import sys

import nbformat
from lesson_cells import stale_modules
from notebook_conventions import LINKS, README, README_RECIPE, links_markdown, notebook_paths, regenerate, with_recipe


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    paths = notebook_paths()
    for path in paths:
        new = nbformat.writes(regenerate(path)) + "\n"
        if path.read_text(encoding="utf-8") != new:
            stale.append(path.name)
            if not check:
                path.write_text(new, encoding="utf-8")
    text = links_markdown(paths)
    if not LINKS.exists() or LINKS.read_text(encoding="utf-8") != text:
        stale.append(LINKS.name)
        if not check:
            LINKS.write_text(text, encoding="utf-8")
    readme = README.read_text(encoding="utf-8")
    if with_recipe(readme, README_RECIPE) != readme:  # the Cloud TPU VM recipe, one source with notebook 03's
        stale.append(README.name)
        if not check:
            README.write_text(with_recipe(readme, README_RECIPE), encoding="utf-8")
    stale += stale_modules(paths, write=not check)  # one source: cells tagged "save" -> lesson_cells.py
    if check and stale:
        print("out of date (run ./course links):", ", ".join(stale))
        return 1
    print(("up to date" if not stale else "updated: " + ", ".join(stale)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
