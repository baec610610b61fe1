"""Notebook 08's PyTorch script: every process builds the same data and model from the seed and loads the one
tokenizer trained before the launch (what lets the hosts train as one), and a saved model restores in a fresh load with the same weights. The two-host torchrun rehearsal
itself runs in notebook 08 (nbval), where its claims are asserted."""
from tpu_helpers.banking77.replicas import torch_weights_digest
from tpu_helpers.pod_torch import worker


def test_every_process_builds_the_same_start(tmp_path):
    folder = worker.prepare(str(tmp_path / "tokenizer"), seed=3, per_label=2)  # once, before the hosts start
    data, tokenizer, encoded, model = worker.build(seed=3, per_label=2, max_length=32, tokenizer_dir=folder)
    _, tokenizer2, encoded2, model2 = worker.build(seed=3, per_label=2, max_length=32, tokenizer_dir=folder)
    assert list(encoded["train"]["input_ids"]) == list(encoded2["train"]["input_ids"])
    assert tokenizer.get_vocab() == tokenizer2.get_vocab()
    assert torch_weights_digest(model) == torch_weights_digest(model2)
    model.save_pretrained(tmp_path / "model")
    restored = worker.restore(str(tmp_path / "model"))
    assert restored["weights_digest"] == torch_weights_digest(model)
    assert restored["parameters"] == sum(p.numel() for p in model.parameters())
