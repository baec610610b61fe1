"""Bucket boundaries (tpu_helpers.shared.boundaries): the search, its cost, and clear errors. Framework-free."""
import itertools

import numpy as np
import pytest

from tpu_helpers.shared.boundaries import BucketError, choose_boundaries, validate_boundaries


def tokens_per_real_token(lengths, boundaries):
    """Tokens computed per real token when every query is padded to its own bucket."""
    lens, bounds = np.asarray(lengths), np.asarray(sorted(boundaries))
    return float(bounds[np.searchsorted(bounds, lens, side="left")].sum() / lens.sum())


def lengths(n=500, seed=0, longest=32):
    rng = np.random.default_rng(seed)
    return np.clip(rng.gamma(4.0, 3.5, n).astype(int) + 4, 4, longest).tolist()


def test_choose_boundaries_meets_the_budget_with_few_buckets():
    lens = lengths(2000, longest=128)  # a long tail up to 128 tokens, mean ~18
    bounds = choose_boundaries(lens, 128, max_buckets=3)
    assert len(bounds) <= 3 and bounds[-1] == 48 >= max(lens) and all(b % 8 == 0 for b in bounds)
    assert tokens_per_real_token(lens, bounds) < 1.5 < tokens_per_real_token(lens, (16, 32, 128))
    assert tokens_per_real_token(lens, bounds) <= tokens_per_real_token(lens, (16, 32, 48))
    assert tokens_per_real_token(lens, (128,)) > 6
    assert choose_boundaries(lens, 128, max_buckets=1) == (48,)
    assert choose_boundaries(lens, 40, max_buckets=1) == (40,)  # truncated at max_length
    more = choose_boundaries(lens, 128, max_buckets=5)
    assert tokens_per_real_token(lens, more) <= tokens_per_real_token(lens, bounds)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("multiple", [1, 8])
def test_choose_boundaries_is_the_cheapest_set_of_all(seed, multiple):
    """Against brute force over every set of boundaries (multiples of `multiple`, the last holding the longest)."""
    rng = np.random.default_rng(seed)
    lens = rng.integers(3, 40, int(rng.integers(5, 60))).tolist()
    top = -(-max(lens) // multiple) * multiple
    best = min(tokens_per_real_token(lens, (*inner, top))
               for k in range(3) for inner in itertools.combinations(range(multiple, top, multiple), k))
    bounds = choose_boundaries(lens, 64, max_buckets=3, multiple=multiple)
    assert len(bounds) <= 3 and bounds[-1] == top and all(b % multiple == 0 for b in bounds)
    assert tokens_per_real_token(lens, bounds) == pytest.approx(best)


def test_bad_boundaries_get_clear_errors():
    with pytest.raises(BucketError, match="at 32 or below"):
        validate_boundaries((8, 64), max_length=32)
    with pytest.raises(BucketError, match="at least 20"):
        validate_boundaries((8, 16), longest=20)
    with pytest.raises(BucketError, match="positive"):
        validate_boundaries((0, 16))
    with pytest.raises(BucketError, match="whole numbers"):
        validate_boundaries(("a",))
