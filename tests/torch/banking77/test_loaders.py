"""Notebook 05's `make_loaders` evaluates on the training buckets: only a test query longer than every bucket is
padded to ``max_length``, in the one batch that holds it (issue 49: evaluation used to pad its last batches to
``max_length`` always, so the largest bucket was never used to evaluate). On the host, no XLA: the collator records
every batch shape, and each shape is one graph on XLA."""
import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from course_support.train_config import TrainConfig  # noqa: E402

from tpu_helpers.banking77 import dataset  # noqa: E402
from tpu_helpers.banking77.lesson_cells import make_loaders  # noqa: E402
from tpu_helpers.banking77.run_log import CountingCollate  # noqa: E402

BOUNDS, MAX_LENGTH, BATCH = (16, 32, 48), 64, 8


def rows(tok, lengths, rng):
    import datasets

    ids = [[tok.cls_token_id, *rng.integers(5, len(tok), n - 2).tolist(), tok.sep_token_id] for n in lengths]
    return datasets.Dataset.from_dict({"input_ids": ids, "token_type_ids": [[0] * len(i) for i in ids],
                                       "attention_mask": [[1] * len(i) for i in ids], "labels": [0] * len(ids)})


def eval_shapes(test_lengths, seed=0):
    rng = np.random.default_rng(seed)
    tok = dataset.load_tokenizer("tiny", ["card payment top up transfer"] * 8, vocab_size=120)
    train = rows(tok, rng.integers(4, 49, 200), rng)  # every training query fits the largest bucket
    config = TrainConfig(batch_size=BATCH, eval_batch_size=2 * BATCH, padding="buckets", boundaries=BOUNDS,
                         max_length=MAX_LENGTH)
    _, eval_dl = make_loaders(train, rows(tok, test_lengths, rng), config, tok)
    eval_dl.collate_fn = counted = CountingCollate(eval_dl.collate_fn)  # as RunLog counts each batch's shape
    for _ in eval_dl:
        pass
    return counted.stats()["shapes"], eval_dl


def test_evaluation_pads_to_the_training_buckets_only():
    lengths = np.random.default_rng(1).integers(4, 49, 100).tolist()  # no test query longer than 48
    shapes, loaders = eval_shapes(lengths)
    assert {int(s.split("x")[1]) for s in shapes} == set(BOUNDS), shapes  # the 48 bucket evaluates too
    assert loaders.batch_sampler.boundaries == BOUNDS


def test_only_the_batch_with_a_query_longer_than_every_bucket_pads_to_max_length_and_meets_all_four_lengths():
    lengths = np.random.default_rng(2).integers(4, 49, 100).tolist() + [60]  # one test query longer than 48
    shapes, loaders = eval_shapes(lengths)
    assert {int(s.split("x")[1]) for s in shapes} == {*BOUNDS, MAX_LENGTH}, shapes  # all four lengths met
    assert shapes[f"{2 * BATCH}x{MAX_LENGTH}"] == 1, shapes  # one batch padded to max_length: one graph more
    assert len(shapes) == len(BOUNDS) + 1  # notebook 05 counts it: 1 + 3 + (3 + 1) graphs on one device
