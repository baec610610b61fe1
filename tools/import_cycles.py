"""Import cycles between the modules of ``tpu_helpers``, found statically (nothing is imported).

Every ``.py`` file of the package is parsed with `ast`; every ``import`` and ``from ... import`` in it counts,
those inside functions included (an import put inside a function to dodge a cycle still is one). An import
names the deepest package module it reaches: ``from tpu_helpers.mlm import sources`` is an edge to
``tpu_helpers.mlm.sources``, ``from tpu_helpers.mlm.corpus import Corpus`` one to ``tpu_helpers.mlm.corpus``.
A package's ``__init__`` is not counted as imported by its submodules (Python runs it first, before either).

``python tools/import_cycles.py`` prints each cycle and exits 1 when there is one.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Iterator

__all__ = ["PACKAGE", "module_files", "import_graph", "find_cycles"]

PACKAGE = "tpu_helpers"
ROOT = Path(__file__).resolve().parents[1]


def module_files(root: Path = ROOT, package: str = PACKAGE) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` file of `package` under `root` (``pkg/__init__.py`` is
    ``pkg``)."""
    out = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imported_names(tree: ast.AST, module: str, is_package: bool) -> Iterator[str]:
    """Every dotted name an import in `tree` may load (``from a import b`` gives ``a`` and ``a.b``)."""
    here = module.split(".") if is_package else module.split(".")[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(here[:len(here) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names if alias.name != "*")


def import_graph(root: Path = ROOT, package: str = PACKAGE) -> dict[str, set[str]]:
    """Module -> the package modules it imports (the deepest module each import names; itself excluded)."""
    files = module_files(root, package)
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        targets = set()
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for name in _imported_names(tree, module, path.name == "__init__.py"):
            parts = name.split(".")
            while parts and ".".join(parts) not in files:
                parts.pop()
            target = ".".join(parts)
            if target and target != module and not module.startswith(target + "."):
                targets.add(target)
        graph[module] = targets
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted, as cycles to report."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(cycles)


def main() -> int:
    graph = import_graph()
    cycles = find_cycles(graph)
    for cycle in cycles:
        print("import cycle: " + "; ".join(f"{m} -> {', '.join(sorted(graph[m] & set(cycle)))}" for m in cycle))
    print(f"{len(graph)} modules, {len(cycles)} import cycles")
    return 1 if cycles else 0


if __name__ == "__main__":
    sys.exit(main())
