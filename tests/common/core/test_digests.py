import numpy as np

from tpu_helpers.core.digests import weights_digest


def test_equal_weights_give_equal_digests_and_any_change_another():
    a = [("w", np.arange(6, dtype=np.float32).reshape(2, 3)), ("b", np.zeros(3, np.float32))]
    same = [(n, v.copy()) for n, v in a]
    digest = weights_digest(a)
    assert digest == weights_digest(same) and 0 <= digest < 2**63
    changed = [("w", a[0][1].copy()), ("b", a[1][1].copy())]
    changed[1][1][0] = 1e-7
    assert weights_digest(changed) != digest
    assert weights_digest([("w", a[0][1].reshape(3, 2)), a[1]]) != digest  # same bytes, another shape
    assert weights_digest([("v", a[0][1]), a[1]]) != digest  # another name
    assert weights_digest(reversed(a)) != digest  # order counts
