"""What tests in every folder share: the checkout's root, and for the exercise-check tests a failure that names
the problem and the learner's skeleton. (A plain module, not a conftest: ``from course_testing import ...``.)"""
import contextlib
import importlib.abc
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

FRAMEWORK_MODULES = {"tf": ("tensorflow", "tf_keras"), "torch": ("torch", "torch_xla"), "jax": ("jax", "flax")}


class _FrameworkGuard(importlib.abc.MetaPathFinder):
    """Makes the frameworks a test folder must not load unimportable there. A probe (``importlib.util.find_spec``,
    which transformers runs for every backend) still sees the installed package; importing it raises ImportError."""

    def __init__(self, folder: str, blocked: tuple[str, ...]):
        self.folder, self.blocked = folder, blocked

    def find_spec(self, fullname, path=None, target=None):
        top = fullname.split(".")[0]
        if top not in self.blocked:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                spec.loader = _Refusing(fullname, self.folder, top)
                return spec
        return None


class _Refusing(importlib.abc.Loader):
    def __init__(self, fullname: str, folder: str, top: str):
        self.fullname, self.folder, self.top = fullname, folder, top

    def create_module(self, spec):
        home = next((f"tests/{fw}" for fw, mods in FRAMEWORK_MODULES.items() if self.top in mods), "its framework's folder")
        raise ImportError(f"{self.fullname} cannot be imported by a test in tests/{self.folder} (one framework per "
                          f"process: TensorFlow and torch_xla abort a process that loads both): move the test to {home}")

    def exec_module(self, module):  # pragma: no cover - create_module always raises
        raise ImportError(self.fullname)


def guard_frameworks(folder: str, framework: str | None) -> None:
    """Declare a test folder's framework (None: none at all); importing any other one then fails clearly."""
    blocked = tuple(m for fw, mods in FRAMEWORK_MODULES.items() if fw != framework for m in mods)
    if framework == "tf":
        blocked = ("torch_xla",)  # plain torch is not the clash (transformers may look for it); torch_xla is
    elif framework == "torch":
        blocked = FRAMEWORK_MODULES["tf"]  # (jax has its own environment; the clash is TensorFlow)
    elif framework == "jax":
        blocked = (*FRAMEWORK_MODULES["tf"], *FRAMEWORK_MODULES["torch"])  # the port's test against torch: tests/torch
    loaded = sorted(m for m in blocked if m in sys.modules)
    if loaded:
        raise pytest.UsageError(f"tests/{folder} runs without {', '.join(loaded)}, but it is already loaded: run "
                                "tests/common, tests/tf, tests/torch and tests/jax in separate pytest processes "
                                "(./course test)")
    sys.meta_path.insert(0, _FrameworkGuard(folder, blocked))
    if framework is None:  # transformers, if a test imports it, looks for no framework at all
        os.environ.update({"USE_TF": "0", "USE_TORCH": "0", "USE_TORCH_XLA": "0"})
    else:
        from tpu_helpers.core import frameworks

        frameworks.use_framework(framework)


def failed(result, *phrases):
    """The check failed on an attempted answer and its message names the problem."""
    assert not result.passed and result.attempted, result
    for phrase in phrases:
        assert phrase in result.message, (phrase, result.message)
    return True


def skeleton(*args, **kwargs):
    raise NotImplementedError  # YOUR ANSWER


HOLD_LOCK = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)   # what libtpu does: lockf(fd, F_TLOCK, 0)
print("locked", flush=True)
time.sleep(60)
"""


@contextlib.contextmanager
def held_libtpu_lock(path: Path, *argv: str):
    """Another process holding a lockf lock on `path`, as libtpu holds /tmp/libtpu_lockfile; yields its pid.
    Extra `argv` show in its command line (e.g. "-m ipykernel_launcher", as a notebook kernel's)."""
    import subprocess

    proc = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(path), *argv], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "locked"
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


def run_notebook_alone(notebook: Path, tmp_path: Path, monkeypatch, *, profile: str, parameters: dict) -> dict:
    """Run `notebook` as a learner's lone copy (copied into an empty folder, a kernel of its own, the reference
    answers filled in) at `profile` with papermill `parameters`; return the figures its cells recorded
    (`tpu_helpers.core.summary.record`), by name."""
    import json
    import shutil

    from tpu_helpers.core.summary import FIGURES_ENV

    papermill = pytest.importorskip("papermill")
    monkeypatch.setenv("TPU_COURSE_PROFILE", profile)
    monkeypatch.setenv("TPU_COURSE_SOLUTIONS", "1")
    figures = tmp_path / "figures.jsonl"
    monkeypatch.setenv(FIGURES_ENV, str(figures))
    folder = tmp_path / "alone"
    folder.mkdir()
    copy = shutil.copy2(notebook, folder / notebook.name)
    papermill.execute_notebook(str(copy), str(tmp_path / "executed.ipynb"), parameters=parameters,
                               kernel_name="python3", cwd=str(folder), progress_bar=False, execution_timeout=900)
    return {r["name"]: r["value"] for r in map(json.loads, figures.read_text().splitlines()) if r.get("name")}


def run_json_script(script: Path, *args: str, drop: tuple[str, ...] = (), timeout: float = 600) -> dict:
    """Run ``script`` with this interpreter in a process of its own (without the variables in ``drop``: switches
    global to a process) and return the JSON of its last printed line; a failed run fails with its stderr."""
    import json
    import subprocess

    env = {k: v for k, v in os.environ.items() if k not in drop}
    done = subprocess.run([sys.executable, str(script), *args], env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
