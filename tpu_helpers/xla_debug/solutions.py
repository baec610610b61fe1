"""Reference answers for notebook 06's exercises (PyTorch/XLA under the hood). Try first, then read."""
from __future__ import annotations

import torch
import torch.nn.functional as F


def collate(seqs: list[torch.Tensor], labels: torch.Tensor, max_length: int) -> dict[str, torch.Tensor]:
    """Pad every batch to the same ``max_length``: one input shape, one compiled training graph."""
    input_ids = torch.nn.utils.rnn.pad_sequence(seqs, batch_first=True)  # (batch, longest in this batch)
    input_ids = F.pad(input_ids, (0, max_length - input_ids.shape[1]))  # (batch, max_length), padded with 0
    return {"input_ids": input_ids, "attention_mask": (input_ids != 0).long(), "labels": labels}


def train_step(model, optimizer, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """One step that reads nothing on the host: the loss stays a device tensor, read after the loop."""
    import torch_xla

    device = torch_xla.device()
    with torch_xla.step():  # calls torch_xla.sync() at the end: one graph per step
        out = model(input_ids=batch["input_ids"].to(device), attention_mask=batch["attention_mask"].to(device))
        loss = F.cross_entropy(out.logits, batch["labels"].to(device))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    return loss


def save_checkpoint(path: str, model, optimizer, step: int) -> None:
    """The weights, AdamW's state and the step; ``xm.save`` writes CPU tensors, from the master process only."""
    import torch_xla.core.xla_model as xm

    xm.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step}, path)


def load_checkpoint(path: str, model, optimizer) -> int:
    """Restore the model and the optimizer in place; return the saved step."""
    state = torch.load(path, weights_only=True)  # plain tensors, numbers and lists: safe to load
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])  # moves the state to the parameters' device
    return state["step"]
