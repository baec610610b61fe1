"""Every exercise check of notebook 02 (the XLA rules in PyTorch/XLA) passes on the reference solution and fails, naming
the problem, on a typical wrong answer. torch / torch_xla are imported inside the tests (pytest may also import
TensorFlow test modules)."""

import pytest


# ------------------------------------------------------------------------------------ notebook 02, rule 1
def test_clip_by_norm_passes_on_the_solution(xla):
    from tpu_helpers.xla_torch import exercise_checks as nb02
    from tpu_helpers.xla_torch import solutions as solution

    result = nb02.check_clip_by_norm(solution.clip_by_norm)
    assert result.passed, result.message
    assert "no host reads" in result.message


def test_clip_by_norm_with_a_python_if_is_a_host_sync(xla):
    from tpu_helpers.xla_torch import exercise_checks as nb02

    def clip_by_norm_with_if(update, max_norm=1.0):  # the notebook's starting point
        norm = update.norm()
        if norm > max_norm:
            return update * (max_norm / norm)
        return update

    result = nb02.check_clip_by_norm(clip_by_norm_with_if)
    assert not result.passed and result.attempted
    assert "still reads a value on the host: 5 scalar read(s)" in result.message
    assert "torch.where" in result.message


def test_clip_by_norm_blending_with_an_indicator_gives_nan_on_a_zero_update(xla):
    from tpu_helpers.xla_torch import exercise_checks as nb02

    def blended(update, max_norm=1.0):
        norm = update.norm()
        big = (norm > max_norm).to(update.dtype)
        return big * (update * (max_norm / norm)) + (1 - big) * update

    result = nb02.check_clip_by_norm(blended)
    assert not result.passed
    assert "all-zero update" in result.message and "NaN" in result.message


def test_a_skeleton_is_not_attempted(xla):
    from tpu_helpers.xla_torch import exercise_checks as nb02

    def skeleton(update, max_norm=1.0):
        raise NotImplementedError  # YOUR ANSWER

    result = nb02.check_clip_by_norm(skeleton)
    assert not result.passed and not result.attempted


# ------------------------------------------------------------------------------------ notebook 02, rule 2
def test_token_accuracy_passes_on_the_solution(xla):
    from tpu_helpers.xla_torch import exercise_checks as nb02
    from tpu_helpers.xla_torch import solutions as solution

    result = nb02.check_token_accuracy(solution.token_accuracy)
    assert result.passed, result.message
    assert "one graph for 4 batches" in result.message


def test_token_accuracy_with_boolean_indexing_falls_back_and_recompiles(xla):
    from tpu_helpers.xla_torch import exercise_checks as nb02

    def boolean_indexing(logits, labels):
        keep = labels != -100
        return (logits.argmax(-1)[keep] == labels[keep]).float().mean()

    result = nb02.check_token_accuracy(boolean_indexing)
    assert not result.passed
    assert "still uses boolean indexing" in result.message and "aten::nonzero" in result.message
    assert "for 4 batches of the same shape" in result.message


def test_token_accuracy_over_all_positions_counts_the_padding(xla):
    from tpu_helpers.xla_torch import exercise_checks as nb02

    def everywhere(logits, labels):
        return (logits.argmax(-1) == labels).float().mean()

    result = nb02.check_token_accuracy(everywhere)
    assert not result.passed
    assert "padding included" in result.message


# ------------------------------------------------------------------------------------ notebook 02, rule 3
# batches of 4 whose longest lengths are 17, 20, 23, 30, 45: within 2 graphs, 24 pads less than 16, 32, 48 or 64
LENGTHS = [17, 13, 15, 10, 20, 19, 18, 16, 23, 22, 20, 19, 30, 25, 28, 27, 45, 40, 33, 38]


@pytest.fixture(scope="module")
def forward(xla):
    torch, torch_xla, device = xla
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Embedding(16, 8), torch.nn.Linear(8, 2)).to(device)

    @torch.no_grad()
    def run(batch):
        ids, mask = batch["input_ids"].to(device), batch["attention_mask"].to(device)
        out = (model(ids) * mask[..., None]).sum(1)
        torch_xla.sync()
        return out

    return run


def test_pad_multiple_passes_on_the_solution(forward):
    from tpu_helpers.xla_torch import exercise_checks as nb02
    from tpu_helpers.xla_torch import solutions as solution

    assert solution.pick_pad_multiple(LENGTHS, 4, 2) == 24  # 16 fits 2 graphs too, but pads more
    result = nb02.check_pad_multiple(solution.pick_pad_multiple, LENGTHS, 4, 2, forward)
    assert result.passed, result.message
    assert "pad_to_multiple_of=24: 2 padded length(s) [24, 48]" in result.message


def test_pad_multiple_too_small_is_over_the_graph_budget(forward):
    from tpu_helpers.xla_torch import exercise_checks as nb02

    result = nb02.check_pad_multiple(lambda lengths, batch_size, max_graphs: 8, LENGTHS, 4, 2, forward)
    assert not result.passed
    assert "3 different padded lengths [24, 32, 48]" in result.message and "budget of 2" in result.message


def test_pad_multiple_that_fits_but_pads_more_names_the_better_one(forward):
    from tpu_helpers.xla_torch import exercise_checks as nb02

    for wrong in (16, 32, 48, 64):
        result = nb02.check_pad_multiple(lambda lengths, batch_size, max_graphs: wrong, LENGTHS, 4, 2, forward)
        assert not result.passed
        assert "pad_to_multiple_of=24 does too" in result.message and "less padding" in result.message


def test_pad_multiple_must_be_a_multiple_of_8(forward):
    from tpu_helpers.xla_torch import exercise_checks as nb02

    result = nb02.check_pad_multiple(lambda lengths, batch_size, max_graphs: 20, LENGTHS, 4, 2, forward)
    assert not result.passed and "a positive multiple of 8" in result.message


def test_an_answer_that_raises_is_reported_in_one_line(xla):
    from tpu_helpers.xla_torch import exercise_checks as nb02

    result = nb02.check_token_accuracy(lambda logits, labels: logits.argmax(-1) == labels.float().mean(dim=5))
    assert not result.passed and result.attempted
    assert result.message.startswith("token_accuracy(logits, labels) raised RuntimeError: Value out of range")
