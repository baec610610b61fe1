"""examples/banking77_accelerate.py (notebook 05's cells tagged ``save``) runs without tpu_helpers: MiniLM's real
weights (one layer kept) fine-tuned for one epoch on a tiny CSV folder (one bucket: three graphs), launched in
process on PyTorch/XLA's CPU device."""
import re

from course_support.examples import run_example


def test_help_names_the_size_flags():
    done = run_example("banking77_accelerate", "--help")
    assert done.returncode == 0, done.stderr[-3000:]
    for flag in ("--model", "--data-dir", "--epochs", "--batch-size", "--launcher"):
        assert flag in done.stdout


def test_a_tiny_run_trains_minilm_on_xla_and_prints_f1(banking_csv, minilm):
    done = run_example("banking77_accelerate", "--model", minilm, "--data-dir", str(banking_csv), "--layers", "1",
                       "--max-length", "32", "--max-buckets", "1", "--batch-size", "16", "--epochs", "1",
                       "--learning-rate", "1e-3", env={"PJRT_DEVICE": "CPU"})
    assert done.returncode == 0, done.stderr[-3000:]
    f1 = [float(x) for x in re.findall(r"epoch \d+: weighted F1 ([0-9.]+)", done.stdout)]
    assert len(f1) == 1 and all(0.0 <= x <= 1.0 for x in f1), done.stdout[-2000:]
    assert "308 training and 77 test queries" in done.stdout
