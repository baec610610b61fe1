"""Run a lesson's script from examples/ as a learner would, in a process where ``import tpu_helpers`` fails; or load
it as a module, for the tests of a lesson that has no ``lesson_cells.py`` (metadata ``"lesson_module": false``)."""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BLOCKER = "raise ImportError('tpu_helpers is not installed here: an example script runs on public libraries only')\n"


def run_example(name: str, *args: str, timeout: float = 600, env: dict | None = None) -> subprocess.CompletedProcess:
    """``python examples/<name>.py *args`` with this interpreter, the course package hidden; output captured."""
    with tempfile.TemporaryDirectory(prefix="tpu-course-example-") as tmp:
        blocker = Path(tmp) / "blocker" / "tpu_helpers"
        blocker.mkdir(parents=True)
        (blocker / "__init__.py").write_text(BLOCKER)
        child = {k: v for k, v in os.environ.items() if k not in ("PYTHONSAFEPATH", "PYTHONPATH")}
        child.update(env or {})
        child["PYTHONPATH"] = str(blocker.parent)  # before site-packages: the installed wheel cannot be imported
        work = Path(tmp) / "work"
        work.mkdir()
        return subprocess.run([sys.executable, str(EXAMPLES / f"{name}.py"), *args], cwd=work, env=child,
                              capture_output=True, text=True, timeout=timeout)


def load_example(name: str):
    """``examples/<name>.py`` as the module ``name`` (an earlier lesson's script it imports loaded first, by name)."""
    if name in sys.modules:
        return sys.modules[name]
    path = EXAMPLES / f"{name}.py"
    for sibling in re.findall(r"^from (\w+) import", path.read_text(encoding="utf-8"), re.M):
        if (EXAMPLES / f"{sibling}.py").exists():
            load_example(sibling)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
