"""Notebook 10 as a script: ``examples/llm_lora_fsdp.py`` (its cells tagged ``save``) trains LoRA adapters with FSDPv2
over 4 simulated CPU devices, from a tiny Llama checkpoint folder and a small BANKING77-shaped CSV folder, and saves
the merged model, in a process where ``import tpu_helpers`` fails."""
import pytest
from course_support.banking77 import write_csv_dir
from course_support.examples import run_example

pytest.importorskip("peft")


def test_help_names_the_flags():
    done = run_example("llm_lora_fsdp", "--help")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "--csv-dir" in done.stdout and "--cpu-devices" in done.stdout


def test_tiny_run_shards_trains_and_saves_the_merged_model(tmp_path):
    from tpu_helpers.llm_lora import sources
    from tpu_helpers.shared.banking77_data import make_synthetic

    data = make_synthetic(2, 1, seed=0)
    csv_dir = write_csv_dir(data, tmp_path / "csv")
    tokenizer = sources.tiny_tokenizer(list(data["train"]["text"]) + data["train"].features["label"].names)
    sources.tiny_llama(len(tokenizer), seed=0).save_pretrained(tmp_path / "model")
    tokenizer.save_pretrained(tmp_path / "model")
    done = run_example(
        "llm_lora_fsdp", "--model", str(tmp_path / "model"), "--csv-dir", str(csv_dir), "--steps", "4",
        "--per-device-batch", "2", "--learning-rate", "3e-2", "--held-out", "16", "--cpu-devices", "4",
        "--output-dir", str(tmp_path / "merged"))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "4 steps of 8 rows over 4 CPU devices" in done.stdout, done.stdout
    assert "held-out answer-token loss:" in done.stdout, done.stdout
    assert (tmp_path / "merged" / "model.safetensors").is_file()
