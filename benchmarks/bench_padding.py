"""Padding strategies on BANKING77-shaped queries: tokens per real token, compilations, train-step time on XLA:CPU.

The queries are `tpu_helpers.shared.banking_queries.banking_queries` (short banking questions in BANKING77's style, with a
long tail), tokenized by a BERT-uncased WordPiece tokenizer trained on them; batch 32, max_length 64. For every
strategy the benchmark builds one epoch of batches the way training would
(`course_support.banking77.epoch_batches`: the seed's ``max_length``, the
tokenizer's ``padding="longest"`` with and without ``pad_to_multiple_of=32``, and the course's length buckets,
`tpu_helpers.banking77.lesson_cells.BucketBatchSampler` with at most 3 boundaries), counts tokens and distinct shapes over the
whole epoch, then trains a small BERT (2 layers, hidden 128) for the first steps of that epoch on XLA:CPU: once to
compile (the compilations are counted), then timed, repeatedly.
"""
from __future__ import annotations

import os

os.environ.setdefault("PJRT_DEVICE", "CPU")
os.environ["USE_TF"] = "0"

from benchmarks.harness import Benchmark, Candidate, cli, time_calls  # noqa: E402

MAX_LENGTH = 64
BATCH = 32


def run(quick: bool) -> Benchmark:
    import torch
    import torch_xla
    import torch_xla.core.xla_model as xm
    from course_support.banking77 import epoch_batches, padded_tensors
    from transformers import BertConfig, BertForSequenceClassification

    from tpu_helpers.banking77 import dataset
    from tpu_helpers.shared.banking_queries import banking_queries
    from tpu_helpers.xla_torch.counters import XlaCounters
    from tpu_helpers.xla_torch.lesson_cells import keep_attention_masks_on_device

    device = torch_xla.device()
    queries = banking_queries(2000 if quick else 6000, seed=0)
    tok = dataset.train_wordpiece_tokenizer(queries, vocab_size=2000)
    ids = [x[:MAX_LENGTH] for x in tok(queries)["input_ids"]]
    lengths = [len(x) for x in ids]
    steps = 6 if quick else 24
    repeats = 2 if quick else 5

    labels_all = torch.randint(0, 77, (len(ids),))
    state: dict = {}

    def fresh_model(k: int):
        # One model per candidate, each with a classifier one label wider than the last: a different program,
        # so no candidate finds graphs another one compiled (XLA's compile cache lives as long as the process).
        keep_attention_masks_on_device()  # no host read of the mask per forward pass (notebook 02)
        torch.manual_seed(0)
        cfg = BertConfig(vocab_size=len(tok), hidden_size=128, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=256, num_labels=77 + k, max_position_embeddings=MAX_LENGTH,
                         attn_implementation="eager")
        state["model"] = BertForSequenceClassification(cfg).to(device)
        state["opt"] = torch.optim.AdamW(state["model"].parameters(), lr=1e-4)

    def tensors(indices, width):
        batch = {**padded_tensors(ids, indices, width), "labels": labels_all[indices]}
        return {k: v.to(device) for k, v in batch.items()}

    def train(batches):
        for b in batches:
            loss = state["model"](**b).loss
            loss.backward()
            state["opt"].step()
            state["opt"].zero_grad()
            torch_xla.sync()
        xm.wait_device_ops()  # the device has really finished: the time is real

    candidates = []
    strategies = [("max_length (the seed)", "max_length"), ("padding='longest'", "longest"),
                  ("pad_to_multiple_of=32", "multiple_of_32"), ("buckets (the course)", "buckets")]
    for k, (name, strategy) in enumerate(strategies):
        fresh_model(k)
        epoch, bounds = epoch_batches(lengths, strategy, batch_size=BATCH, max_length=MAX_LENGTH)
        # the first step compiles AdamW's state creation, whatever the padding: done before the candidate's pass
        train([tensors(list(epoch[0][0]), epoch[0][1])])
        real = sum(lengths[i] for idx, _ in epoch for i in idx)
        computed = sum(len(idx) * width for idx, width in epoch)
        shapes = sorted({width for _, width in epoch})
        first = epoch[:steps]
        batches = [tensors(idx, width) for idx, width in first]
        torch_xla.sync()
        with XlaCounters() as c:
            [warm] = time_calls(lambda: train(batches), 1, warmup_steps=0)  # compiles every shape among the first steps
        times = [seconds / len(batches) for seconds in time_calls(lambda: train(batches), repeats, warmup_steps=0)]
        extra = {"tokens per real token": round(computed / real, 2),
                 "shapes (epoch)": len(shapes),
                 "compiled (first steps)": c.compilations,
                 "first pass s": round(warm, 1)}
        if bounds:
            extra["boundaries"] = "/".join(map(str, bounds))
        candidates.append(Candidate(name, times, "s/step", higher_is_better=False, extra=extra))
    return Benchmark(
        "padding",
        f"Padding strategies: BANKING77-style queries, batch {BATCH}, max_length {MAX_LENGTH}, BERT 2x128 train "
        f"step on XLA:CPU ({steps} steps timed)",
        candidates, baseline="max_length (the seed)",
        notes=("Ratios > 1: faster steps than padding everything to max_length (steady state, graphs compiled). "
               "'shapes (epoch)' is the number of distinct batch shapes in one epoch, each one XLA compilation; "
               "'compiled (first steps)' what the timed steps compiled on their first pass (each candidate trains "
               "its own model, so none reuses another's graphs), and 'first pass s' that pass's time, compiling "
               "included: padding='longest' buys its short steps with a compilation for almost every new batch. "
               "Where an XLA:CPU step's time goes (the host's tracing vs the device's execution) is measured by the "
               "buckets_bert benchmark on a real-sized BERT."))


if __name__ == "__main__":
    cli(run)
