"""XLA vs eager on the CPU: one BERT training step (forward, backward, AdamW), PyTorch eager vs PyTorch/XLA:CPU.

Every candidate runs in its own process (`benchmarks.harness.run_isolated`), alternating over rounds:
* ``eager (plain process)``: torch only (``USE_TORCH_XLA=0``: accelerate, which transformers' models import,
  would import torch_xla otherwise); the worker checks that torch_xla was never imported;
* ``eager (torch_xla imported)``: the same eager step in a process that started PJRT's CPU client first, as a
  notebook that mixes both does;
* ``XLA:CPU``: the step on ``torch_xla.device()``, waited for (``xm.wait_device_ops()``) so its time is real.
Warm-up steps (XLA's compilations) are excluded and reported apart; each timed step is one value: median and
min–max over all rounds. For XLA, beside each step's time: the host's part before ``torch_xla.sync()`` (Python,
dispatch, building the lazy graph) and torch_xla's own ``ExecuteTime`` and ``LazyTracing`` metrics per step.
"""
from __future__ import annotations

import os
import statistics
import sys
import time

os.environ["USE_TF"] = "0"

from benchmarks.harness import Benchmark, Candidate, cli, load_warning, run_isolated, time_calls  # noqa: E402

MODULE = "benchmarks.bench_xla_vs_eager"
# name -> (BertConfig arguments, batch, sequence length)
MODELS = {
    "small": (dict(vocab_size=2000, hidden_size=128, num_hidden_layers=2, num_attention_heads=2,
                   intermediate_size=256), 16, 64),
    # MiniLM-L6-H384's shape (6 layers, hidden 384, 12 heads, BERT's vocabulary), random init: no download
    "minilm": (dict(vocab_size=30522, hidden_size=384, num_hidden_layers=6, num_attention_heads=12,
                    intermediate_size=1536), 32, 64),
}
TITLES = {"small": "small BERT (2 layers, hidden 128), batch 16 × 64 tokens",
          "minilm": "MiniLM-L6-sized BERT (6 layers, hidden 384, random init), batch 32 × 64 tokens"}
MODES = {"eager_plain": "eager (plain process)", "eager_with_xla": "eager (torch_xla imported)", "xla": "XLA:CPU"}


def worker(spec: dict) -> dict:
    """One candidate: ``{"mode", "model", "repeats", "warmup_steps"}`` -> seconds per timed step and its extras."""
    mode, (cfg_args, batch, seq) = spec["mode"], MODELS[spec["model"]]
    if mode == "eager_plain":
        os.environ["USE_TORCH_XLA"] = "0"  # else accelerate (imported by transformers' models) imports torch_xla
    else:
        os.environ.setdefault("PJRT_DEVICE", "CPU")
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    extra: dict = {}
    load = os.getloadavg()[0]
    if mode == "eager_plain":
        device = torch.device("cpu")
    else:
        import torch_xla
        import torch_xla.core.xla_model as xm

        xla_device = torch_xla.device()  # before any backward: autograd sizes its device queues at the first one
        device = xla_device if mode == "xla" else torch.device("cpu")
        if mode == "eager_with_xla":
            (torch.ones(2, device=xla_device) * 2).cpu()  # the PJRT client and its threads are running

    torch.manual_seed(0)
    cfg = BertConfig(**cfg_args, num_labels=77, max_position_embeddings=max(512, seq))
    model = BertForSequenceClassification(cfg).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    gen = torch.Generator().manual_seed(0)
    x = torch.randint(5, cfg.vocab_size, (batch, seq), generator=gen).to(device)
    y = torch.randint(0, 77, (batch,), generator=gen).to(device)
    traced = []  # seconds before sync(): Python, dispatch and building the lazy graph

    def step():
        t = time.perf_counter()
        opt.zero_grad()
        model(input_ids=x, labels=y).loss.backward()
        opt.step()
        if mode == "xla":
            traced.append(time.perf_counter() - t)
            torch_xla.sync()
            xm.wait_device_ops()  # the device has finished: the time is real

    if mode == "xla":
        from tpu_helpers.xla_torch.counters import XlaCounters, snapshot

        with XlaCounters() as warm:
            extra["warm-up s (compiling)"] = round(sum(time_calls(step, spec["warmup_steps"], warmup_steps=0)), 1)
        extra["compilations (warm-up)"] = warm.compilations
        traced.clear()
        before = snapshot()
    times = time_calls(step, spec["repeats"], warmup_steps=0 if mode == "xla" else spec["warmup_steps"])  # xla: warmed above
    if mode == "xla":
        after, n = snapshot(), len(times)
        extra["compilations (timed)"] = after.counter("UncachedCompile") - before.counter("UncachedCompile")
        extra["to sync s/step"] = round(sum(traced) / n, 4)
        extra["ExecuteTime s/step"] = round((after.metric("ExecuteTime")[1] - before.metric("ExecuteTime")[1]) / n / 1e9, 4)
        extra["LazyTracing s/step"] = round((after.metric("LazyTracing")[1] - before.metric("LazyTracing")[1]) / n / 1e9, 4)
    if mode == "eager_plain" and "torch_xla" in sys.modules:
        raise RuntimeError("the plain eager candidate imported torch_xla (through transformers?): not a plain process")
    extra["torch threads"] = torch.get_num_threads()
    extra["load at start"] = round(load, 2)
    return {"values": times, "extra": extra, "samples_per_step": batch}


def run(quick: bool) -> list[Benchmark]:
    models = ["small"] if quick else ["small", "minilm"]
    rounds = 1 if quick else 2
    out = []
    for model in models:
        repeats = 3 if quick else (8 if model == "small" else 4)
        results: dict[str, dict] = {}
        for r in range(rounds):  # alternate the candidates, so a load change hits all of them alike
            for mode in MODES:
                res = run_isolated(MODULE, {"mode": mode, "model": model, "repeats": repeats,
                                            "warmup_steps": 3 if mode == "xla" else 1})
                print(f"  {model} {mode} round {r + 1}: {res['values']}", file=sys.stderr, flush=True)
                seen = results.setdefault(mode, {"values": [], "extra": res["extra"]})
                seen["values"] += res["values"]
                seen["extra"]["load at start"] = max(seen["extra"]["load at start"], res["extra"]["load at start"])
        batch = MODELS[model][1]
        cands = []
        for mode, res in results.items():
            extra = {"samples/s": round(batch / statistics.median(res["values"]), 1), **res["extra"]}
            cands.append(Candidate(MODES[mode], res["values"], "s/step", higher_is_better=False, extra=extra))
        bench = Benchmark(f"xla_vs_eager_{model}", f"XLA vs eager on the CPU, train step: {TITLES[model]}",
                          cands, baseline=MODES["eager_plain"])
        bench.notes = _notes(bench, rounds)
        out.append(bench)
    return out


def _notes(bench: Benchmark, rounds: int) -> str:
    """What the measurement says, written from the figures (so the text cannot contradict them)."""
    xla, mixed = bench.ratio(MODES["xla"]), bench.ratio(MODES["eager_with_xla"])
    verdict = (f"XLA:CPU ran at {xla:.2f}× eager's speed: slower, so on a CPU XLA proves correctness and compile "
               "behaviour, not speed" if xla < 1 else
               f"XLA:CPU ran at {xla:.2f}× eager's speed on this model and machine")
    return (f"Ratios > 1: faster than eager in a plain process. Each candidate ran in its own process, {rounds} "
            f"round(s) alternating; warm-up steps excluded (XLA's compile time is in its own column). {verdict}. "
            f"Eager in a process that also started torch_xla ran at {mixed:.2f}× the plain process's speed: time "
            "the two in separate processes." + load_warning([c.extra["load at start"] for c in bench.candidates]))


if __name__ == "__main__":
    cli(run, worker)
