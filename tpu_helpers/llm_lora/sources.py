"""Notebook 10's model and tokenizer: a Hub checkpoint, a local folder, or a tiny random Llama built offline."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from tpu_helpers.core.hub import hub_access

# ChatML, the format of SmolLM2-Instruct's own template: the tiny tokenizer gets one too, so every profile runs it
CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json")
_OFFLINE = "Offline? Use MODEL='tiny' (a small random Llama built here) or MODEL='/path/to/a/checkpoint/folder'."


class ModelSourceError(ValueError):
    """MODEL names something that is not a causal LM checkpoint; the message says what to change."""


def tiny_tokenizer(texts: Iterable[str], vocab_size: int = 1000):
    """A byte-level BPE trained on ``texts`` with ChatML's special tokens and template (no download)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=["<|pad|>", "<|im_start|>", "<|im_end|>"], show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, pad_token="<|pad|>", eos_token="<|im_end|>")
    tok.chat_template = CHATML
    return tok


def tiny_llama(vocab_size: int, seed: int, *, hidden: int = 64, layers: int = 2, row_length: int = 256):
    """A random Llama-architecture causal LM (hidden 64, 2 layers, 4 heads, 2 key/value heads) in float32."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=vocab_size, hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=row_length,
                         tie_word_embeddings=False, pad_token_id=0, eos_token_id=2, bos_token_id=1)
    torch.manual_seed(seed)
    return LlamaForCausalLM(config)


def check_folder(folder: Path) -> None:
    """Raise `ModelSourceError` unless ``folder`` holds a causal LM's config and weights."""
    from transformers import AutoConfig
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    if not (folder / "config.json").is_file():
        raise ModelSourceError(f"MODEL={str(folder)!r} has no config.json: point MODEL at a checkpoint folder "
                               "(save_pretrained's output), a Hub name, or 'tiny'.")
    if not any((folder / name).is_file() for name in WEIGHT_FILES):
        raise ModelSourceError(f"MODEL={str(folder)!r} has a config but no weights ({', '.join(WEIGHT_FILES[::2])}): "
                               "save the model there with save_pretrained, or use 'tiny'.")
    config = AutoConfig.from_pretrained(folder)
    saved = config.architectures or []
    if config.model_type not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES or (saved and not any(
            a.endswith(("ForCausalLM", "LMHeadModel")) for a in saved)):
        raise ModelSourceError(f"MODEL={str(folder)!r} holds a {', '.join(saved) or config.model_type}, not a causal "
                               "LM: this lesson fine-tunes a decoder that generates text (Llama, Qwen, SmolLM2 ...).")


def load_model(name: str, texts: Iterable[str], *, seed: int, row_length: int) -> tuple[Any, Any, str]:
    """(model, tokenizer, where from): ``"tiny"``, a local checkpoint folder, or a Hub name (float32 weights)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if name == "tiny":
        tokenizer = tiny_tokenizer(texts)
        return tiny_llama(len(tokenizer), seed, row_length=row_length), tokenizer, "a random Llama built here"
    folder = Path(name).expanduser()
    if folder.exists() or name.startswith((".", "/", "~")):
        check_folder(folder)
        tokenizer = AutoTokenizer.from_pretrained(folder)
        return AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32), tokenizer, str(folder)
    with hub_access(f"the model {name!r}", _OFFLINE, error=ModelSourceError) as local_only:
        tokenizer = AutoTokenizer.from_pretrained(name, local_files_only=local_only)
        model = AutoModelForCausalLM.from_pretrained(name, dtype=torch.float32, local_files_only=local_only)
    return model, tokenizer, f"the Hub ({name})"
