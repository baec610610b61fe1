"""Checks of notebook 06's exercises: a loop the slow-run detective finds healthy, a checkpoint that resumes exactly."""
from __future__ import annotations

import os
import tempfile
from typing import Any, Callable

from tpu_helpers.core.exercises import CheckResult, answer_for, call_answer, run_check
from tpu_helpers.xla_debug.diagnose import StepRecorder, diagnose_slow_run
from tpu_helpers.xla_debug.lesson_cells import make_batch, train

answer = answer_for(__package__)  # the notebook's answers, or this package's solutions.py when solutions are on


def _variable_length_batches(n: int, batch_size: int, max_length: int, vocab_size: int, num_labels: int):
    """``n`` (token-id sequences from 5 up, labels); a batch's longest cycles through 4 lengths up to max_length."""
    import torch

    g = torch.Generator().manual_seed(1206)
    for i in range(n):
        longest = max_length - 3 * (i % 4)
        lengths = [longest] + torch.randint(4, longest + 1, (batch_size - 1,), generator=g).tolist()
        labels = torch.randint(0, num_labels, (batch_size,), generator=g)
        yield [torch.randint(5, vocab_size, (k,), generator=g) for k in lengths], labels


def check_fast_loop(collate: Callable, train_step: Callable, model: Any, optimizer: Any, *, batch_size: int,
                    max_length: int, vocab_size: int, num_labels: int, steps: int = 6) -> CheckResult:
    """``collate`` keeps every token; after 2 warm-up steps the detective finds nothing (slips: shapes, host reads)."""

    def body() -> str:
        import torch

        batches = []
        for seqs, labels in _variable_length_batches(2 + steps, batch_size, max_length, vocab_size, num_labels):
            batch = call_answer(collate, seqs, labels, max_length, what="collate(seqs, labels, max_length)")
            ids = batch["input_ids"].cpu()
            kept = all(torch.equal(ids[r, :len(s)], s) and not ids[r, len(s):].any() for r, s in enumerate(seqs))
            assert kept and torch.equal(batch["labels"].cpu(), labels), (
                "collate must keep every sequence's tokens, then padding (0), and the labels unchanged: pad up to "
                "max_length, never cut")
            batches.append(batch)
        model.train()
        before = next(model.parameters()).detach().cpu().clone()
        for batch in batches[:2]:  # the warm-up: compiling happens here, as in any benchmark's
            call_answer(train_step, model, optimizer, batch, what="train_step(model, optimizer, batch)")
        losses = []
        with StepRecorder() as rec:
            for batch in batches[2:]:
                rec.step(batch)
                losses.append(call_answer(train_step, model, optimizer, batch, what="train_step"))
        report = diagnose_slow_run(rec, warmup_steps=0)
        shapes = list(dict.fromkeys(s.shapes.get("input_ids") for s in rec.steps))
        assert "recompilation" not in report, (
            f"your batches still change shape: input_ids took {len(shapes)} shapes ({', '.join(map(str, shapes))}), "
            f"so XLA compiled new training graphs after the warm-up. Pad every batch to max_length={max_length}")
        assert "host_sync" not in report, (
            f"your step still reads values on the host: {sum(s.scalar_reads for s in rec.steps)} scalar read(s) in "
            f"{sum(1 for s in rec.steps if s.scalar_reads or s.syncs)} of {len(rec.steps)} steps (`.item()`, "
            "`print(loss)`): return the loss tensor and read the losses after the loop")
        ran = any(s.executions for s in rec.steps)
        assert ran and not report.problems and not torch.equal(before, next(model.parameters()).detach().cpu()), (
            f"the slow-run detective still finds: {report}" if report.problems else
            "no recorded step ran a graph: end train_step with torch_xla.sync(), or put it in `with torch_xla.step():`"
            if not ran else "the weights did not change: loss.backward(), optimizer.step() and optimizer.zero_grad()")
        read = torch.stack([x.detach().reshape(()) for x in losses]).cpu()  # one transfer for all the steps
        return (f"the detective finds nothing: {report.summary}. Every batch has shape {shapes[0]}; the losses, read "
                f"once after the loop: {', '.join(f'{v:.3f}' for v in read.tolist())}")

    return run_check(body)


def _tensors(obj) -> list:
    obj = list(obj.values()) if isinstance(obj, dict) else obj
    if isinstance(obj, (list, tuple)):
        return [t for v in obj for t in _tensors(v)]
    return [obj] if hasattr(obj, "device") else []


def check_resume(save_checkpoint: Callable, load_checkpoint: Callable, make_model: Callable[[], Any], *,
                 batch_size: int, seq_len: int) -> CheckResult:
    """Save after 2 steps, load into a fresh model: one more step gives exactly the same weights; CPU tensors only."""

    def body() -> str:
        import torch
        import torch_xla
        import torch_xla.core.xla_model as xm

        g = torch.Generator().manual_seed(1207)
        data = [make_batch(batch_size, seq_len, g) for _ in range(3)]  # the notebook's batches

        def fresh(seed):
            torch.manual_seed(seed)
            model = make_model().to(torch_xla.device())
            return model, torch.optim.AdamW(model.parameters(), lr=1e-3)

        xla_seed = xm.get_rng_state()
        with torch.random.fork_rng(devices=[]), tempfile.TemporaryDirectory(prefix="tpu-course-resume-") as tmp:
            model, optimizer = fresh(1207)
            train(model, optimizer, data[:2])  # the notebook's loop: its graph is compiled already
            path = os.path.join(tmp, "checkpoint.pt")
            call_answer(save_checkpoint, path, model, optimizer, 2, what="save_checkpoint(path, model, optimizer, step)")
            saved = torch.load(path, weights_only=False)  # the check's own file: trusted
            assert all(t.device.type == "cpu" for t in _tensors(saved)), (
                "your checkpoint holds tensors that come back on the XLA device: torch.save wrote XLA tensors, which "
                "a machine without torch_xla cannot load. Use xm.save(state, path): it moves them to the CPU first.")
            model2, optimizer2 = fresh(1208)
            resumed = call_answer(load_checkpoint, path, model2, optimizer2, what="load_checkpoint(path, model, optimizer)")
            try:
                for m, o in ((model, optimizer), (model2, optimizer2)):  # the run that never stopped, the resumed one
                    xm.set_rng_state(1207)  # the same dropout masks in both
                    train(m, o, data[2:])
            finally:
                xm.set_rng_state(xla_seed)
            a, b = model.state_dict(), model2.state_dict()
            gap = max(float((a[k].cpu().float() - b[k].cpu().float()).abs().max()) for k in a)
            assert resumed == 2 and gap == 0.0, (
                f"load_checkpoint returned {resumed!r}: return the saved step (2)" if resumed != 2 else
                f"one more step after resuming gives other weights than the run that never stopped (up to {gap:.1e}): "
                "the optimizer's state was not restored. Save optimizer.state_dict() with the model's and restore it "
                "with optimizer.load_state_dict()")
        return ("the checkpoint loads on the CPU, load_checkpoint restored step 2, the weights and AdamW's state: one "
                "more step after resuming gives exactly the weights of the run that never stopped")

    return run_check(body)
