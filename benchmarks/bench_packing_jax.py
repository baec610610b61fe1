"""Fixed padding, length buckets and packed rows in JAX (notebook 09's cells): tokens computed per real token and
train-step time per real token on XLA:CPU.

The queries are `tpu_helpers.shared.banking_queries.banking_queries` (BANKING77-style, long-tailed), tokenized by a
WordPiece trained on them (notebook 09's ``load_tokenizer("tiny")``). The same small BERT (notebook 09's
``BertClassifier``, 2 layers, hidden 128, random init) takes one jitted AdamW step per batch, on one CPU device:

* **fixed padding**: each query alone in a row of 64 tokens, 32 rows a step (notebook 05's ``max_length``);
* **buckets**: each query alone in a row of its bucket's length (notebook 05's ``choose_boundaries``, at most 3),
  32 rows a step, one compilation per bucket;
* **packed**: queries first-fit packed into rows of 64 tokens, at most 16 a row, 8 rows a step (notebook 09).

Each candidate compiles first (untimed), then its first steps are timed, repeatedly; the figure is seconds per step
divided by the real tokens of the step, so steps of different sizes compare.
"""
from __future__ import annotations

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

from benchmarks.harness import Benchmark, Candidate, cli, time_calls  # noqa: E402

ROW = 64


def run(quick: bool) -> Benchmark:
    import jax
    import numpy as np
    import optax
    from flax import nnx

    from benchmarks.harness import course_support_module
    from tpu_helpers.core.frameworks import use_framework
    from tpu_helpers.shared.banking_queries import banking_queries
    from tpu_helpers.shared.boundaries import choose_boundaries

    use_framework("jax")
    nb09 = course_support_module("examples").load_example("banking77_jax_flax")  # notebook 09's script
    queries = banking_queries(2000 if quick else 6000, seed=0)
    tokenizer = nb09.load_tokenizer("tiny", queries)
    rng = np.random.default_rng(0)
    examples = nb09.encode(queries, rng.integers(0, 77, len(queries)), tokenizer, ROW)
    lengths = [len(e["input_ids"]) for e in examples]
    steps, repeats = (6, 2) if quick else (20, 5)
    bounds = choose_boundaries(lengths, ROW)

    def alone(width: int, chosen: list[dict]) -> list[dict]:
        return nb09.packed_rows(chosen, width, 1, shuffle=False)  # one query a row: padding, not packing

    by_bucket: dict[int, list[dict]] = {}
    for e in examples:
        by_bucket.setdefault(next(b for b in bounds if len(e["input_ids"]) <= b), []).append(e)
    plans = {
        "fixed padding (64)": [b for b in nb09.batches(alone(ROW, examples), 32)],
        "buckets (notebook 05)": [b for width, chosen in sorted(by_bucket.items())
                                  for b in nb09.batches(alone(width, chosen), 32)],
        "packed rows (notebook 09)": list(nb09.batches(nb09.packed_rows(examples, ROW, 16, seed=0), 8)),
    }
    rng.shuffle(plans["buckets (notebook 05)"])  # buckets interleave during an epoch
    candidates = []
    for k, (name, epoch) in enumerate(plans.items()):
        model = nb09.make_model("tiny", tokenizer.get_vocab_size(), 77 + k, seed=0)  # one program per candidate
        graphdef, params = nnx.split(model)
        optimizer = optax.adamw(1e-4)
        step = nb09.make_train_step(graphdef, optimizer)
        state = {"params": params, "opt": optimizer.init(params)}
        real = sum(int((b["segment_ids"] > 0).sum()) for b in epoch)
        computed = sum(b["input_ids"].size for b in epoch)
        first = [jax.device_put(b) for b in epoch[:steps]]

        def train(batches=first, state=state, step=step):
            for b in batches:
                state["params"], state["opt"], loss = step(state["params"], state["opt"], b)
            jax.block_until_ready(loss)

        for width in sorted({b["input_ids"].shape[1] for b in epoch}):  # compile every shape first, untimed
            train([jax.device_put(next(b for b in epoch if b["input_ids"].shape[1] == width))])
        tokens = sum(int((b["segment_ids"] > 0).sum()) for b in epoch[:steps])
        times = [s / tokens * 1e6 for s in time_calls(train, repeats, warmup_steps=0)]
        candidates.append(Candidate(name, times, "µs per real token", higher_is_better=False, extra={
            "tokens per real token": round(computed / real, 2),
            "shapes (epoch)": len({b["input_ids"].shape for b in epoch}),
            "steps (epoch)": len(epoch)}))
    return Benchmark(
        "packing_jax",
        f"Fixed padding, buckets and packed rows in JAX: BANKING77-style queries ({len(queries):,}), rows of {ROW} "
        f"tokens, BERT 2x128 train step on XLA:CPU, one device ({steps} steps timed)",
        candidates, baseline="fixed padding (64)",
        notes=(f"Buckets {list(bounds)}. Ratios > 1: less step time per real token than fixed padding. A packed row "
               "attends over all 64 positions (its block-diagonal mask hides the other queries, it does not skip "
               "them), so its time per real token is not its tokens-per-real-token ratio; XLA:CPU gives relative "
               "figures only."))


if __name__ == "__main__":
    cli(run)
