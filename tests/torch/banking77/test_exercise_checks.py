"""Notebook 05's exercise checks pass on the reference answers and fail, naming the problem, on typical wrong
answers. torch / torch_xla / accelerate are imported inside the tests (pytest may also import TensorFlow test
modules); the XLA ones run on PyTorch/XLA's CPU device."""
import os

import pytest

os.environ.setdefault("CPU_NUM_DEVICES", "1")


@pytest.fixture(scope="module")
def data():
    pytest.importorskip("torch_xla")
    pytest.importorskip("accelerate")
    from tpu_helpers.banking77 import dataset, lesson_cells
    from tpu_helpers.shared.boundaries import choose_boundaries

    ds = dataset.make_synthetic(4, 2, seed=5)
    tok = dataset.train_wordpiece_tokenizer(list(ds["train"]["text"]), vocab_size=400)
    enc = lesson_cells.tokenize(ds, tok, 32)
    lengths = dataset.token_lengths(list(ds["train"]["text"]), tok)
    bounds = choose_boundaries(lengths, 32)
    return lengths, tok, enc, bounds


# ----------------------------------------------------------------------------------- exercise 1: collate
def test_collate_passes_on_the_solution(data):
    from tpu_helpers.banking77 import exercise_checks as nb05
    from tpu_helpers.banking77 import solutions as solution

    _, tok, enc, bounds = data
    result = nb05.check_collate(solution.make_collate, enc["train"], tok, bounds)
    assert result.passed, result.message
    assert "one per bucket" in result.message


def test_collate_padding_each_batch_to_its_longest_query_is_named(data):
    from tpu_helpers.banking77 import exercise_checks as nb05

    _, tok, enc, bounds = data

    def make_collate(tokenizer):
        def collate(items):
            return tokenizer.pad([row for row, _ in items], padding="longest", return_tensors="pt")
        return collate

    result = nb05.check_collate(make_collate, enc["train"], tok, bounds)
    assert not result.passed and "padding='longest'" in result.message and "padding='max_length'" in result.message


def test_collate_that_drops_the_labels_is_named(data):
    from tpu_helpers.banking77 import exercise_checks as nb05

    _, tok, enc, bounds = data

    def make_collate(tokenizer):
        def collate(items):
            rows = [{k: v for k, v in row.items() if k != "labels"} for row, _ in items]
            return tokenizer.pad(rows, padding="max_length", max_length=items[0][1], return_tensors="pt")
        return collate

    result = nb05.check_collate(make_collate, enc["train"], tok, bounds)
    assert not result.passed and "no labels" in result.message


# ----------------------------------------------------------------------------------- exercise 2: gather step
def test_gather_step_passes_on_the_solution(data):
    from tpu_helpers.banking77 import exercise_checks as nb05
    from tpu_helpers.banking77 import solutions as solution

    _, tok, enc, bounds = data
    result = nb05.check_gather_step(solution.gather_step, enc["test"], tok, bounds)
    assert result.passed, result.message
    assert f"{len(enc['test'])} predictions for {len(enc['test'])} test rows" in result.message


def test_gather_check_runs_on_the_first_rows_of_a_large_set_with_a_topped_up_last_batch(data):
    from tpu_helpers.banking77 import exercise_checks as nb05
    from tpu_helpers.banking77 import solutions as solution

    _, tok, enc, bounds = data
    assert len(enc["train"]) > 3 * 32 - 5
    result = nb05.check_gather_step(solution.gather_step, enc["train"], tok, bounds, batches=3)
    assert result.passed, result.message
    assert "91 predictions for 91 test rows" in result.message and "repeated rows" in result.message


def test_gather_for_metrics_alone_keeps_the_repeats_on_xla(data):
    from tpu_helpers.banking77 import exercise_checks as nb05

    _, tok, enc, bounds = data

    def gather_step(accelerator, preds, labels, seen, n_rows):
        preds, labels = accelerator.gather_for_metrics((preds, labels))
        return preds.cpu().tolist(), labels.cpu().tolist()

    result = nb05.check_gather_step(gather_step, enc["test"], tok, bounds)
    assert not result.passed and "repeated rows" in result.message and "gather_for_metrics" in result.message
    assert f"for {len(enc['test'])} test rows" in result.message


def test_gather_step_that_cuts_on_the_device_compiles_a_new_graph(data):
    from tpu_helpers.banking77 import exercise_checks as nb05

    _, tok, enc, bounds = data

    def gather_step(accelerator, preds, labels, seen, n_rows):
        preds, labels = accelerator.gather_for_metrics((preds, labels))
        keep = min(len(preds), n_rows - seen)
        return preds[:keep].cpu().tolist(), labels[:keep].cpu().tolist()  # the slice runs on the XLA device

    result = nb05.check_gather_step(gather_step, enc["test"], tok, bounds)
    assert not result.passed and "new graph(s)" in result.message and ".cpu()" in result.message


def test_gather_check_leaves_no_accelerator_behind(data):
    from tpu_helpers.banking77 import exercise_checks as nb05
    from tpu_helpers.banking77 import launch
    from tpu_helpers.core.runtime import Runtime

    _, tok, enc, bounds = data

    def skeleton(accelerator, preds, labels, seen, n_rows):
        raise NotImplementedError

    result = nb05.check_gather_step(skeleton, enc["test"], tok, bounds)
    assert not result.passed and not result.attempted
    assert launch.kernel_problems(launch.plan_launch(Runtime("cpu", "local"), env={}, ipython=None)) == []
