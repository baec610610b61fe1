"""Notebook 10's training step, FSDPv2 through the Hugging Face Trainer, on 1 vs 8 simulated XLA:CPU devices.

Each candidate runs in its own process (`benchmarks.harness.run_isolated`): SPMD and ``CPU_NUM_DEVICES`` are
process-wide. The step is the notebook's own (`FSDPv2Trainer`, `fsdp_v2_arguments`, `with_lora` from its lesson
cells) on its tiny random Llama, global batch 16 rows of 64 tokens. A callback waits for the device at each step's
start (``xm.wait_device_ops``), so each step's time is real; the first 3 steps (compilations) are excluded. Also
reported: the parameter bytes each device holds, from the local shards (`tpu_helpers.llm_lora.steps`). On a CPU the
8 "devices" share the same cores: the figures say what sharding costs in collectives there, not a TPU's speed.
"""
from __future__ import annotations

import os
import statistics
import sys
import time

from benchmarks.harness import Benchmark, Candidate, cli, load_warning, run_isolated  # noqa: E402

MODULE = "benchmarks.bench_llm_lora_fsdp"
ROWS, LENGTH = 16, 64


def worker(spec: dict) -> dict:
    """One candidate: ``{"devices", "repeats", "warmup_steps"}`` -> seconds per timed step and bytes per device."""
    os.environ["PJRT_DEVICE"], os.environ["CPU_NUM_DEVICES"] = "CPU", str(spec["devices"])
    import tempfile

    import torch_xla.core.xla_model as xm
    import torch_xla.runtime as xr

    xr.use_spmd()
    from transformers import TrainerCallback, default_data_collator

    from tpu_helpers.llm_lora.lesson_cells import FSDPv2Trainer, chat_row, fsdp_v2_arguments, with_lora
    from tpu_helpers.llm_lora.sources import tiny_llama
    from tpu_helpers.llm_lora.steps import bytes_per_device

    load = os.getloadavg()[0]
    starts: list[float] = []

    class Clock(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            xm.wait_device_ops()  # the step before has finished on every device
            starts.append(time.perf_counter())

        def on_train_end(self, args, state, control, **kwargs):
            xm.wait_device_ops()
            starts.append(time.perf_counter())

    steps = spec["warmup_steps"] + spec["repeats"]
    model = with_lora(tiny_llama(1000, seed=0, row_length=LENGTH))
    rows = [chat_row(list(range(3, 40)), [100 + i % 50, 101, 2], LENGTH, 0) for i in range(ROWS * steps)]
    with tempfile.TemporaryDirectory(prefix="tpu-course-bench-") as output_dir:  # the Trainer's: it saves nothing there
        args = fsdp_v2_arguments(output_dir, global_batch=ROWS, steps=steps, learning_rate=1e-3,
                                 layer_class="LlamaDecoderLayer")
        args.disable_tqdm = True
        FSDPv2Trainer(model=model, args=args, train_dataset=rows, data_collator=default_data_collator,
                      callbacks=[Clock()]).train()
    times = [b - a for a, b in zip(starts, starts[1:])][spec["warmup_steps"]:]
    held = bytes_per_device(model)
    total = sum(p.numel() * p.element_size() for p in model.parameters())
    return {"values": times, "extra": {"bytes per device (max)": max(held.values()), "parameter bytes": total,
                                       "load at start": round(load, 2)}}


def run(quick: bool) -> Benchmark:
    repeats, rounds = (4, 1) if quick else (10, 2)
    results: dict[int, dict] = {}
    for r in range(rounds):  # alternate the candidates, so a load change hits both alike
        for devices in (1, 8):
            res = run_isolated(MODULE, {"devices": devices, "repeats": repeats, "warmup_steps": 3})
            print(f"  {devices} device(s) round {r + 1}: {res['values']}", file=sys.stderr, flush=True)
            seen = results.setdefault(devices, {"values": [], "extra": res["extra"]})
            seen["values"] += res["values"]
            seen["extra"]["load at start"] = max(seen["extra"]["load at start"], res["extra"]["load at start"])
    cands = [Candidate(f"{d} device{'s' if d > 1 else ''}", res["values"], "s/step", higher_is_better=False,
                       extra={"tokens/s": round(ROWS * LENGTH / statistics.median(res["values"])), **res["extra"]})
             for d, res in results.items()]
    bench = Benchmark("llm_lora_fsdp", f"Notebook 10's FSDPv2 + LoRA step (tiny Llama, {ROWS} rows x {LENGTH} tokens): "
                      "1 vs 8 simulated devices", cands, baseline="1 device")
    one, eight = (c.extra["bytes per device (max)"] for c in cands)
    bench.notes = (f"Ratios > 1: faster than one device. Each candidate ran in its own process, {rounds} round(s) "
                   f"alternating; 3 warm-up steps excluded. 8 simulated devices ran at {bench.ratio(cands[1].name):.2f}x "
                   "one device's speed. On a CPU the 8 devices share the same cores: XLA:CPU runs each device's smaller "
                   "share of the step and the all-gathers and gradient reductions are memory copies, so this ratio says "
                   "nothing about a TPU's. What carries over is the memory: each device held "
                   f"{eight:,} of {one:,} parameter bytes ({one / eight:.1f}x less)."
                   + load_warning([c.extra["load at start"] for c in cands]))
    return bench


if __name__ == "__main__":
    cli(run, worker)
