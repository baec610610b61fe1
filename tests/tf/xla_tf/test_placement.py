"""Every XLA call of the TensorFlow lessons, listed, and how each is placed on a TPU runtime (issue 36, item 4).

TensorFlow's TPU build has no XLA backend for the host: a ``jit_compile=True`` call with no device scope fails there
("could not find registered transfer manager for platform Host"). A static scan finds every XLA call in the TF
notebooks (01, 03, 04, 08) and the lesson modules they import; each must be placed in one of these ways:

* ``helper``: a course helper that places itself (`JitFunction` calls, `compiled_ir_stats`, `check_xla`: each
  runs under `tpu_helpers.xla_tf.placement.on_xla_device`, checked below);
* ``scoped``: inside a ``with on_xla_device():`` block of the same function;
* ``keras``: ``model.compile(jit_compile=bool(jit_compile_for(strategy)))``, off on a TPU (Keras runs the step
  through the strategy there);
* ``off-tpu``: a notebook cell that runs it only ``if not rt.is_tpu``;
* ``stops``: notebook 01, which stops on a TPU runtime (``require_host_xla``) before its first XLA call.
"""
from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
TF_NOTEBOOKS = ("01", "03", "04", "08")
TF_PACKAGES = ("xla_tf", "mlm", "tpu_tf", "pod", "shared")
SELF_PLACING = {"jit", "JitFunction", "compiled_ir_stats", "check_xla"}  # counters.jit(...), compiler.check_xla(...)
XLA_CALL = re.compile(r"jit_compile=True|jit_compile=bool\(|\bjit\(|@jit\b|compiled_ir_stats\(|check_xla\(|"
                      r"experimental_get_compiler_ir\(")


def _name(func: ast.expr) -> str:
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _is_xla_call(node: ast.Call) -> str | None:
    """What kind of XLA call this is, or None."""
    name = _name(node.func)
    if name in SELF_PLACING:
        return "helper"
    if name == "experimental_get_compiler_ir":
        return "ir"
    if name == "function" and any(k.arg == "jit_compile" and isinstance(k.value, ast.Constant) and k.value.value
                                  for k in node.keywords):
        return "tf.function"
    return None


def _scoped(stack: list[ast.AST]) -> bool:
    """Is the node under ``with on_xla_device():``, or in a function that has such a block?"""
    for node in stack:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for inner in ast.walk(node):
                if isinstance(inner, ast.With) and any(
                        isinstance(i.context_expr, ast.Call) and _name(i.context_expr.func) == "on_xla_device"
                        for i in inner.items):
                    return True
    return False


def module_sites() -> list[tuple[str, str, str]]:
    """(module:function, call, placement) for every XLA call in the TF lesson packages."""
    sites = []
    for package in TF_PACKAGES:
        for path in sorted((ROOT / "tpu_helpers" / package).glob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))

            def visit(node, stack):
                if isinstance(node, ast.Call):
                    kind = _is_xla_call(node)
                    if kind:
                        where = ".".join(n.name for n in stack if hasattr(n, "name")) or "<module>"
                        if kind == "helper":
                            placement = "helper"
                        elif _scoped(stack):
                            placement = "scoped"
                        elif kind == "ir" and where == "JitFunction.experimental_get_compiler_ir":
                            placement = "helper"  # forwards the IR generator; compiled_ir_stats calls it scoped
                        else:
                            placement = "UNPLACED"
                        sites.append((f"{package}/{path.name}:{where}", _name(node.func), placement))
                for child in ast.iter_child_nodes(node):
                    visit(child, stack + [node] if isinstance(node, (ast.FunctionDef, ast.ClassDef)) else stack)

            visit(tree, [])
    return sites


def notebook_sites() -> list[tuple[str, str, str]]:
    """(notebook cell, line, placement) for every XLA call in the TF notebooks' code cells."""
    sites = []
    for number in TF_NOTEBOOKS:
        path = next((ROOT / "notebooks").glob(f"{number}_*.ipynb"))
        cells = [c for c in json.loads(path.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"]
        setup = next(i for i, c in enumerate(cells) if re.search(r"use_framework\(|\bstart\(", "".join(c["source"])))
        stops = "require_host_xla(" in "".join(cells[setup]["source"])
        for i, cell in enumerate(cells):
            source = "".join(cell["source"])
            if "install" in cell.get("metadata", {}).get("tags", []):
                continue
            for line in source.splitlines():
                code = line.split("#", 1)[0]
                if not XLA_CALL.search(code):
                    continue
                if stops and i > setup:
                    placement = "stops"
                elif "jit_compile=bool(jit_compile_for(" in code:
                    placement = "keras" if "not rt.is_tpu" not in source else "off-tpu"
                elif "not rt.is_tpu" in source and "jit_compile=True" in code:
                    placement = "off-tpu"
                elif re.search(r"@jit\b|\bjit\(", code) and "with on_xla_device()" in source:
                    placement = "helper"  # a JitFunction; the variables it reads built under on_xla_device()
                elif re.search(r"compiled_ir_stats\(|check_xla\(", code):
                    placement = "helper"
                else:
                    placement = "UNPLACED"
                sites.append((f"{path.stem} code cell {i}", line.strip(), placement))
    return sites


def test_every_xla_call_of_the_tf_lessons_runs_on_the_tpu_on_a_tpu_runtime():
    sites = module_sites() + notebook_sites()
    listing = "\n".join(f"  {placement:9s} {where}: {call}" for where, call, placement in sites)
    print(f"{len(sites)} XLA calls in the TensorFlow lessons:\n{listing}")
    unplaced = [s for s in sites if s[2] == "UNPLACED"]
    assert not unplaced, ("XLA calls that would land on a TPU runtime's host (no XLA backend there): place each "
                          "with tpu_helpers.xla_tf.placement.on_xla_device() or strategy.run:\n"
                          + "\n".join(f"  {w}: {c}" for w, c, _ in unplaced))
    # the scan sees the calls this issue names
    assert any("03_" in w and "@jit" in c for w, c, _ in sites), "notebook 03's count_compilations"
    assert any("mlm/exercise_checks.py:check_mask_batch" in w and p == "scoped" for w, _, p in sites)
    assert any("mlm/exercise_checks.py:check_masked_accuracy" in w for w, _, _ in sites)
    assert {p for w, _, p in sites if w.startswith("01_")} == {"stops"}


@pytest.mark.parametrize("helper, attribute", [("counters", "JitFunction.__call__"), ("compiler", "check_xla"),
                                               ("compiler", "compiled_ir_stats")])
def test_the_self_placing_helpers_run_under_on_xla_device(helper, attribute):
    import importlib
    import inspect

    obj = importlib.import_module(f"tpu_helpers.xla_tf.{helper}")
    for part in attribute.split("."):
        obj = getattr(obj, part)
    assert "with on_xla_device():" in inspect.getsource(obj), f"{helper}.{attribute} must place its XLA call"


def test_off_a_tpu_the_xla_device_is_the_host(tf):
    from tpu_helpers.xla_tf.counters import jit
    from tpu_helpers.xla_tf.placement import on_xla_device

    assert not tf.config.list_logical_devices("TPU")  # no TPU connected in this process
    with on_xla_device():
        assert tf.constant(1.0).device.endswith("CPU:0")
    doubled = jit(lambda x: 2 * x)
    assert float(doubled(tf.constant(2.0))) == 4.0 and doubled.compilations == 1
