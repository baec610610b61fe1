"""bf16 the way notebook 05 trains on a TPU (autocast: bf16 matmuls, float32 weights, gradients and AdamW state)
learns like float32 at the `tpu` profile's learning rate, where pure bf16 (XLA_USE_BF16=1, what
Accelerator(mixed_precision="bf16") sets on a TPU) loses small updates. Rehearsed on XLA:CPU through the notebook's
own training function: XLA:CPU runs the same autocast casts and bf16 arithmetic (emulated); what it cannot show is a
TPU's speed, or its matrix units' float32 accumulation.
"""
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_xla")
pytest.importorskip("accelerate")

from course_support.train_config import TrainConfig  # noqa: E402

from tpu_helpers.banking77 import dataset, launch, lesson_cells  # noqa: E402
from tpu_helpers.banking77.lesson_cells import scaled_learning_rate  # noqa: E402
from tpu_helpers.core.runtime import Runtime  # noqa: E402
from tpu_helpers.shared.boundaries import choose_boundaries  # noqa: E402

CPU_PLAN = launch.plan_launch(Runtime("cpu", "local"), env={}, ipython=None)
from course_support.banking77 import run_as_notebook  # noqa: E402

from tpu_helpers.banking77.lesson_cells import training_function  # noqa: E402  (notebook 05's cell)

TPU_LR = scaled_learning_rate(3e-4, 256, 32)  # the tpu profile's rate on one device (notebook 05's rule): 3.75e-5


@pytest.fixture(scope="module")
def tiny():
    data = dataset.load_banking77("synthetic", n_train_per_label=2, n_test_per_label=1, seed=5)
    tok = dataset.load_tokenizer("tiny", data.dataset["train"]["text"], vocab_size=400)
    enc = lesson_cells.tokenize(data.dataset, tok, 32)
    return data, tok, enc, choose_boundaries([len(x) for x in enc["train"]["input_ids"]], 32)


def train(tiny, mixed_precision, lr=TPU_LR):
    """(report, relative change of the weights, their dtypes after training) of one run of the notebook's function."""
    data, tok, enc, bounds = tiny
    launch.reset_accelerate_state()
    torch.manual_seed(0)
    # hidden_size 48, a size no other test in this process uses: its graphs are its own (the compile cache is
    # process-wide, and test_train counts its run's compilations)
    model = dataset.make_model("tiny", data, vocab_size=len(tok), max_length=32, hidden_size=48)
    before = torch.cat([p.detach().flatten().clone() for p in model.parameters()])
    config = TrainConfig(epochs=2, batch_size=32, eval_batch_size=32, learning_rate=lr, warmup_ratio=0.0,
                         progress=False, padding="buckets", boundaries=bounds, max_length=32, seed=0,
                         mixed_precision=mixed_precision)
    report = run_as_notebook(training_function, (model, enc["train"], enc["test"], config, tok), CPU_PLAN)
    after = torch.cat([p.detach().cpu().flatten() for p in model.parameters()])
    return report, float((after - before).norm() / before.norm()), {p.dtype for p in model.parameters()}


def test_bf16_autocast_applies_the_tpu_profiles_small_updates_like_float32(tiny):
    fp32, moved32, dtypes32 = train(tiny, "no")
    bf16, moved16, dtypes16 = train(tiny, "bf16")
    assert bf16.mixed_precision == "bf16" and fp32.mixed_precision == "no"
    assert dtypes16 == dtypes32 == {torch.float32}, "autocast keeps the weights (and so AdamW's state) in float32"
    # at 3.75e-5 the updates were applied, not rounded away: the weights moved as far as in float32
    assert moved32 > 0 and 0.8 < moved16 / moved32 < 1.25, (moved16, moved32)
    last32, last16 = fp32.epochs[-1].loss, bf16.epochs[-1].loss
    assert abs(last16 - last32) < 0.02 * last32, f"bf16 {last16:.4f} vs float32 {last32:.4f}"


def test_bf16_autocast_learns_like_float32(tiny):
    """At the rate the tiny model learns with in a few steps (the ci profile's), both lower the loss alike."""
    fp32, _, _ = train(tiny, "no", lr=2e-3)
    bf16, _, _ = train(tiny, "bf16", lr=2e-3)
    first32, last32 = fp32.epochs[0].loss, fp32.epochs[-1].loss
    first16, last16 = bf16.epochs[0].loss, bf16.epochs[-1].loss
    assert last32 < first32 and last16 < first16, (fp32.epochs, bf16.epochs)
    assert abs(last16 - last32) < 0.05 * last32, f"bf16 {last16:.4f} vs float32 {last32:.4f}"
