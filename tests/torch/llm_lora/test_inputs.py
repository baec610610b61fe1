"""Notebook 10's bad inputs get one clear error that names what to change: the row length, the batch, the devices,
and a MODEL folder that is no causal LM checkpoint."""
import pytest

from tpu_helpers.llm_lora import steps

pytest.importorskip("peft")


def test_row_length_defaults_to_the_longest_row_rounded_up():
    pairs = [([1] * 20, [2] * 3), ([1] * 30, [2] * 4)]
    assert steps.row_length(pairs, None) == 48
    assert steps.row_length(pairs, 34) == 34


def test_a_short_row_length_says_how_many_rows_it_would_cut():
    pairs = [([1] * 20, [2] * 3), ([1] * 30, [2] * 4), ([1] * 31, [2] * 4)]
    with pytest.raises(steps.LessonInputError, match=r"ROW_LENGTH=30 would cut 2 of 3 rows .* set ROW_LENGTH >= 35"):
        steps.row_length(pairs, 30)


def test_replicas_that_do_not_divide_the_global_batch():
    with pytest.raises(steps.LessonInputError, match="does not split over 3 devices: set REPLICAS to a divisor"):
        steps.check_batch(16, 3, rows=100, steps=2)
    with pytest.raises(steps.LessonInputError, match="fewer than STEPS=10"):
        steps.check_batch(16, 8, rows=100, steps=10)


def test_replicas_changed_after_the_runtime_started():
    with pytest.raises(steps.LessonInputError, match="restart the kernel"):
        steps.check_devices(8, 4, is_tpu=False)
    steps.check_devices(4, 8, is_tpu=True)  # a TPU's devices decide


def test_sharding_specs_count_their_devices():
    assert steps.tiles("{devices=[8,1]0,1,2,3,4,5,6,7}") == 8
    assert steps.tiles("{devices=[1,8]0,1,2,3,4,5,6,7}") == 8
    assert steps.tiles("{replicated}") == 1


def test_a_model_folder_without_weights(tmp_path):
    from transformers import LlamaConfig

    from tpu_helpers.llm_lora import sources

    LlamaConfig(hidden_size=32, num_hidden_layers=1).save_pretrained(tmp_path)
    with pytest.raises(sources.ModelSourceError, match="has a config but no weights"):
        sources.load_model(str(tmp_path), [], seed=0, row_length=32)
    with pytest.raises(sources.ModelSourceError, match="has no config.json"):
        sources.load_model(str(tmp_path / "missing"), [], seed=0, row_length=32)


def test_a_model_folder_that_is_not_a_causal_lm(tmp_path):
    from transformers import BertConfig, BertModel

    from tpu_helpers.llm_lora import sources

    BertModel(BertConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
                         vocab_size=100)).save_pretrained(tmp_path)
    with pytest.raises(sources.ModelSourceError, match="holds a BertModel, not a causal LM"):
        sources.load_model(str(tmp_path), [], seed=0, row_length=32)


def test_a_saved_checkpoint_folder_loads_with_its_tokenizer(tmp_path):
    from tpu_helpers.llm_lora import sources

    tokenizer = sources.tiny_tokenizer(["how do I change my pin", "card arrival"])
    sources.tiny_llama(len(tokenizer), seed=0).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    model, loaded, origin = sources.load_model(str(tmp_path), [], seed=0, row_length=32)
    assert origin == str(tmp_path) and loaded.chat_template == sources.CHATML
    assert type(model).__name__ == "LlamaForCausalLM"
