"""Which optimizer steps of notebook 05's run get a graph of their own because of the learning-rate schedule.

AdamW's decoupled weight decay multiplies every weight by ``1 - lr * weight_decay``, a Python float computed on the
host at every step (torch 2.9, ``torch.optim.adamw``). PyTorch/XLA passes a float to the graph as an input, except
when it is 0 or 1 in the weights' dtype: then it becomes a constant of the graph. Near the end of a linear decay
to 0, ``lr * weight_decay`` drops below 2**-25 and ``1 - lr * weight_decay`` rounds to 1.0 in float32: from that
step on the step's graph has one input fewer, a new graph, compiled once for each batch shape those last steps use
(measured on XLA:CPU, torch_xla 2.9: ``tests/torch/banking77/test_pretrained.py``). Rounded to 1.0, the decay
changes nothing in float32 anyway: the graphs differ, the weights do not.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np


def linear_schedule_lrs(learning_rate: float, total_steps: int, lr_warmup_steps: int) -> np.ndarray:
    """The learning rate of each optimizer step under transformers' ``get_linear_schedule_with_warmup``: linear
    from 0 over `lr_warmup_steps` (its ``num_warmup_steps``: the learning rate's ramp, not the compile warm-up of
    `tpu_helpers.xla_debug.diagnose.diagnose_slow_run`), then linear down to 0 at `total_steps` (step 0 uses the
    first value)."""
    if total_steps < 1 or lr_warmup_steps < 0:
        raise ValueError(f"total_steps={total_steps}, lr_warmup_steps={lr_warmup_steps}: need total >= 1, "
                         "warm-up >= 0")
    step = np.arange(total_steps, dtype=np.float64)
    warm = step / max(1, lr_warmup_steps)
    decay = np.maximum(0.0, (total_steps - step) / max(1, total_steps - lr_warmup_steps))
    return learning_rate * np.where(step < lr_warmup_steps, warm, decay)


def decay_rounds_to_one(lrs: Sequence[float], weight_decay: float, dtype=np.float32) -> np.ndarray:
    """Steps (indices) after the first at which ``1 - lr * weight_decay`` is exactly 1.0 in `dtype` although
    ``lr > 0``: the steps that compile a graph of their own (the first step is its own graph anyway)."""
    lrs = np.asarray(lrs, dtype=np.float64)
    factor = (1.0 - lrs * weight_decay).astype(dtype)
    hits = (factor == dtype(1.0)) & (lrs > 0) & (weight_decay > 0)
    hits[:1] = False
    return np.flatnonzero(hits)


def end_of_decay_shapes(step_shapes: Sequence[str], lrs: Sequence[float], weight_decay: float) -> list[str]:
    """The batch shapes (``"32x16"``) of the steps whose decay factor rounds to 1.0: one extra graph each.
    `step_shapes` is the shape of every optimizer step of the run, in order."""
    if len(step_shapes) != len(lrs):
        raise ValueError(f"{len(step_shapes)} step shapes for {len(lrs)} learning rates: one per step")
    return sorted({step_shapes[i] for i in decay_rounds_to_one(lrs, weight_decay)})
