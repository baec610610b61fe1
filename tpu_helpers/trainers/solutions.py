"""Reference answers for notebook 07's exercises (the trainers on a TPU). Try first, then read."""
from __future__ import annotations

import torch.nn.functional as F


def training_step(self, batch, batch_idx):
    """The loss stays a device tensor: Lightning accumulates it on the device and averages it over the epoch."""
    mask = batch["attention_mask"].unsqueeze(-1).float()
    pooled = (self.embed(batch["input_ids"]) * mask).sum(1) / mask.sum(1)
    loss = F.cross_entropy(self.head(pooled), batch["labels"])
    self.log("train_loss", loss, on_step=False, on_epoch=True)  # no .item(): no host read in the step
    return loss


def static_trainer_setup(tokenizer, max_length: int, batch_size: int, output_dir: str):
    """One batch shape on XLA: fixed-length padding, no short last batch, and an optimizer with an XLA kernel."""
    from transformers import DataCollatorWithPadding, TrainingArguments

    args = TrainingArguments(output_dir=output_dir, per_device_train_batch_size=batch_size,
                             dataloader_drop_last=True,  # the last, shorter batch would be a new shape
                             optim="adamw_torch",  # the fused default (torch >= 2.8) has no XLA kernel
                             dataloader_pin_memory=False,  # pinned memory is for CUDA copies (else a warning)
                             report_to="none", save_strategy="no", logging_strategy="no")
    collator = DataCollatorWithPadding(tokenizer, padding="max_length", max_length=max_length)
    return args, collator
