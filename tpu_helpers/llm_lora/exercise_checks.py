"""Checks of notebook 10's exercises: both build small models on PyTorch's CPU, no XLA device needed."""
from __future__ import annotations

from typing import Callable

from tpu_helpers.core.exercises import answer_for, call_answer, run_check
from tpu_helpers.llm_lora.sources import tiny_llama

answer = answer_for(__package__)  # the notebook's answers, or this package's solutions.py when solutions are on
PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj")


def check_all_attention_lora(all_attention_lora: Callable, r: int = 4):
    """Rank r on q, k, v and o of every layer: the trainable count, frozen base, unchanged outputs at the start."""

    def body() -> str:
        import torch
        from peft import get_peft_model

        base = tiny_llama(64, 1010, hidden=32)
        ids = torch.arange(12).reshape(2, 6)
        with torch.no_grad():
            want_logits = base(input_ids=ids).logits
        expected = sum(r * (m.in_features + m.out_features) for name, m in base.named_modules()
                       if name.endswith(PROJECTIONS) and isinstance(m, torch.nn.Linear))
        config = call_answer(all_attention_lora, r, what=f"all_attention_lora({r})")
        model = call_answer(get_peft_model, base, config, what="get_peft_model(model, your config)")
        adapted = sorted({n.split(".")[-1] for n, m in model.named_modules() if hasattr(m, "lora_A") and m.lora_A})
        trainable = {n: p.numel() for n, p in model.named_parameters() if p.requires_grad}
        assert all("lora_" in n for n in trainable), (
            f"besides the adapters, {[n for n in trainable if 'lora_' not in n][:2]} train: LoRA freezes the base")
        assert adapted == sorted(PROJECTIONS), (
            f"adapters on {adapted}: target all four attention projections {list(PROJECTIONS)} (target_modules)")
        assert sum(trainable.values()) == expected, (
            f"{sum(trainable.values()):,} trainable parameters, expected {expected:,} for rank {r}: set r={r}")
        with torch.no_grad():
            gap = float((model(input_ids=ids).logits - want_logits).abs().max())
        assert gap < 1e-6, f"the outputs changed by {gap:.1e} before training: B must start at zero (init_lora_weights)"
        return f"{expected:,} trainable parameters on {adapted}, the base frozen, the start unchanged"

    return run_check(body)


def check_merge_by_hand(merge_by_hand: Callable, r: int = 4, alpha: int = 8):
    """The merged weight equals peft's merge_and_unload on one adapted layer with a trained (non-zero) B."""

    def body() -> str:
        import torch
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(tiny_llama(64, 1011, hidden=32), LoraConfig(r=r, lora_alpha=alpha, target_modules=["q_proj"]))
        layer = model.base_model.model.model.layers[0].self_attn.q_proj
        with torch.no_grad():
            torch.manual_seed(7)
            layer.lora_B["default"].weight.normal_()  # as if trained: B moved away from zero
            W = layer.base_layer.weight.detach().clone()
            A, B = layer.lora_A["default"].weight.detach().clone(), layer.lora_B["default"].weight.detach().clone()
        mine = call_answer(merge_by_hand, W, A, B, alpha, r, what="merge_by_hand(weight, lora_A, lora_B, alpha, r)")
        want = model.merge_and_unload().model.layers[0].self_attn.q_proj.weight.detach()
        assert isinstance(mine, torch.Tensor) and mine.shape == W.shape, (
            f"got {getattr(mine, 'shape', type(mine).__name__)}, expected W's shape {tuple(W.shape)}: B @ A is out x in")
        if torch.allclose(mine, W + B @ A, atol=1e-5) and alpha != r:
            raise AssertionError(f"you added B @ A unscaled: peft scales it by alpha / r = {alpha / r}")
        assert torch.allclose(mine, want, atol=1e-5), (
            f"max |difference| from peft's merge: {float((mine - want).abs().max()):.3g}; the merged weight is "
            "W + (alpha / r) * (B @ A)")
        return f"your merge equals peft's merge_and_unload ({tuple(W.shape)}, scale alpha / r = {alpha / r})"

    return run_check(body)
