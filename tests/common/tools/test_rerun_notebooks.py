"""A live lesson re-runs things: running a notebook from the top a second time in the same kernel must work.

Each notebook below is executed twice, top to bottom, in ONE kernel (as when an instructor presses "Run all"
again): idempotent setup, no "already initialised" crashes, no duplicate state. The install cell is skipped
as under nbval. The notebooks chosen hold the process-wide state a re-run can trip over: runtime checks and a
child PyTorch/XLA process (00), simulated CPU replicas and the TPU connection (03), a GCS emulator, local hosts
and their ports (08), simulated JAX devices and JAX's compile events (09), and the compile counts that
the compile cache changes on a second run (02, 05, 06, 07: each such cell, tagged ``compile-count``, asserts what it
compiled new or found in the cache, or a bound that a cached graph keeps).
"""
import os

import nbformat
import pytest
from course_testing import ROOT
from nbclient import NotebookClient

# parameters set for both runs (appended to the parameters cell, as papermill does): what the rerun needs, no more
PARAMETERS = {"05_banking77_accelerate.ipynb": "COMPARE = False  # one padding: the second one reruns the same cells"}
RERUN = ["00_is_my_runtime_ready.ipynb", "02_xla_rules_pytorch_xla.ipynb", "03_tpu_access_tensorflow.ipynb",
         "06_pytorch_xla_under_the_hood.ipynb", "05_banking77_accelerate.ipynb",
         "07_trainers_lightning_hf.ipynb", "08_pod_slice_multi_host.ipynb", "09_banking77_jax_flax.ipynb",
         "10_llm_lora_fsdp.ipynb"]


@pytest.mark.parametrize("name", RERUN)
def test_run_all_twice_in_one_kernel(name, monkeypatch):
    monkeypatch.setenv("TPU_COURSE_PROFILE", os.environ.get("TPU_COURSE_PROFILE", "ci"))
    monkeypatch.setenv("TPU_COURSE_SOLUTIONS", "1")
    monkeypatch.delenv("TPU_COURSE_FIGURES", raising=False)
    for name_ in ("USE_TF", "USE_TORCH", "USE_TORCH_XLA"):  # this framework-free process's settings, not a kernel's
        monkeypatch.delenv(name_, raising=False)
    path = ROOT / "notebooks" / name
    nb = nbformat.read(path, as_version=4)
    if name in PARAMETERS:
        cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
        cell.source += "\n" + PARAMETERS[name] + "\n"
    # the notebook's own kernel (./course registers tpu-course-tf / -torch, each with its environment's python)
    from jupyter_client.kernelspec import KernelSpecManager

    kernel = nb.metadata.kernelspec.name
    kernel = kernel if kernel in KernelSpecManager().find_kernel_specs() else "python3"
    client = NotebookClient(nb, timeout=900, kernel_name=kernel,
                            resources={"metadata": {"path": str(path.parent)}})
    with client.setup_kernel():
        for run in (1, 2):
            for index, cell in enumerate(nb.cells):
                if cell.cell_type != "code" or "nbval-skip" in cell.metadata.get("tags", []):
                    continue
                client.execute_cell(cell, index)  # raises CellExecutionError, with the cell's traceback


def test_every_cell_that_asserts_compile_counts_is_rerun_here():
    """A cell that asserts torch_xla's compilation counts is tagged `compile-count` and its notebook is in RERUN."""
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            counts = cell.cell_type == "code" and "assert" in cell.source and (
                ".compilations" in cell.source or "UncachedCompile" in cell.source)
            if counts and nbformat.read(path, as_version=4).metadata["tpu_course"]["framework"] == "torch":
                assert "compile-count" in cell.metadata.get("tags", []) or path.name not in RERUN, path.name
                if "compile-count" in cell.metadata.get("tags", []):
                    assert path.name in RERUN, f"{path.name} has compile-count cells: run it twice in RERUN"
