"""Notebook 10's exercise checks pass on the reference answers and fail, naming the problem, on typical wrong ones
(PyTorch's CPU: the checks need no XLA device)."""
import pytest

pytest.importorskip("peft")


def test_all_attention_lora_passes_on_the_solution():
    from tpu_helpers.llm_lora import exercise_checks, solutions

    result = exercise_checks.check_all_attention_lora(solutions.all_attention_lora)
    assert result.passed, result.message


@pytest.mark.parametrize("targets, rank, named", [(["q_proj", "v_proj"], 4, "all four attention projections"),
                                                 (["q_proj", "k_proj", "v_proj", "o_proj"], 8, "set r=4")])
def test_all_attention_lora_names_what_is_wrong(targets, rank, named):
    from peft import LoraConfig

    from tpu_helpers.llm_lora import exercise_checks

    result = exercise_checks.check_all_attention_lora(lambda r: LoraConfig(r=rank, target_modules=targets))
    assert not result.passed and named in result.message, result.message


def test_all_attention_lora_skeleton_is_not_attempted():
    from tpu_helpers.llm_lora import exercise_checks

    def skeleton(r):
        raise NotImplementedError

    result = exercise_checks.check_all_attention_lora(skeleton)
    assert not result.passed and not result.attempted


def test_merge_by_hand_passes_on_the_solution():
    from tpu_helpers.llm_lora import exercise_checks, solutions

    result = exercise_checks.check_merge_by_hand(solutions.merge_by_hand)
    assert result.passed, result.message


@pytest.mark.parametrize("wrong, named", [(lambda w, a, b, alpha, r: w + b @ a, "alpha / r"),
                                          (lambda w, a, b, alpha, r: w + (alpha / r) * (a.T @ b.T).T * 0 + a.sum(),
                                           "max |difference|"),
                                          (lambda w, a, b, alpha, r: b @ a, "max |difference|")])
def test_merge_by_hand_names_what_is_wrong(wrong, named):
    from tpu_helpers.llm_lora import exercise_checks

    result = exercise_checks.check_merge_by_hand(wrong)
    assert not result.passed and named in result.message, result.message
