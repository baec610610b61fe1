"""Fixtures for notebook 07's package: a small BANKING77-style dataset and the notebook's own small LightningModule."""
import pytest


@pytest.fixture(scope="module")
def data():
    pytest.importorskip("torch_xla")
    pytest.importorskip("lightning")
    from tpu_helpers.banking77 import dataset, lesson_cells

    ds = dataset.make_synthetic(4, 2, seed=5)  # 308 training queries of 77 intents
    tok = dataset.train_wordpiece_tokenizer(list(ds["train"]["text"]), vocab_size=400)
    enc = lesson_cells.tokenize(ds, tok, 32).select_columns(["input_ids", "attention_mask", "labels"])
    return tok, enc["train"]


@pytest.fixture(scope="module")
def bag_of_words():
    """Notebook 07's BagOfWords (its cell tagged ``save``, generated into `tpu_helpers.trainers.lesson_cells`): a
    LightningModule whose graphs compile in a fraction of a second."""
    pytest.importorskip("lightning")
    from tpu_helpers.trainers.lesson_cells import BagOfWords

    return BagOfWords
