"""XLA vs eager: one training step of a small BERT classifier on the CPU, PyTorch eager vs PyTorch/XLA:CPU.

The XLA step is timed after its graph was compiled (warm-up), so this is the steady-state step time that a
long run sees; the one-off compile time is reported separately.
"""
from __future__ import annotations

import os
import time

os.environ.setdefault("PJRT_DEVICE", "CPU")
os.environ["USE_TF"] = "0"

from benchmarks.harness import Benchmark, Candidate, cli, time_calls  # noqa: E402


def run(quick: bool) -> Benchmark:
    import torch
    import torch_xla
    import torch_xla.core.xla_model as xm
    from transformers import BertConfig, BertForSequenceClassification

    from tpu_helpers.xla_torch.counters import XlaCounters

    torch.manual_seed(0)
    xla_device = torch_xla.device()  # before any backward: autograd sizes its device queues at the first one
    cfg = BertConfig(vocab_size=2000, hidden_size=128, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=256, num_labels=77)
    batch, seq = 16, 64
    repeats = 3 if quick else 10
    ids = torch.randint(5, cfg.vocab_size, (batch, seq))
    labels = torch.randint(0, 77, (batch,))

    def make_step(device):
        model = BertForSequenceClassification(cfg).to(device)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        x, y = ids.to(device), labels.to(device)

        def step():
            opt.zero_grad()
            loss = model(input_ids=x, labels=y).loss
            loss.backward()
            opt.step()
            if device.type == "xla":
                torch_xla.sync()
                xm.wait_device_ops()  # wait for the device, so the time is real
            return loss
        return step

    eager = time_calls(make_step(torch.device("cpu")), repeats, warmup=1)
    xla_step = make_step(xla_device)
    with XlaCounters() as c:
        t = time.perf_counter()
        xla_step()  # first step: trace + compile + execute
        first = time.perf_counter() - t
        xla = time_calls(xla_step, repeats, warmup=1)
    return Benchmark(
        "xla_vs_eager", "XLA vs eager: train step of a small BERT (2 layers, hidden 128), batch 16 × 64 tokens, CPU",
        [Candidate("PyTorch eager (CPU)", eager, "s/step", higher_is_better=False),
         Candidate("PyTorch/XLA (XLA:CPU)", xla, "s/step", higher_is_better=False,
                   extra={"first step (compile) s": round(first, 1), "compilations": c.compilations})],
        baseline="PyTorch eager (CPU)",
        notes="Ratios > 1 mean faster than eager. XLA's advantage is fusion and a fixed graph; on a CPU the "
              "compiler has less to win than on a TPU, where eager execution is not an option at all.")


if __name__ == "__main__":
    cli(run)
