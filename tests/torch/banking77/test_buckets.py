"""Length buckets (notebook 05's sampler and collator, `lesson_cells`): the sampler's plan, the replicas' shapes, the collator. (The
boundaries themselves: tests/common/shared/test_boundaries.py.)

torch and transformers are imported inside the tests (pytest may also import TensorFlow test modules); no XLA.
"""
import numpy as np
import pytest
from course_support import banking77 as support

from tpu_helpers.banking77 import lesson_cells as buckets
from tpu_helpers.banking77.lesson_cells import BucketBatchSampler
from tpu_helpers.shared.boundaries import choose_boundaries

pytest.importorskip("torch")
pytest.importorskip("transformers")

BOUNDS = (16, 24, 32)


def lengths(n=500, seed=0, longest=32):
    rng = np.random.default_rng(seed)
    return np.clip(rng.gamma(4.0, 3.5, n).astype(int) + 4, 4, longest).tolist()


def real_indices(plan):
    return np.concatenate([b.indices[:b.real_rows] for b in plan])


def test_every_batch_has_a_shape_from_the_fixed_set_and_holds_its_rows():
    lens = lengths()
    s = BucketBatchSampler(lens, 8, BOUNDS, num_replicas=2, seed=3)
    for epoch in range(3):
        for b in s.plan(epoch):
            assert b.padded_length in BOUNDS and len(b.indices) == 16
            assert max(lens[i] for i in b.indices) <= b.padded_length
    for batch in s:
        assert len(batch) == 8 and len({L for _, L in batch}) == 1


def test_training_sees_each_sample_at_most_once_and_skips_less_than_a_global_batch():
    lens = lengths(500)
    s = BucketBatchSampler(lens, 8, BOUNDS, num_replicas=2, seed=0)  # global batch 16; 500 = 31 x 16 + 4
    for epoch in range(3):
        seen = real_indices(s.plan(epoch))
        assert len(seen) == len(set(seen.tolist())) == 496
    assert len(s) == 31 * 2  # per-replica batches
    exact = BucketBatchSampler(lengths(480), 8, BOUNDS, num_replicas=2)  # a multiple of the global batch
    assert sorted(real_indices(exact.plan(0)).tolist()) == list(range(480))


def test_evaluation_keeps_every_sample_exactly_once_and_tops_up_the_last_batch():
    lens = lengths(101)
    s = BucketBatchSampler(lens, 8, BOUNDS, num_replicas=2, shuffle=False)
    plan = s.plan()
    assert not s.drop_last and len(s) == 7 * 2
    assert sorted(real_indices(plan).tolist()) == list(range(101))
    last = plan[-1]
    assert last.real_rows == 101 % 16 and len(last.indices) == 16
    assert set(last.indices.tolist()) == set(last.indices[:last.real_rows].tolist())  # repeats of its own rows
    assert all(b.real_rows == 16 for b in plan[:-1])
    assert s.plan(0) is not None and [b.indices.tolist() for b in s.plan(5)] == [b.indices.tolist() for b in plan]


def test_batches_are_shuffled_between_epochs_and_identical_across_processes():
    lens = lengths()
    a = BucketBatchSampler(lens, 8, BOUNDS, num_replicas=2, seed=7)
    b = BucketBatchSampler(lens, 8, BOUNDS, num_replicas=2, seed=7)  # another process: same plan, no messages
    e0, e1 = a.plan(0), a.plan(1)
    assert [x.indices.tolist() for x in e0] == [x.indices.tolist() for x in b.plan(0)]
    assert [x.indices.tolist() for x in e0] != [x.indices.tolist() for x in e1]
    assert [x.padded_length for x in e0] != [x.padded_length for x in e1]  # the bucket order changes too
    assert {frozenset(x.indices.tolist()) for x in e0} != {frozenset(x.indices.tolist()) for x in e1}
    first, again = list(a), list(a)  # iter() keeps the epoch: set_epoch moves it, as for DistributedSampler
    assert first == again
    a.set_epoch(1)
    assert list(a) != first
    a.set_epoch(0)
    assert list(a) == first


def test_every_replica_gets_the_same_shape_at_every_step_through_accelerates_shard():
    from accelerate.data_loader import BatchSamplerShard

    lens = lengths(700)
    n = 4
    s = BucketBatchSampler(lens, 8, BOUNDS, num_replicas=n, seed=1)
    replicas = []
    for r in range(n):  # each process has its own sampler at epoch 0; here one sampler is rewound
        s.set_epoch(0)
        replicas.append(list(BatchSamplerShard(s, num_processes=n, process_index=r)))
    assert len({len(r) for r in replicas}) == 1 and len(replicas[0]) == len(s.plan(0))
    for step, pieces in enumerate(zip(*replicas)):
        widths = {L for piece in pieces for _, L in piece}
        assert len(widths) == 1, f"step {step}: replicas padded to {widths}"
        assert all(len(p) == 8 for p in pieces)
    # together the replicas cover each global batch of the plan, in order
    for step, (batch, pieces) in enumerate(zip(s.plan(0), zip(*replicas))):
        assert [i for p in pieces for i, _ in p] == batch.indices.tolist()


def test_data_loader_with_the_collator_gives_static_tensors():
    import torch
    from datasets import Dataset
    from torch.utils.data import DataLoader

    from tpu_helpers.banking77 import dataset

    texts = list(dataset.make_synthetic(3, 1, seed=2)["train"]["text"])
    tok = dataset.train_wordpiece_tokenizer(texts, vocab_size=300)
    enc = tok(texts, truncation=True, max_length=32)
    ds = Dataset.from_dict({**enc, "labels": list(range(len(texts)))})
    lens = [len(x) for x in enc["input_ids"]]
    bounds = choose_boundaries(lens, 32, max_buckets=3)
    from tpu_helpers.banking77.run_log import CountingCollate

    collate = CountingCollate(buckets.BucketCollator(tok))  # as the course's RunLog counts
    s = BucketBatchSampler(lens, 16, bounds, shuffle=False)
    dl = DataLoader(buckets.BucketedDataset(ds), batch_sampler=s, collate_fn=collate)
    seen = []
    for batch in dl:
        assert batch["input_ids"].dtype == torch.long and batch["input_ids"].shape[0] == 16
        assert batch["input_ids"].shape[1] in bounds
        assert set(batch) == {"input_ids", "token_type_ids", "attention_mask", "labels"}
        for row, mask, label in zip(batch["input_ids"], batch["attention_mask"], batch["labels"]):
            n = int(mask.sum())
            assert n == lens[int(label)] and row[:n].tolist() == enc["input_ids"][int(label)]
            assert (row[n:] == tok.pad_token_id).all()
        seen += batch["labels"].tolist()
    assert sorted(set(seen)) == list(range(len(texts)))
    st = collate.stats()
    assert st["real_tokens"] <= st["computed_tokens"] and sum(st["shapes"].values()) == len(s)
    assert set(st["shapes"]) <= {f"16x{b}" for b in bounds}


def test_collator_refuses_rows_longer_than_their_bucket_and_mixed_lengths():
    from tpu_helpers.banking77 import dataset

    tok = dataset.train_wordpiece_tokenizer(["a b c d e f g h"] * 5, vocab_size=50)
    row = dict(tok("a b c d e f g h"))
    collate = buckets.BucketCollator(tok)
    with pytest.raises(ValueError, match="more than the padded length 4"):
        collate([(row, 4)])
    with pytest.raises(ValueError, match="several padded lengths"):
        collate([(row, 16), (row, 24)])
    fixed = buckets.BucketCollator(tok, fixed_length=12)
    assert tuple(fixed([row, row])["input_ids"].shape) == (2, 12)


def test_plan_counts_tokens_and_shapes():
    lens = [4] * 16 + [20] * 16
    s = BucketBatchSampler(lens, 16, BOUNDS, shuffle=False)
    plan = s.plan()
    computed = sum(len(b.indices) * b.padded_length for b in plan)
    real = sum(lens[i] for b in plan for i in b.indices[:b.real_rows])
    assert (len(plan), real, computed) == (2, 16 * 4 + 16 * 20, 16 * 16 + 16 * 24)
    assert sorted(b.padded_length for b in plan) == [16, 24]


def test_bad_settings_get_clear_errors():
    with pytest.raises(ValueError, match="more than the largest bucket"):
        BucketBatchSampler([40], 1, BOUNDS)
    with pytest.raises(ValueError, match="fewer than one global batch"):
        BucketBatchSampler([5] * 10, 8, BOUNDS, num_replicas=2)


def test_epoch_batches_builds_one_epoch_per_strategy():
    """What benchmarks/bench_padding.py and bench_buckets_bert.py compare (test-only: course_support)."""
    lens = lengths(400, seed=3, longest=64)
    out = {s: support.epoch_batches(lens, s, batch_size=32, max_length=64)
           for s in ("max_length", "longest", "multiple_of_32", "buckets")}
    for strategy, (epoch, bounds) in out.items():
        seen = [i for idx, _ in epoch for i in idx]
        assert len(seen) == len(set(seen)) > 400 - 32 * 3  # each query at most once, few dropped
        assert all(max(lens[i] for i in idx) <= width for idx, width in epoch)
    assert {w for _, w in out["max_length"][0]} == {64}
    assert {w for _, w in out["multiple_of_32"][0]} <= {32, 64}
    assert {w for _, w in out["buckets"][0]} <= set(out["buckets"][1]) and len(out["buckets"][1]) <= 3

    def ratio(epoch):
        return sum(len(idx) * w for idx, w in epoch) / sum(lens[i] for idx, _ in epoch for i in idx)

    assert ratio(out["buckets"][0]) < ratio(out["multiple_of_32"][0]) < ratio(out["max_length"][0])


def test_epoch_batches_is_the_sampler_plan_and_the_padding_strategy_and_plain_ints():
    lens = lengths(200, seed=5, longest=64)
    epoch, bounds = support.epoch_batches(lens, "buckets", batch_size=16, max_length=64, max_buckets=2, seed=7)
    assert bounds == list(choose_boundaries(lens, 64, max_buckets=2))
    plan = BucketBatchSampler(lens, 16, bounds, seed=7).plan(0)
    assert [(idx, w) for idx, w in epoch] == [(b.indices.tolist(), b.padded_length) for b in plan]
    assert all(type(i) is int for idx, _ in epoch for i in idx)
    with pytest.raises(ValueError, match="unknown padding strategy"):
        support.epoch_batches(lens, "bucket", batch_size=16, max_length=64)


def test_padded_tensors_pad_on_the_right_with_a_mask():
    ids = [[5, 6, 7], [8], [9, 10]]
    out = support.padded_tensors(ids, [2, 0, 1], 4)
    assert out["input_ids"].tolist() == [[9, 10, 0, 0], [5, 6, 7, 0], [8, 0, 0, 0]]
    assert out["attention_mask"].tolist() == [[1, 1, 0, 0], [1, 1, 1, 0], [1, 0, 0, 0]]
    assert support.padded_tensors(ids, [1], 2, pad_token_id=3)["input_ids"].tolist() == [[8, 3]]
    with pytest.raises(ValueError, match="more than the padded length 2"):
        support.padded_tensors(ids, [0], 2)
