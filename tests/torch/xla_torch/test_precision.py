"""Float32 comparisons on XLA run at 'highest' matmul precision (a TPU's default is one bfloat16 pass)."""
import pytest


def test_the_block_sets_highest_and_restores_the_default():
    from torch_xla import backends

    from tpu_helpers.xla_torch.precision import mat_mul_precision

    assert backends.get_mat_mul_precision() == "default"  # what a TPU uses unless told: one bfloat16 pass
    with mat_mul_precision("highest") as before:
        assert before == "default" and backends.get_mat_mul_precision() == "highest"
    assert backends.get_mat_mul_precision() == "default"
    with pytest.raises(RuntimeError), mat_mul_precision("high"):
        raise RuntimeError("a failing comparison")
    assert backends.get_mat_mul_precision() == "default"  # restored after an error too


def test_a_wrong_name_is_refused_clearly():
    from tpu_helpers.xla_torch.precision import mat_mul_precision

    with pytest.raises(ValueError, match="Must be one of default, high, highest"):  # torch_xla's own check
        with mat_mul_precision("fp32"):
            pass


def test_highest_precision_matches_eager_at_a_float32_tolerance():
    """The choice the notebooks make: at 'highest' an XLA matmul agrees with eager float32 to 1e-4 (on XLA:CPU
    every precision does; on a TPU only 'highest' does)."""
    import torch
    import torch_xla

    from tpu_helpers.xla_torch.precision import mat_mul_precision

    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(64, 128, generator=g), torch.randn(128, 32, generator=g)
    with mat_mul_precision("highest"):
        on_xla = (a.to(torch_xla.device()) @ b.to(torch_xla.device())).cpu()
    assert torch.allclose(on_xla, a @ b, atol=1e-4)


def test_the_block_logs_no_multiple_times_warning_and_other_records_pass(caplog):
    import logging

    from tpu_helpers.xla_torch.precision import mat_mul_precision

    with caplog.at_level(logging.WARNING, logger="torch_xla.backends"):
        with mat_mul_precision("highest"):
            logging.getLogger("torch_xla.backends").warning("another message")
    assert [r.getMessage() for r in caplog.records] == ["another message"]
