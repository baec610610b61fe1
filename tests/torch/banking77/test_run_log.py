"""Notebook 05's training function (its cell tagged ``training-function``, run as the learner gets it) and the
in-process launch on PyTorch/XLA's CPU device, with a tiny BERT.

One small bucketed training run (module fixture) is shared by the report tests; it goes through the real launcher
(`course_support.banking77.run_as_notebook` -> its launch cell -> `accelerate.notebook_launcher(num_processes=1)`), as notebook 05 does on a CPU.
A second, short launch trains with the seed's fixed-length padding on pre-padded data.
"""
import os
from pathlib import Path

import pytest

os.environ.setdefault("CPU_NUM_DEVICES", "1")
torch = pytest.importorskip("torch")
pytest.importorskip("torch_xla")
pytest.importorskip("accelerate")

from course_support.train_config import TrainConfig  # noqa: E402

from tpu_helpers.banking77 import dataset, launch, lesson_cells  # noqa: E402
from tpu_helpers.banking77.lesson_cells import make_loaders, scaled_learning_rate  # noqa: E402
from tpu_helpers.banking77.run_log import TrainReport  # noqa: E402
from tpu_helpers.core.runtime import Runtime  # noqa: E402
from tpu_helpers.shared.boundaries import choose_boundaries  # noqa: E402

CPU_PLAN = launch.plan_launch(Runtime("cpu", "local"), env={}, ipython=None)
from course_support.banking77 import run_as_notebook  # noqa: E402

from tpu_helpers.banking77.lesson_cells import training_function  # noqa: E402  (notebook 05's cell)

NOTEBOOK = Path(__file__).resolve().parents[3] / "notebooks" / "05_banking77_accelerate.ipynb"


def reset_accelerate():
    launch.reset_accelerate_state()


@pytest.fixture(scope="module")
def tiny():
    data = dataset.load_banking77("synthetic", n_train_per_label=2, n_test_per_label=1, seed=3)
    tok = dataset.load_tokenizer("tiny", data.dataset["train"]["text"], vocab_size=400)
    enc = lesson_cells.tokenize(data.dataset, tok, 32)
    bounds = choose_boundaries([len(x) for x in enc["train"]["input_ids"]], 32)
    return data, tok, enc, bounds


@pytest.fixture(scope="module")
def run(tiny, tmp_path_factory):
    data, tok, enc, bounds = tiny
    reset_accelerate()  # other test modules in this process may have left an Accelerator behind
    model = dataset.make_model("tiny", data, vocab_size=len(tok), max_length=32, hidden_size=32)
    path = tmp_path_factory.mktemp("report") / "report.json"
    config = TrainConfig(epochs=2, batch_size=32, eval_batch_size=32, learning_rate=2e-3, progress=False,
                         report_path=str(path), padding="buckets", boundaries=bounds, max_length=32)
    report = run_as_notebook(training_function, (model, enc["train"], enc["test"], config, tok), CPU_PLAN)
    return report, path


def test_in_process_launch_returns_the_report_of_this_process(run):
    report, path = run
    assert isinstance(report, TrainReport)
    assert report.pid == os.getpid()  # notebook_launcher(num_processes=1) ran it here
    assert report.distributed_type == "XLA" and report.device.startswith("xla")
    assert (report.num_processes, report.global_batch_size, report.steps_per_epoch) == (1, 32, 154 // 32)
    assert report.padding == "buckets" and report.boundaries
    again = TrainReport.load(path)  # the file a forked launch would leave behind
    assert again == report and again.compilations == report.compilations


def test_buckets_give_few_shapes_little_padding_and_compilations_only_in_epoch_one(run, tiny):
    report, _ = run
    _, _, enc, bounds = tiny
    first, second = report.epochs
    train_shapes, eval_shapes = report.shapes("train"), report.shapes("eval")
    assert len(bounds) <= 3 and {int(s.split("x")[1]) for s in train_shapes + eval_shapes} <= set(bounds) | {32}
    assert all(s.startswith("32x") for s in train_shapes + eval_shapes)  # the row count never changes
    for e in report.epochs:  # fewer tokens than padding the same rows to 32, and more than their real tokens
        assert e.train_tokens["real_tokens"] < e.train_tokens["computed_tokens"] < 32 * e.train_samples
    assert 1.0 < report.tokens_per_real_token < 1.5
    # one graph per shape plus AdamW's first step; the loss and the evaluation's cut add none
    assert report.compilations == 1 + len(train_shapes) + len(eval_shapes)
    assert report.compilations == first.train_xla["compilations"] + first.eval_xla["compilations"]
    assert second.train_xla["compilations"] == 0 and second.eval_xla["compilations"] == 0
    assert second.train_xla["cache_hits"] >= report.steps_per_epoch
    for e in report.epochs:
        assert e.train_xla["fallbacks"] == {}
        assert e.train_xla["scalar_reads"] == 1  # the summed loss, once per epoch
        assert e.train_samples == report.steps_per_epoch * 32 and e.samples_per_second > 0
        assert e.train_tokens["computed_tokens"] == sum(
            int(s.split("x")[0]) * int(s.split("x")[1]) * n for s, n in e.train_tokens["shapes"].items())


def test_eval_covers_every_test_row_once_in_the_datasets_order_and_f1_is_sklearns(run, tiny):
    report, _ = run
    data = tiny[0]
    n_test = len(data.dataset["test"])  # 77 rows: 3 batches of 32, the last topped up with 19 repeats
    assert report.eval_samples == len(report.predictions) == len(report.references) == n_test
    assert report.references == list(data.dataset["test"]["label"])  # back in dataset order, no repeats
    from sklearn.metrics import f1_score

    assert report.epochs[-1].f1 == pytest.approx(f1_score(report.references, report.predictions, average="weighted",
                                                          zero_division=0), abs=1e-12)
    for e in report.epochs:
        assert 0.0 <= e.f1 <= 1.0 and e.loss == e.loss  # not NaN


def test_gather_for_metrics_keeps_the_repeats_of_a_small_set_on_xla_so_the_loop_counts_rows(tiny,
                                                                                              evaluate_as_notebook_05):
    """One of the two ways gather_for_metrics goes wrong on XLA: on a test set this small the MpDeviceLoader's
    thread has finished (and cleared the end-of-data flag) before the loop gathers the last batch, so its repeats
    survive. (On a large set it cuts real rows instead: tests/torch/banking77/test_evaluation.py.) The notebook's
    evaluation loop gathers with accelerator.gather and cuts the last batch itself."""
    from accelerate import Accelerator
    from torch.utils.data import DataLoader

    from tpu_helpers.banking77.lesson_cells import BucketBatchSampler, BucketCollator, BucketedDataset
    data, tok, enc, bounds = tiny
    reset_accelerate()
    try:
        acc = Accelerator()
        lengths = [len(x) for x in enc["test"]["input_ids"]]
        sampler = BucketBatchSampler(lengths, 32, tuple(sorted(set(bounds) | {32})), shuffle=False)
        dl = acc.prepare(DataLoader(BucketedDataset(enc["test"]), batch_sampler=sampler,
                                    collate_fn=BucketCollator(tok)))
        rows = sum(len(acc.gather_for_metrics(batch["labels"])) for batch in dl)
        assert rows == 96 > 77  # 3 x 32: the 19 repeats of the last batch are still there
        model = acc.prepare(dataset.make_model("tiny", data, vocab_size=len(tok), max_length=32, hidden_size=32))
        preds, refs = evaluate_as_notebook_05(acc, model, dl, len(enc["test"]))
        order = [int(i) for b in sampler.plan(0) for i in b.indices[:b.real_rows]]
        assert len(preds) == 77 and refs.tolist() == [int(enc["test"][i]["labels"]) for i in order]
    finally:
        reset_accelerate()


def test_a_second_in_process_launch_works_with_fixed_length_padding_and_an_outside_accelerator_is_refused(tiny):
    data, tok, _, _ = tiny
    enc16 = lesson_cells.tokenize(data.dataset, tok, 16)  # the seed's way: every batch padded to 16
    assert launch.kernel_problems(CPU_PLAN) == []  # the first launch left no Accelerator behind
    from accelerate import Accelerator

    Accelerator()
    try:
        with pytest.raises(launch.LaunchError, match="Accelerator"):
            run_as_notebook(training_function, (None, enc16["train"], enc16["test"], TrainConfig()), CPU_PLAN)
    finally:
        reset_accelerate()
    model = dataset.make_model("tiny", data, vocab_size=len(tok), max_length=16, hidden_size=32)
    config = TrainConfig(epochs=1, progress=False, eval_batch_size=32, max_length=16)
    again = run_as_notebook(training_function, (model, enc16["train"], enc16["test"], config, tok), CPU_PLAN)
    assert again.pid == os.getpid() and len(again.epochs) == 1 and again.padding == "max_length"
    assert again.shapes("train") == ["32x16"] and again.shapes("eval") == ["13x16", "32x16"]
    assert len(again.predictions) == 77 and again.references == list(data.dataset["test"]["label"])
    assert again.tokens_per_real_token > 1.0


def test_bad_settings_are_clear_errors(tiny):
    _, tok, enc, _ = tiny
    with pytest.raises(ValueError, match="choose 'buckets' or 'max_length'"):
        make_loaders(enc["train"], enc["test"], TrainConfig(padding="longest"), tok)
    with pytest.raises(ValueError, match="needs boundaries up to max_length"):
        make_loaders(enc["train"], enc["test"], TrainConfig(padding="buckets"), tok)


def test_too_small_training_set_is_a_clear_error(tiny):
    _, tok, enc, _ = tiny
    with pytest.raises(ValueError, match="smaller than one batch"):
        make_loaders(enc["test"].select(range(10)), enc["test"], TrainConfig(batch_size=32), tok)


def test_linear_scaling_rule_scales_the_learning_rate_with_the_global_batch():
    assert scaled_learning_rate(3e-4, 256, 32) == pytest.approx(3.75e-5)  # the seed's lr on a v5e-1
    assert scaled_learning_rate(3e-4, 256, 256) == pytest.approx(3e-4)  # a v5e-8 (or the seed's v3-8): unchanged
    assert scaled_learning_rate(2e-3, 32, 64) == pytest.approx(4e-3)


def test_the_notebook_shows_the_training_function_and_the_launcher_call_in_cells_of_their_own():
    import inspect

    import nbformat

    from tpu_helpers.banking77 import lesson_cells

    cells = [c.source for c in nbformat.read(NOTEBOOK, as_version=4).cells if c.cell_type == "code"]
    fn = next(c for c in cells if "def training_function(" in c)
    assert "Accelerator(" in fn and "accelerator.prepare(" in fn and "accelerator.gather(" in fn
    assert "gather_for_metrics(" not in fn  # it loses rows on XLA (tests/torch/banking77/test_evaluation.py)
    assert inspect.getsource(lesson_cells.training_function).rstrip() in fn  # the tests' function is the cell's
    assert len(inspect.getsource(lesson_cells.training_function).splitlines()) <= 45, \
        "the training function stays short enough to read in the notebook"
    launch_cell = next(c for c in cells if "notebook_launcher(training_function" in c)
    assert "torch_xla.launch(" in launch_cell and "debug_launcher(" in launch_cell and launch_cell != fn
    assert inspect.getsource(lesson_cells.launch_training).rstrip() in launch_cell
