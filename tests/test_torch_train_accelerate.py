"""The training function and the in-process launch on PyTorch/XLA's CPU device, with a tiny BERT.

One small training run (module fixture) is shared by the report tests; it goes through the real launcher
(`tpu_helpers.launch.launch` -> `accelerate.notebook_launcher(num_processes=1)`), as notebook 05 does on a CPU.
"""
import os

import pytest

os.environ.setdefault("PJRT_DEVICE", "CPU")
os.environ.setdefault("CPU_NUM_DEVICES", "1")
torch = pytest.importorskip("torch")
pytest.importorskip("torch_xla")
pytest.importorskip("accelerate")

from tpu_helpers import banking77, launch  # noqa: E402
from tpu_helpers.runtime import Runtime  # noqa: E402
from tpu_helpers.train_accelerate import (TrainConfig, TrainingError, TrainReport, training_function,  # noqa: E402
                                          weighted_f1, weighted_f1_numpy)

CPU_PLAN = launch.plan_launch(Runtime("cpu", "local"), env={}, ipython=None)


def reset_accelerate():
    from accelerate.state import AcceleratorState, GradientState

    AcceleratorState._reset_state(reset_partial_state=True)
    GradientState._reset_state()


@pytest.fixture(scope="module")
def tiny():
    data = banking77.load_banking77("synthetic", n_train_per_label=2, n_test_per_label=1, seed=3)
    tok = banking77.load_tokenizer("tiny", data.dataset["train"]["text"], vocab_size=400)
    enc = banking77.tokenize(data.dataset, tok, 16)
    return data, tok, enc


@pytest.fixture(scope="module")
def run(tiny, tmp_path_factory):
    data, tok, enc = tiny
    reset_accelerate()  # other test modules in this process may have left an Accelerator behind
    model = banking77.make_model("tiny", data, vocab_size=len(tok), max_length=16, hidden_size=32)
    path = tmp_path_factory.mktemp("report") / "report.json"
    config = TrainConfig(epochs=2, batch_size=32, eval_batch_size=32, learning_rate=2e-3, progress=False,
                         report_path=str(path))
    report = launch.launch(training_function, (model, enc["train"], enc["test"], config), CPU_PLAN)
    return report, path


def test_in_process_launch_returns_the_report_of_this_process(run):
    report, path = run
    assert isinstance(report, TrainReport)
    assert report.pid == os.getpid()  # notebook_launcher(num_processes=1) ran it here
    assert report.distributed_type == "XLA" and report.device.startswith("xla")
    assert (report.num_processes, report.global_batch_size, report.steps_per_epoch) == (1, 32, 154 // 32)
    assert TrainReport.load(path) == report  # the file a forked launch would leave behind


def test_compilations_stop_after_epoch_one_and_the_step_stays_on_device(run):
    report, _ = run
    first, second = report.epochs
    assert first.train_xla["compilations"] >= 1 and first.eval_xla["compilations"] >= 1
    assert second.compilations_total == first.compilations_total
    assert second.train_xla["compilations"] == 0 and second.eval_xla["compilations"] == 0
    assert second.train_xla["cache_hits"] >= report.steps_per_epoch
    for e in report.epochs:
        assert e.train_xla["fallbacks"] == {}
        assert e.train_xla["scalar_reads"] == 1  # the summed loss, once per epoch
        assert e.train_samples == report.steps_per_epoch * 32 and e.samples_per_second > 0


def test_eval_covers_every_test_row_and_f1_is_sklearns(run, tiny):
    report, _ = run
    n_test = len(tiny[0].dataset["test"])
    assert report.eval_samples == len(report.predictions) == len(report.references) == n_test
    assert report.references == tiny[0].dataset["test"]["label"]  # gathered in order, no duplicates
    for e in report.epochs:
        assert e.f1 == pytest.approx(e.f1_sklearn, abs=1e-12)
        assert 0.0 <= e.f1 <= 1.0 and e.loss == e.loss  # not NaN
    assert "numpy" in report.f1_backend or report.f1_backend == "evaluate"


def test_a_second_in_process_launch_works_and_an_outside_accelerator_is_refused(tiny):
    data, tok, enc = tiny
    assert launch.kernel_problems(CPU_PLAN) == []  # the first launch left no Accelerator behind
    from accelerate import Accelerator

    Accelerator()
    try:
        with pytest.raises(launch.LaunchError, match="Accelerator"):
            launch.launch(training_function, (None, enc["train"], enc["test"], TrainConfig()), CPU_PLAN)
    finally:
        reset_accelerate()
    model = banking77.make_model("tiny", data, vocab_size=len(tok), max_length=16, hidden_size=32)
    again = launch.launch(training_function, (model, enc["train"], enc["test"],
                                              TrainConfig(epochs=1, progress=False)), CPU_PLAN)
    assert again.pid == os.getpid() and len(again.epochs) == 1
    assert again.epochs[0].train_xla["compilations"] == 0  # same shapes, same graphs: all from the cache


def test_too_small_training_set_is_a_clear_error(tiny):
    _, _, enc = tiny
    with pytest.raises(TrainingError, match="smaller than one batch"):
        training_function(None, enc["test"].select(range(10)), enc["test"], TrainConfig(batch_size=32))


def test_numpy_weighted_f1_matches_sklearn():
    np = pytest.importorskip("numpy")
    from sklearn.metrics import f1_score

    rng = np.random.default_rng(0)
    cases = [([0, 1, 2, 2], [0, 1, 1, 2]), ([5, 5, 5], [1, 2, 3]), ([3], [3]), ([0, 0, 1], [1, 1, 1])]
    cases += [(rng.integers(0, 77, 300).tolist(), rng.integers(0, 77, 300).tolist()) for _ in range(5)]
    y = rng.integers(0, 20, 200)
    cases.append((np.where(rng.random(200) < 0.7, y, rng.integers(0, 25, 200)).tolist(), y.tolist()))
    for preds, refs in cases:
        expected = f1_score(refs, preds, average="weighted", zero_division=0)
        assert weighted_f1_numpy(preds, refs) == pytest.approx(expected, abs=1e-12), (preds, refs)
        value, backend = weighted_f1(preds, refs)
        assert value == pytest.approx(expected, abs=1e-12), backend
    with pytest.raises(TrainingError):
        weighted_f1_numpy([1, 2], [1])
