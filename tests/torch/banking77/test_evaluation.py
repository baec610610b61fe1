"""The evaluation on PyTorch/XLA returns exactly one prediction per test row, in order, on a test set of BANKING77's
real size and length profile (3,080 rows; lengths generated here, nothing downloaded).

This is the case that lost rows: with 49 evaluation batches the MpDeviceLoader's background thread reaches the end of
the loader while several batches still wait in its queue, and ``gather_for_metrics`` cut each of them to the
dataset's remainder (2,688 or 2,744 rows instead of 3,080). The labels here are the row numbers (a 3,080-way
classifier), so a lost, repeated or reordered row cannot hide. Three evaluation passes per loader, as three epochs do; the model is big enough that the loop is slower than the
loader thread, which is what fills its queue on a real run.
One replica: several XLA:CPU processes do not fit this 2-core machine; the several-replica plans are covered on
the host by tests/torch/banking77/test_bucket_properties.py.
"""
import os

import pytest

os.environ.setdefault("CPU_NUM_DEVICES", "1")
torch = pytest.importorskip("torch")
pytest.importorskip("torch_xla")
pytest.importorskip("accelerate")

import numpy as np  # noqa: E402
from course_support.train_config import TrainConfig  # noqa: E402

from tpu_helpers.banking77 import dataset, launch  # noqa: E402
from tpu_helpers.banking77.evaluation import check_evaluation_plan  # noqa: E402
from tpu_helpers.banking77.lesson_cells import make_loaders  # noqa: E402
from tpu_helpers.banking77.run_log import evaluation_order  # noqa: E402

N_TEST = 3080  # BANKING77's test split
MAX_LENGTH = 64


def banking77_like_lengths(n: int, seed: int) -> np.ndarray:
    """Token lengths shaped like BANKING77's under a BERT tokenizer: median about 13, p99 about 50, a few cut at 64."""
    rng = np.random.default_rng(seed)
    return np.clip(np.round(rng.lognormal(np.log(13), 0.55, n)), 4, MAX_LENGTH).astype(int)


@pytest.fixture(scope="module")
def data():
    import datasets

    rng = np.random.default_rng(7)
    tok = dataset.load_tokenizer("tiny", ["card payment top up transfer"] * 8, vocab_size=120)
    lengths = banking77_like_lengths(N_TEST, seed=7)

    def rows(ls):
        ids = [[tok.cls_token_id, *rng.integers(5, len(tok), L - 2).tolist(), tok.sep_token_id] for L in ls]
        return datasets.Dataset.from_dict({"input_ids": ids, "token_type_ids": [[0] * len(i) for i in ids],
                                           "attention_mask": [[1] * len(i) for i in ids],
                                           "labels": list(range(len(ls)))})

    return tok, rows(lengths[:64]), rows(lengths)


def reset_accelerate():
    launch.reset_accelerate_state()


@pytest.mark.parametrize("padding", ["buckets", "max_length"])
def test_real_size_evaluation_gives_one_prediction_per_row_in_order(data, padding, evaluate_as_notebook_05):
    from accelerate import Accelerator
    from transformers import BertConfig, BertForSequenceClassification

    from tpu_helpers.xla_torch.lesson_cells import keep_attention_masks_on_device

    keep_attention_masks_on_device()
    tok, train, test = data
    config = TrainConfig(batch_size=32, eval_batch_size=64, padding=padding, boundaries=(16, 32, 64),
                         max_length=MAX_LENGTH)
    reset_accelerate()
    try:
        accelerator = Accelerator()
        _, eval_dl = make_loaders(train, test, config, tok)
        order = evaluation_order(eval_dl)
        want = list(range(N_TEST)) if order is None else order
        assert sorted(want) == list(range(N_TEST))
        assert check_evaluation_plan(eval_dl, N_TEST, 1, order) == -(-N_TEST // 64)  # 49 batches
        model = BertForSequenceClassification(BertConfig(
            vocab_size=len(tok), hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=256,
            max_position_embeddings=MAX_LENGTH, num_labels=N_TEST, attn_implementation="eager"))
        model, eval_dl = accelerator.prepare(model, eval_dl)
        for _ in range(3):
            preds, refs = evaluate_as_notebook_05(accelerator, model, eval_dl, N_TEST)
            assert len(preds) == len(refs) == N_TEST
            assert refs.tolist() == want, "every test row exactly once, in the loader's order"
    finally:
        reset_accelerate()


def test_a_plan_that_would_lose_test_rows_stops_before_training(data):
    from torch.utils.data import DataLoader

    tok, _, test = data
    lossy = DataLoader(range(N_TEST), batch_size=64, drop_last=True)  # drops the 8 rows of the last batch
    with pytest.raises(ValueError, match=r"3072 rows .* 8 test rows missing"):
        check_evaluation_plan(lossy, N_TEST)
    assert check_evaluation_plan(DataLoader(range(N_TEST), batch_size=64), N_TEST) == 49


def test_rows_kept_cuts_only_the_last_batchs_repeats_and_refuses_too_few_rows():
    import torch

    from tpu_helpers.banking77.evaluation import rows_kept

    batches = [torch.tensor([1, 2, 3]), torch.tensor([4, 5, 4])]  # the last batch topped up with a repeat
    assert rows_kept(batches, 5).tolist() == [1, 2, 3, 4, 5]
    assert rows_kept([np.array([7, 8])], 2).tolist() == [7, 8]
    with pytest.raises(ValueError, match="produced 6 rows for 7 test rows"):
        rows_kept(batches, 7)
