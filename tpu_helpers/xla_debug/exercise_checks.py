"""Self-checks for notebook 06's exercises (PyTorch/XLA under the hood).

* `check_fast_loop`: the learner's ``collate`` and ``train_step`` run a short training loop under
  `tpu_helpers.xla_debug.diagnose.StepRecorder`; the slow-run detective (`diagnose_slow_run`) must find nothing, every
  batch must keep its tokens, and the weights must move.
* `check_resume`: the learner's ``save_checkpoint`` / ``load_checkpoint`` must write a file that loads on the CPU
  and restore a fresh model *and* optimizer so exactly that one more step after resuming gives the weights of
  the run that never stopped.

Both build their data with their own random generator (and `check_resume` its models under a forked torch RNG),
so running a check does not change what the notebook's other cells draw.
"""
from __future__ import annotations

import os
import tempfile
from typing import Any, Callable

from tpu_helpers.core.exercises import CheckResult, answer_for, call_answer, run_check
from tpu_helpers.xla_debug.diagnose import StepRecorder, diagnose_slow_run

__all__ = ["variable_length_batches", "check_fast_loop", "check_resume"]

answer = answer_for(__package__)  # the notebook's answers, or this package's solutions.py when solutions are on

_MIN_TOKEN = 5  # token ids start here; 0 is padding


def variable_length_batches(n: int, batch_size: int, max_length: int, vocab_size: int, num_labels: int,
                            seed: int = 1206) -> list[tuple[list, Any]]:
    """``n`` raw batches: (a list of 1-D LongTensors of token ids, lengths 4..max_length; a LongTensor of labels).

    The longest sequence of a batch cycles through max_length, max_length - 3, - 6, - 9, so padding each batch to
    its own longest sequence gives 4 shapes.
    """
    import torch

    if max_length < 13:
        raise ValueError(f"max_length must be at least 13 (got {max_length})")
    g = torch.Generator().manual_seed(seed)
    out = []
    for i in range(n):
        longest = max_length - 3 * (i % 4)
        lengths = torch.randint(4, longest + 1, (batch_size,), generator=g)
        lengths[i % batch_size] = longest
        seqs = [torch.randint(_MIN_TOKEN, vocab_size, (int(k),), generator=g) for k in lengths]
        out.append((seqs, torch.randint(0, num_labels, (batch_size,), generator=g)))
    return out


def _check_collated(batch: Any, seqs: list, labels: Any, index: int) -> None:
    import torch

    assert isinstance(batch, dict) and {"input_ids", "attention_mask", "labels"} <= set(batch), (
        "collate must return a dict with 'input_ids', 'attention_mask' and 'labels' (got "
        f"{type(batch).__name__}{' with keys ' + str(sorted(batch)) if isinstance(batch, dict) else ''})")
    ids, mask = batch["input_ids"], batch["attention_mask"]
    assert isinstance(ids, torch.Tensor) and isinstance(mask, torch.Tensor), (
        "input_ids and attention_mask must be tensors")
    ids, mask, got_labels = ids.cpu(), mask.cpu(), torch.as_tensor(batch["labels"]).cpu()
    longest = max(len(s) for s in seqs)
    assert ids.dim() == 2 and ids.shape[0] == len(seqs), (
        f"batch {index}: input_ids has shape {tuple(ids.shape)}; it should be (batch size {len(seqs)}, length)")
    assert ids.shape[1] >= longest, (
        f"batch {index}: input_ids is {ids.shape[1]} tokens long but its longest sequence has {longest}: "
        "truncating loses tokens; pad up to the fixed length instead")
    assert tuple(mask.shape) == tuple(ids.shape), (
        f"batch {index}: attention_mask has shape {tuple(mask.shape)}, input_ids {tuple(ids.shape)}: they must match")
    assert torch.equal(got_labels, labels), f"batch {index}: the labels changed; pass them through unchanged"
    for row, seq in enumerate(seqs):
        n = len(seq)
        assert torch.equal(ids[row, :n], seq) and not ids[row, n:].any(), (
            f"batch {index}, row {row}: input_ids should be its {n} tokens followed by padding (0), "
            f"got {ids[row].tolist()}")
        assert mask[row, :n].all() and not mask[row, n:].any(), (
            f"batch {index}, row {row}: the attention_mask marks {int(mask[row].sum())} positions but the sequence "
            f"has {n} tokens: 1 for each real token, 0 for each padding position")


def _problem_in_words(p, steps: list, max_length: int) -> str:
    """One problem of the detective's report, said for this exercise (with the numbers of this run)."""
    if p.kind == "host_sync":
        reads = sum(s.scalar_reads for s in steps)
        transfers = sum(s.syncs for s in steps)
        in_steps = sum(1 for s in steps if s.scalar_reads or s.syncs)
        return (f"your step still reads values on the host: {reads} scalar read(s) and {transfers} transfer(s) in "
                f"{in_steps} of {len(steps)} steps. Each `.item()`, `float(loss)` or `print(loss)` makes the host "
                "wait for the device. Return the loss tensor and read the losses after the loop (or every N steps)")
    if p.kind == "recompilation":
        shapes = list(dict.fromkeys(s.shapes.get("input_ids") for s in steps))
        compiled = sum(s.compilations for s in steps)
        seconds = sum(s.compile_seconds for s in steps)
        if len(shapes) > 1:
            return (f"your batches still change shape: input_ids took {len(shapes)} shapes "
                    f"({', '.join(map(str, shapes))}), so XLA compiled {compiled} new training graph(s) after the "
                    f"warm-up ({seconds:.1f} s). Pad every batch to max_length={max_length}, not to its own longest "
                    "sequence")
    return f"{p.title}. {p.evidence} Fix: {p.fix}"


def _fresh_model(make_model: Callable[[], Any], seed: int):
    import torch
    import torch_xla

    torch.manual_seed(seed)
    model = make_model().to(torch_xla.device())
    return model, torch.optim.AdamW(model.parameters(), lr=1e-3)


def check_fast_loop(collate: Callable, train_step: Callable, model: Any, optimizer: Any, *, batch_size: int,
                    max_length: int, vocab_size: int, num_labels: int, steps: int = 6, warmup_steps: int = 2) -> CheckResult:
    """Train ``model`` (a transformers classifier on the XLA device, put in train mode) with ``optimizer`` on
    ``warmup_steps + steps`` raw batches of varying lengths: ``batch = collate(seqs, labels, max_length)``, then
    ``loss = train_step(model, optimizer, batch)``. The first ``warmup_steps`` run before the recording starts
    (compiling happens there); the next ``steps`` are recorded and the detective must find nothing in them. (The model trains on: pass the notebook's own model,
    whose training graph is already compiled, to keep the check fast.)"""

    def body() -> str:
        import torch
        import torch_xla  # noqa: F401  (the XLA device the model lives on)

        raw = variable_length_batches(warmup_steps + steps, batch_size, max_length, vocab_size, num_labels)
        batches = []
        for i, (seqs, labels) in enumerate(raw):
            batch = call_answer(collate, seqs, labels, max_length, what="collate(seqs, labels, max_length)")
            _check_collated(batch, seqs, labels, i)
            batches.append(batch)
        model.train()
        first = next(model.parameters())
        before = first.detach().cpu().clone()
        step = "train_step(model, optimizer, batch)"
        for batch in batches[:warmup_steps]:  # compiling happens here, as in any benchmark's warm-up
            call_answer(train_step, model, optimizer, batch, what=step)
        losses = []
        with StepRecorder() as rec:
            for batch in batches[warmup_steps:]:
                rec.step(batch)
                losses.append(call_answer(train_step, model, optimizer, batch, what=step))
        idle = [s.index for s in rec.steps if s.executions == 0]
        assert len(idle) < len(rec.steps), (
            f"none of the {len(rec.steps)} recorded steps ran a graph on the device: the step is only recorded. "
            "End train_step with torch_xla.sync(), or put its body in `with torch_xla.step():`")
        report = diagnose_slow_run(rec, warmup_steps=0)
        problems = report.problems
        if "recompilation" in report:  # compile time then dominates too: the same cause, the same fix
            problems = [p for p in problems if p.kind != "compile_time"]
        if problems:
            found = " ".join(f"{i}) {_problem_in_words(p, rec.steps, max_length)}."
                             for i, p in enumerate(problems, 1))
            raise AssertionError(f"the slow-run detective still finds {len(problems)} problem(s): {found}")
        bad = [type(x).__name__ for x in losses if not isinstance(x, torch.Tensor)]
        assert not bad, (f"train_step returned a {bad[0]}: return the loss tensor (still on the device); the check "
                         "reads all the losses once, after the loop")
        read = torch.stack([x.detach().reshape(()) for x in losses]).cpu()  # one transfer for all the steps
        assert torch.isfinite(read).all(), f"the losses are not finite: {read.tolist()}"
        after = first.detach().cpu()
        assert not torch.equal(before, after), (
            "train_step did not change the weights: compute the loss, then loss.backward(), optimizer.step() and "
            "optimizer.zero_grad() in every step")
        shapes = sorted({tuple(b["input_ids"].shape) for b in batches})
        shown = shapes[0] if len(shapes) == 1 else shapes
        return (f"the detective finds nothing: {report.summary}. Every batch has shape {shown}"
                f"; the losses, read once after the loop: {', '.join(f'{v:.3f}' for v in read.tolist())}")

    return run_check(body)


def _tensors(obj: Any, prefix: str = ""):
    """(name, tensor) for every tensor in a nested dict/list/tuple."""
    import torch

    if isinstance(obj, torch.Tensor):
        yield prefix or "checkpoint", obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _tensors(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            yield from _tensors(v, f"{prefix}[{i}]")


def _weights(model) -> dict:
    return {k: v.detach().cpu() for k, v in model.state_dict().items()}


def check_resume(save_checkpoint: Callable, load_checkpoint: Callable, make_model: Callable[[], Any], *,
                 batch_size: int, seq_len: int, vocab_size: int, num_labels: int) -> CheckResult:
    """Train a fresh ``make_model()`` for 2 AdamW steps on the XLA device, ``save_checkpoint(path, model,
    optimizer, step=2)``, build another fresh model and optimizer, ``step = load_checkpoint(path, model2,
    optimizer2)``; then one more step on both must give the same weights.

    The models train in train mode (the graphs the notebook has compiled already); the XLA random seed is set to
    the same value before the last step of each run, so their dropout masks match and the weights must agree
    exactly. The seed is put back afterwards.
    """

    def body() -> str:
        import torch
        import torch_xla

        device = torch_xla.device()
        g = torch.Generator().manual_seed(1207)
        data = []
        for _ in range(3):
            ids = torch.randint(_MIN_TOKEN, vocab_size, (batch_size, seq_len), generator=g)
            data.append({"input_ids": ids, "attention_mask": torch.ones_like(ids),
                         "labels": torch.randint(0, num_labels, (batch_size,), generator=g)})

        def step(model, optimizer, batch):
            with torch_xla.step():
                loss = model(**{k: v.to(device) for k, v in batch.items()}).loss
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()

        import torch_xla.core.xla_model as xm

        xla_seed = xm.get_rng_state()
        with torch.random.fork_rng(devices=[]), tempfile.TemporaryDirectory(prefix="tpu-course-resume-") as tmp:
            model, optimizer = _fresh_model(make_model, seed=1207)
            model.train()
            for batch in data[:2]:
                step(model, optimizer, batch)
            path = os.path.join(tmp, "checkpoint.pt")
            call_answer(save_checkpoint, path, model, optimizer, 2,
                        what="save_checkpoint(path, model, optimizer, step)")
            assert os.path.exists(path), f"save_checkpoint wrote nothing at the path it was given ({path})"
            try:
                saved = torch.load(path, weights_only=False)  # the check's own file: trusted
            except Exception as e:  # noqa: BLE001 (reported in one line)
                raise AssertionError(f"the file save_checkpoint wrote does not load with torch.load(path): "
                                     f"{type(e).__name__}: {str(e).strip().splitlines()[-1][:200]}") from None
            tensors = list(_tensors(saved))
            assert tensors, "the checkpoint holds no tensor: save model.state_dict() (and the optimizer's)"
            on_xla = [name for name, t in tensors if t.device.type != "cpu"]
            assert not on_xla, (
                f"{len(on_xla)} of the {len(tensors)} tensors in your checkpoint come back on the XLA device "
                f"(e.g. {on_xla[0]} on {dict(tensors)[on_xla[0]].device}): torch.save wrote XLA tensors, and a "
                "machine without torch_xla cannot load them. Use xm.save(state, path): it moves every tensor to "
                "the CPU first, and writes from the master process only.")
            size = os.path.getsize(path)

            fresh, fresh_optimizer = _fresh_model(make_model, seed=1208)
            fresh.train()
            trained = _weights(model)
            if all(torch.equal(trained[k], v) for k, v in _weights(fresh).items()):
                raise RuntimeError("make_model() must build a model with fresh random weights")
            resumed = call_answer(load_checkpoint, path, fresh, fresh_optimizer,
                                  what="load_checkpoint(path, model, optimizer)")
            differ = [k for k, v in _weights(fresh).items() if not torch.equal(trained[k], v)]
            assert not differ, (
                f"after load_checkpoint, {len(differ)} of the model's {len(trained)} weight tensors differ from the "
                f"saved ones (e.g. {differ[0]}): load the saved weights into the model it is given, "
                "model.load_state_dict(...)")
            assert isinstance(resumed, int) and not isinstance(resumed, bool) and resumed == 2, (
                f"load_checkpoint returned {resumed!r}: return the step saved in the checkpoint (2, an int), so the "
                "training loop resumes where it stopped")
            try:
                xm.set_rng_state(1207)  # the same dropout masks in both runs
                step(model, optimizer, data[2])  # the run that never stopped
                xm.set_rng_state(1207)
                step(fresh, fresh_optimizer, data[2])  # the resumed run
            finally:
                xm.set_rng_state(xla_seed)
            after, resumed_after = _weights(model), _weights(fresh)
            gap = max(float((after[k].float() - resumed_after[k].float()).abs().max()) for k in after)
            assert gap == 0.0, (
                f"one more step after resuming gives other weights than the run that never stopped (largest "
                f"difference {gap:.1e}): the optimizer's state was not restored. AdamW keeps two running averages "
                "per weight and a step count; save optimizer.state_dict() next to the model's and restore it with "
                "optimizer.load_state_dict()")
        return (f"the checkpoint ({len(tensors)} tensors, {size / 1e6:.1f} MB) loads on the CPU, load_checkpoint "
                "restored step 2, the weights and AdamW's state: one more step after resuming gives exactly the "
                "weights of the run that never stopped")

    return run_check(body)
