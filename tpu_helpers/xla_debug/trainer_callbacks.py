"""The slow-run detective as trainer callbacks: `SlowRunDetective` (Lightning), `HFStepDetective` (HF Trainer)."""
from __future__ import annotations

from lightning.pytorch.callbacks import Callback
from transformers import TrainerCallback

from tpu_helpers.xla_debug.diagnose import StepRecorder, shape_signature
from tpu_helpers.xla_torch.counters import between, snapshot


class SlowRunDetective(Callback, StepRecorder):
    """A `StepRecorder` over Lightning's training steps; ``epochs``: each epoch's `between` and input_ids shapes."""

    def on_train_start(self, trainer, pl_module) -> None:
        self.__enter__()
        self.epochs, self.epoch_of_step = [], []

    def on_train_epoch_start(self, trainer, pl_module) -> None:
        self._epoch_start, self._shapes = snapshot(), set()

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        self.step(batch)
        self.epoch_of_step.append(len(self.epochs) + 1)
        self._shapes.add(shape_signature(batch).get("input_ids"))

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        self.epochs.append({**between(self._epoch_start, snapshot()), "epoch": len(self.epochs) + 1,
                            "shapes": sorted(self._shapes - {None})})

    def on_train_end(self, trainer, pl_module) -> None:
        self.__exit__()


class HFStepDetective(TrainerCallback, StepRecorder):
    """The detective for the Hugging Face ``Trainer``: one recorded step per optimizer step (``on_step_begin``)."""

    def on_train_begin(self, args, state, control, **kwargs):
        self.__enter__()

    def on_step_begin(self, args, state, control, **kwargs):
        self.step()

    def on_train_end(self, args, state, control, **kwargs):
        self.__exit__()
