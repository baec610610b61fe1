"""Fixtures for notebook 07's package: a small BANKING77-style dataset and the notebook's small LightningModule."""
import pytest


@pytest.fixture(scope="module")
def data():
    pytest.importorskip("torch_xla")
    pytest.importorskip("lightning")
    from tpu_helpers.banking77 import dataset

    ds = dataset.make_synthetic(4, 2, seed=5)  # 308 training queries of 77 intents
    tok = dataset.train_wordpiece_tokenizer(list(ds["train"]["text"]), vocab_size=400)
    enc = dataset.tokenize(ds, tok, 32, padding="none").select_columns(["input_ids", "attention_mask", "labels"])
    return tok, enc["train"]


@pytest.fixture(scope="module")
def bag_of_words():
    """The notebook's BagOfWords: a LightningModule whose graphs compile in a fraction of a second."""
    import lightning.pytorch as L
    import torch
    import torch.nn.functional as F

    class BagOfWords(L.LightningModule):
        def __init__(self, vocab_size, num_labels, read_loss_every_step=False, log_loss=True):
            super().__init__()
            self.embed = torch.nn.Embedding(vocab_size, 32)
            self.head = torch.nn.Linear(32, num_labels)
            self.read_loss_every_step = read_loss_every_step
            self.log_loss = log_loss

        def training_step(self, batch, batch_idx):
            mask = batch["attention_mask"].unsqueeze(-1).float()
            loss = F.cross_entropy(self.head((self.embed(batch["input_ids"]) * mask).sum(1) / mask.sum(1)),
                                   batch["labels"])
            if self.read_loss_every_step:
                self.log("loss", loss.item())
            elif self.log_loss:
                self.log("loss", loss, on_step=False, on_epoch=True)
            return loss

        def configure_optimizers(self):
            return torch.optim.AdamW(self.parameters(), lr=1e-2)

    return BagOfWords
