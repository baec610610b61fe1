"""Notebook 09's exercise checks pass the reference answers and name what is wrong in wrong ones."""
import numpy as np
import pytest
from course_testing import failed, skeleton

jax = pytest.importorskip("jax")

from course_support.examples import load_example  # noqa: E402

from tpu_helpers.banking77_jax import exercise_checks as checks  # noqa: E402
from tpu_helpers.banking77_jax import solutions  # noqa: E402

nb09 = load_example("banking77_jax_flax")  # notebook 09's lesson: its script (no lesson_cells.py)


@pytest.fixture(scope="module")
def rows():
    rng = np.random.default_rng(0)
    examples = [{"input_ids": rng.integers(5, 50, size=rng.integers(3, 20)).astype(np.int32),
                 "labels": np.array([i % 77], np.int32)} for i in range(60)]
    return nb09.packed_rows(examples, 32, 8, seed=1)


def test_attention_mask(rows):
    assert checks.check_attention_mask(solutions.attention_mask, rows[:4]).passed
    assert not checks.check_attention_mask(skeleton, rows[:4]).attempted
    assert failed(checks.check_attention_mask(lambda s: s[:, :, None] == s[:, None, :], rows[:4]), "padding")
    assert failed(checks.check_attention_mask(lambda s: (s[:, :, None] > 0) & (s[:, None, :] > 0), rows[:4]),
                  "different queries")


def test_place_batch(rows):
    mesh = nb09.make_mesh(8, 16)
    batch = next(nb09.batches(rows, 16))
    assert checks.check_place_batch(solutions.place_batch, batch, mesh).passed
    assert failed(checks.check_place_batch(lambda b, m: {k: jax.numpy.asarray(v) for k, v in b.items()}, batch, mesh),
                  "split as")
