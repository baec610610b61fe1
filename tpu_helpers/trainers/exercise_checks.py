"""Checks of notebook 07's exercises, each training on the XLA device under a forked torch RNG."""
from __future__ import annotations

import tempfile
from typing import Any, Callable

from tpu_helpers.core.exercises import answer_for, call_answer, run_check

answer = answer_for(__package__)  # the notebook's answers, or this package's solutions.py when solutions are on


def check_training_step(training_step: Callable, module_class: type, dataset: Any, collator: Callable, *,
                        vocab_size: int, num_labels: int, accelerator: Any, steps: int = 8, batch_size: int = 16):
    """One epoch of ``steps``: train_loss the epoch's mean loss, weights moved (slips: a host read, on_step logging)."""

    def body() -> str:
        import lightning.pytorch as L
        import torch
        from torch.utils.data import DataLoader

        from tpu_helpers.xla_debug.trainer_callbacks import SlowRunDetective

        outputs = []

        def recorded(self, batch, batch_idx):  # the answer; the check keeps what it returns
            outputs.append(training_step(self, batch, batch_idx))
            return outputs[-1]

        answer_class = type("AnswerModule", (module_class,), {"training_step": recorded})
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(1207)
            module = answer_class(vocab_size, num_labels)
            before = [p.detach().clone() for p in module.parameters()]
            loader = DataLoader(dataset, batch_size=batch_size, shuffle=True, drop_last=True, collate_fn=collator)
            detective = SlowRunDetective()
            trainer = L.Trainer(accelerator=accelerator, devices=1, max_epochs=1, limit_train_batches=steps,
                                callbacks=[detective], logger=False, enable_checkpointing=False,
                                enable_model_summary=False, enable_progress_bar=False)
            call_answer(trainer.fit, module, loader, what="trainer.fit(...) with your training_step")
        reads = sum(s.scalar_reads for s in detective.steps)  # every step, the warm-up too: not one read allowed
        assert not reads, (
            f"your step reads a value on the host: {reads} scalar read(s) in {len(detective.steps)} steps. "
            "`.item()`, `float(loss)` or `print(loss)` make the host wait for the device; pass the tensor "
            "itself to self.log and let Lightning reduce it")
        metrics = trainer.callback_metrics
        key = "train_loss" if "train_loss" in metrics else "train_loss_epoch"
        losses = [o["loss"] if isinstance(o, dict) else o for o in outputs if o is not None]
        moved = any(not torch.equal(a, p.detach().cpu()) for a, p in zip(before, module.parameters()))
        assert key in metrics and len(losses) == steps and moved, (
            f"{len(losses)} of {steps} steps returned a loss, the weights {'' if moved else 'did not '}moved, "
            f"logged: {sorted(metrics) or 'nothing'}. Return the loss (Lightning then calls backward() and the "
            "optimizer) and self.log('train_loss', loss, ...)")
        mean = torch.stack([x.detach().reshape(()) for x in losses]).cpu().mean()  # read once, after training
        logged = torch.as_tensor(metrics[key]).detach().cpu().float()
        assert torch.allclose(logged, mean, rtol=1e-3, atol=1e-4), (
            f"train_loss is {float(logged):.4f} but the epoch's mean loss is {float(mean):.4f}: log it with "
            "on_epoch=True (on_step=False), so Lightning averages it over the epoch on the device")
        report = detective.report(warmup_steps=2)
        return (f"{steps} steps, no host read in any step ({report.summary}); train_loss {float(logged):.4f} "
                "= the epoch's mean loss")

    return run_check(body)


def check_static_trainer_setup(setup: Callable, tokenizer: Any, dataset: Any, *, max_length: int, batch_size: int,
                               num_labels: int, steps: int = 6):
    """``setup(...) -> (args, collator)``: one batch shape, nothing compiled after 2 steps (slips: fused, shapes)."""

    def body() -> str:
        import torch
        from transformers import Trainer

        from tpu_helpers.xla_debug.trainer_callbacks import HFStepDetective
        from tpu_helpers.xla_torch.lesson_cells import keep_attention_masks_on_device, tiny_bert

        with tempfile.TemporaryDirectory(prefix="tpu-course-07-check-") as out:
            got = call_answer(setup, tokenizer, max_length, batch_size, out,
                              what="static_trainer_setup(tokenizer, max_length, batch_size, output_dir)")
            args, collator = got if isinstance(got, tuple) and len(got) == 2 else (None, None)
            assert getattr(args, "per_device_train_batch_size", None) == batch_size and args.device.type == "xla", (
                f"return (TrainingArguments(..., per_device_train_batch_size={batch_size}), collator) on the XLA "
                f"device, got {type(got).__name__}")
            optim = str(getattr(args.optim, "value", args.optim))
            assert "fused" not in optim, (
                f"optim={optim!r}: the fused AdamW has no XLA kernel (the first step fails with '`fused=True` "
                "requires ... supported devices'); pass optim='adamw_torch'")
            args.max_steps, args.save_strategy, args.report_to = steps, "no", []
            with torch.random.fork_rng(devices=[]):
                keep_attention_masks_on_device()  # as make_model: no host read of the padding mask
                model = tiny_bert(vocab_size=len(tokenizer), num_labels=num_labels, seed=1207)  # notebook 02's
                detective = HFStepDetective()
                trainer = Trainer(model=model, args=args, train_dataset=dataset, data_collator=collator,
                                  callbacks=[detective])
                shapes = sorted({tuple(b["input_ids"].shape) for b in trainer.get_train_dataloader()})
                assert len(shapes) == 1, (
                    f"the Trainer's loader gives {len(shapes)} input shapes {shapes[:6]}: each one is a compilation. "
                    + ("Pad every batch to max_length (DataCollatorWithPadding(tokenizer, padding='max_length', "
                       "max_length=max_length))" if len({s[1] for s in shapes}) > 1 else
                       "Drop the last, shorter batch (dataloader_drop_last=True)"))
                call_answer(trainer.train, what="Trainer(...).train() with your arguments")
        per_step = [s.compilations for s in detective.steps]
        late = sum(per_step[2:])
        assert late == 0, f"{late} graph(s) compiled after the first 2 steps (per step: {per_step})"
        return (f"one batch shape {shapes[0]}; {sum(per_step)} graph(s) compiled, all in the first 2 of "
                f"{len(per_step)} steps, on {args.device}")

    return run_check(body)
