"""When does notebook 04's masked LM start reading the context? A learning curve, on a text file (not in the suite).

Notebook 04's pieces (Unigram tokenizer, blocks, TFRecord shards, the TF-native masking pipeline, RoBERTa from a
config, transformers' ``create_optimizer``, ``jit_compile``) train one model; every ``--every`` steps the script prints
the loss at the ``<mask>`` tokens of 4 held batches (the same blocks, another masking seed) with their context and
with it shuffled (notebook 04's check cells), against the unigram entropy of the tokens. A model on the frequency
plateau sits at the entropy and does not care about the shuffle; one that reads the context goes below it and gets
worse when shuffled. The figures in notebook 04's plan cell and docs/benchmarks.md come from this script:

    ./course python -m benchmarks.mlm_context_curve --corpus my.txt --block 32 --batch 64 --vocab 1000 --seed 1
    ./course python -m benchmarks.mlm_context_curve --corpus python-docs --steps 2000
    ./course python -m benchmarks.mlm_context_curve --corpus offline --steps 4000 --every 500

About 40 ms a step for the defaults on a 2-core CPU (a 2,000-step curve: 1.5 minutes). ``--corpus`` takes what
notebook 04's ``CORPUS`` takes.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--corpus", default="python-docs", help="what notebook 04's CORPUS takes (default: python-docs)")
    p.add_argument("--max-lines", type=int, default=7_000)
    p.add_argument("--vocab", type=int, default=1_000)
    p.add_argument("--block", type=int, default=32, help="tokens per block (notebook 04's BLOCK_SIZE)")
    p.add_argument("--batch", type=int, default=64, help="blocks per step")
    p.add_argument("--steps", type=int, default=2_000)
    p.add_argument("--every", type=int, default=250, help="steps between two measurements")
    p.add_argument("--lr", type=float, default=2e-3, help="peak learning rate (linear warm-up over 5 %%, then decay)")
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--hidden", type=int, default=128, help="hidden size (2 layers, 2 heads, intermediate 2x)")
    p.add_argument("--seed", type=int, default=0, help="initial weights and the order and masking of the batches")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    a = parse_args(argv)
    from tpu_helpers.core import frameworks

    frameworks.use_framework("tf")
    import numpy as np
    import tf_keras as keras
    from transformers import TFAutoModelForMaskedLM, create_optimizer

    from benchmarks.harness import course_support_module
    from tpu_helpers.mlm.corpus import load_course_corpus
    from tpu_helpers.mlm.lesson_cells import (
        MaskingSpec,
        filter_lines,
        make_mlm_dataset,
        roberta_config,
        tokenize_and_chunk,
        train_unigram_tokenizer,
        write_shards,
    )

    checks = course_support_module("mlm").notebook_04_checks()  # notebook 04's check cells, their one home
    masked_loss, scramble_context, unigram_entropy = checks.masked_loss, checks.scramble_context, checks.unigram_entropy

    corpus = filter_lines(load_course_corpus(a.corpus, max_lines=a.max_lines, offline_max_chars=1_000_000))
    tokenizer = train_unigram_tokenizer(corpus.dataset, a.vocab, block_size=a.block)
    blocks, _ = tokenize_and_chunk(corpus, tokenizer, block_size=a.block, progress=False)
    spec = MaskingSpec.from_tokenizer(tokenizer)
    entropy = unigram_entropy(blocks, spec.special_ids)
    print(f"{corpus.name}: {blocks.size:,} tokens in {len(blocks):,} blocks of {a.block}; vocabulary "
          f"{len(tokenizer):,}; unigram entropy {entropy:.3f} nats; {vars(a)}", flush=True)
    with tempfile.TemporaryDirectory(prefix="mlm-context-") as tmp:
        shards = str(Path(tmp) / "shards")
        write_shards(blocks, shards, records_per_shard=2_000, progress=False)
        train = make_mlm_dataset(shards, spec, batch_size=a.batch, block_size=a.block, seed=a.seed, repeat=True)
        held = list(make_mlm_dataset(shards, spec, batch_size=16, block_size=a.block, seed=a.seed + 1000)
                    .take(4).as_numpy_iterator())
        config = roberta_config(tokenizer, block_size=a.block, hidden_size=a.hidden, num_hidden_layers=2,
                                num_attention_heads=2, intermediate_size=2 * a.hidden,
                                hidden_dropout_prob=a.dropout, attention_probs_dropout_prob=a.dropout)
        keras.utils.set_random_seed(a.seed)
        model = TFAutoModelForMaskedLM.from_config(config)
        model(model.dummy_inputs, training=False)
        optimizer, _ = create_optimizer(init_lr=a.lr, num_train_steps=a.steps,
                                        num_warmup_steps=max(1, a.steps // 20), weight_decay_rate=1e-3)
        model.compile(optimizer=optimizer, steps_per_execution=8, jit_compile=True)
        start, done = time.perf_counter(), 0
        while done < a.steps:
            steps = min(a.every, a.steps - done)
            model.fit(train, steps_per_epoch=steps, epochs=1, verbose=0)
            done += steps
            intact = float(np.mean([masked_loss(model, b, spec.mask_token_id) for b in held]))
            shuffled = float(np.mean([masked_loss(model, scramble_context(b, spec.special_ids, seed=a.seed),
                                                  spec.mask_token_id) for b in held]))
            print(f"step {done:5d} ({done * a.batch:,} blocks, {time.perf_counter() - start:4.0f} s): loss at the "
                  f"masks {intact:.3f}, {entropy - intact:+.3f} below the entropy; context shuffled {shuffled:.3f} "
                  f"({shuffled - intact:+.3f})", flush=True)


if __name__ == "__main__":
    main()
