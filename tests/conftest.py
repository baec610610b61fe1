"""Test setup shared by every folder. The folders are the one-framework-per-process rule:

* ``tests/common``: no ML framework at all (TensorFlow, torch, torch_xla and tf-keras cannot be imported there);
* ``tests/tf``: TensorFlow (torch_xla cannot be imported); ``tests/torch``: PyTorch/XLA (TensorFlow cannot).

Each folder's conftest declares its framework with `course_testing.guard_frameworks`; a test that imports the other framework fails
with a message naming the folder it belongs in, instead of aborting the process (TensorFlow and torch_xla cannot
share one). ``./course test`` runs each folder in its own pytest process (tools/run_tests.py).

* The tests import the **installed** ``tpu_helpers`` (``./course`` installs the wheel built from this checkout), never
  the checkout's folder: under ``./course test`` a ``tpu_helpers`` imported from the source tree stops the run.
  ``tests/`` (`course_testing`) and ``tools/`` are put on ``sys.path``, the checkout *after* site-packages for
  ``benchmarks/``.
* Under ``./course test`` (``TPU_COURSE_TEST_RUN=1``) or in CI, ``pytest.importorskip`` of a pinned framework that is
  missing or broken is a **failure**, not a skip: a broken install must not turn into a green run. A person running
  one file by hand without the framework still gets skips.
"""
import importlib.machinery
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(1, str(ROOT / "tools"))
sys.path.append(str(ROOT))  # for `benchmarks` (not installed); after site-packages, so tpu_helpers is the wheel


class _SupportOnly:
    """tests/ is on sys.path for `course_testing` and `course_support` only: its folder tests/torch is no `torch`
    (in the TensorFlow environment, without torch, ``import torch`` or ``find_spec("torch")`` in transformers and
    datasets would otherwise find it as a namespace package and take it for PyTorch)."""

    NAMES = ("course_testing", "course_support")

    def __init__(self, path: str):
        if path != str(ROOT / "tests"):
            raise ImportError(path)
        self.finder = importlib.machinery.FileFinder(
            path, (importlib.machinery.SourceFileLoader, importlib.machinery.SOURCE_SUFFIXES))

    def find_spec(self, name, target=None):
        return self.finder.find_spec(name, target) if name in self.NAMES else None

    def invalidate_caches(self):
        self.finder.invalidate_caches()


sys.path_hooks.insert(0, _SupportOnly)
sys.path_importer_cache.pop(str(ROOT / "tests"), None)

STRICT = bool(os.environ.get("TPU_COURSE_TEST_RUN") or os.environ.get("CI"))


if STRICT:
    _importorskip = pytest.importorskip

    def _import_or_fail(modname, *args, **kwargs):
        try:
            return _importorskip(modname, *args, **kwargs)
        except pytest.skip.Exception as e:
            pytest.fail(f"{modname} cannot be imported in the course environment ({e}); under ./course test a "
                        "missing framework is a failure, not a skip: rebuild the environment (./course setup)",
                        pytrace=False)

    pytest.importorskip = _import_or_fail


def pytest_configure(config):
    config.addinivalue_line("markers", "rehearsal: a rehearsal (./course rehearse), not a unit test (tests/conftest.py)")
    import tpu_helpers

    where = Path(tpu_helpers.__file__).resolve()
    if STRICT and ROOT in where.parents:
        raise pytest.UsageError(f"tpu_helpers was imported from the checkout ({where}), not from the installed "
                                "wheel: run the tests through ./course test (it installs the wheel)")


# The rehearsals: tests that run whole notebooks again (twice in one kernel, at the cpu profile, with a TPU VM's
# variables), several replicas or hosts in processes of their own, or the hosted images. `./course test` leaves them
# out (a contributor's loop in minutes); `./course rehearse` runs only them, and CI runs both (tools/run_tests.py).
# A module path (every test in it) or a test id prefix, each with why it is a rehearsal.
REHEARSALS = {
    "tests/common/tools/test_rerun_notebooks.py": "every notebook run twice in one kernel",
    "tests/tf/mlm/test_notebook_real_text.py": "notebook 04 at the cpu profile on real text (its context claims)",
    "tests/tf/mlm/test_notebook_replicas.py": "notebook 04 on 8 simulated replicas",
    "tests/tf/ready/test_notebook_on_a_tpu_vm.py": "notebook 00 run whole with a v5e-8 TPU VM's variables",
    "tests/tf/xla_tf/test_notebooks_without_records.py": "notebooks 01 and 03 where XLA writes no record",
    "tests/tf/tpu_tf/test_strategy.py::test_real_simulated_replicas_on_this_cpu": "TPUStrategy's replicas on CPUs",
    "tests/torch/banking77/test_replicas.py::test_replicas_train_as_one": "notebook 05's training in several processes",
    "tests/torch/trainers/test_replicas.py::test_forked_replicas": "Lightning's replicas forked on the CPU",
    "tests/torch/banking77/test_schedule_graphs.py": "notebook 05's training on the tpu profile's schedule (3 epochs)",
    "tests/torch/banking77/test_pretrained.py::test_real_pretrained_weights_train_within_notebook_05s_compile_budget":
        "notebook 05's training function on the real MiniLM weights (two minutes)",
    "tests/torch/banking77/test_precision.py::test_bf16_autocast_applies_the_tpu_profiles_small_updates_like_float32":
        "bf16 autocast on the tpu profile's small updates (a minute)",
    "tests/torch/trainers/test_schedule_graphs.py": "Lightning on the tpu profile's schedule (3 epochs)",
    "tests/torch/banking77/test_precision.py::test_bf16_autocast_learns_like_float32":
        "bf16 autocast trains like float32 (a minute)",
    # each example script's tiny run (./course test keeps each one's --help run, which imports it without tpu_helpers;
    # the notebooks run the same cells)
    "tests/tf/examples/test_mlm_from_scratch_tensorflow.py::test_the_script_pretrains_on_your_text_and_fills_in_blanks":
        "notebook 04's script pretrains on a text file, without tpu_helpers",
    "tests/torch/examples/test_banking77_accelerate.py::test_a_tiny_run_trains_minilm_on_xla_and_prints_f1":
        "notebook 05's script trained on the real MiniLM weights, without tpu_helpers",
    "tests/torch/examples/test_banking77_lightning_trainer.py::test_a_tiny_run_trains_minilm_with_lightning_and_prints_f1":
        "notebook 07's script trained on the real MiniLM weights, without tpu_helpers",
    "tests/jax/examples/test_banking77_jax_flax.py::test_tiny_run_trains_minilm_with_one_compilation":
        "notebook 09's script trained on the real MiniLM weights, without tpu_helpers",
    "tests/torch/examples/test_llm_lora_fsdp.py::test_tiny_run_shards_trains_and_saves_the_merged_model":
        "notebook 10's script sharded over 8 CPU devices, without tpu_helpers",
    "tests/hosted/": "the hosted images (Colab TPU/CPU/GPU, Kaggle TPU) rebuilt and their notebooks run",
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        path = Path(str(item.path))
        if ROOT not in path.parents:
            continue
        test_id = "::".join([path.relative_to(ROOT).as_posix(), *item.nodeid.split("::")[1:]])
        if any(test_id.startswith(prefix) for prefix in REHEARSALS):
            item.add_marker(pytest.mark.rehearsal)
