"""examples/banking77_lightning_trainer.py (notebook 07's cells tagged ``save``, on notebook 05's script) runs without
tpu_helpers: MiniLM's real weights (one layer kept) fine-tuned by Lightning on a tiny CSV folder, on the CPU."""
import re

from course_support.examples import run_example


def test_help_names_the_size_flags():
    done = run_example("banking77_lightning_trainer", "--help")
    assert done.returncode == 0, done.stderr[-3000:]
    for flag in ("--model", "--data-dir", "--epochs", "--accelerator", "--devices"):
        assert flag in done.stdout


def test_a_tiny_run_trains_minilm_with_lightning_and_prints_f1(banking_csv, minilm):
    done = run_example("banking77_lightning_trainer", "--model", minilm, "--data-dir", str(banking_csv),
                       "--layers", "1", "--max-length", "32", "--max-buckets", "2", "--batch-size", "16",
                       "--epochs", "2", "--learning-rate", "1e-3", "--accelerator", "cpu", "--devices", "1")
    assert done.returncode == 0, done.stderr[-3000:]
    found = re.search(r"weighted F1 ([0-9.]+) on 77 test queries \(1 replica\(s\)", done.stdout)
    assert found and 0.0 <= float(found.group(1)) <= 1.0, done.stdout[-2000:]
