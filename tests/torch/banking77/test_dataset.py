"""BANKING77 data sources, tokenizer and model, offline: the Hub-format loader on a local copy of the Hub's
parquet branch, the CSV folder, the synthetic stand-in, and the clear errors for bad input or no network."""
import csv
import os
import re
import socket
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("datasets")
pytest.importorskip("transformers")


from course_support.banking77 import write_csv_dir, write_hub_layout  # noqa: E402

from tpu_helpers.banking77 import dataset  # noqa: E402
from tpu_helpers.banking77.dataset import Banking77Error  # noqa: E402
from tpu_helpers.shared.banking_queries import BANKING77_LABELS  # noqa: E402


@pytest.fixture(scope="module")
def synthetic():
    return dataset.load_banking77("synthetic", n_train_per_label=3, n_test_per_label=1, seed=1)


def test_synthetic_has_the_banking77_schema_and_says_it_is_synthetic(synthetic):
    ds = synthetic.dataset
    assert set(ds) == {"train", "test"} and (len(ds["train"]), len(ds["test"])) == (3 * 77, 77)
    assert ds["train"].column_names == ["text", "label"]
    assert synthetic.num_labels == 77 and synthetic.label_names == list(BANKING77_LABELS)
    assert sorted(set(ds["test"]["label"])) == list(range(77))  # every intent in the test split
    assert synthetic.source == "synthetic" and "SYNTHETIC" in synthetic.describe()
    assert ds["train"].info.description.startswith("SYNTHETIC")
    assert synthetic.id2label[11] == "card_arrival" and synthetic.label2id["card_arrival"] == 11


def test_synthetic_is_deterministic_and_learnable_by_its_words(synthetic):
    again = dataset.make_synthetic(3, 1, seed=1)
    assert again["train"]["text"] == synthetic.dataset["train"]["text"]
    assert dataset.make_synthetic(3, 1, seed=2)["train"]["text"] != synthetic.dataset["train"]["text"]
    # each query mentions (most of) its intent's words: that is what a model can learn
    hits = 0
    for text, label in zip(synthetic.dataset["train"]["text"], synthetic.dataset["train"]["label"]):
        words = BANKING77_LABELS[label].lower().rstrip("?").split("_")
        hits += sum(w in re.findall(r"[a-z]+", text) for w in words) >= len(words) - 1
    assert hits == len(synthetic.dataset["train"])


def test_hub_loader_reads_a_local_copy_of_the_parquet_branch(synthetic, tmp_path, monkeypatch):
    write_hub_layout(synthetic.dataset, tmp_path)
    assert (tmp_path / "default" / "train" / "0000.parquet").is_file()
    assert (tmp_path / "default" / "test" / "0000.parquet").is_file()
    from tpu_helpers.shared import banking77_data  # where the loaders live (shared with notebook 09)

    monkeypatch.setattr(banking77_data, "HUB_REPO", str(tmp_path))  # load_dataset ignores a local folder's revision
    data = dataset.load_banking77("hub")
    assert data.source == "hub"
    assert data.label_names == list(BANKING77_LABELS)  # the ClassLabel names travel in the parquet schema
    assert data.dataset["train"]["text"] == synthetic.dataset["train"]["text"]
    assert data.dataset["test"]["label"] == synthetic.dataset["test"]["label"]


def test_csv_folder_round_trip_keeps_the_hub_label_ids(synthetic, tmp_path):
    write_csv_dir(synthetic.dataset, tmp_path)
    header = next(csv.reader(open(tmp_path / "train.csv", encoding="utf-8")))
    assert header == ["text", "category"]
    data = dataset.load_banking77("csv", csv_dir=tmp_path)
    assert data.label_names == list(BANKING77_LABELS)
    assert data.dataset["train"]["label"] == synthetic.dataset["train"]["label"]
    assert data.dataset["test"]["text"] == synthetic.dataset["test"]["text"]


def test_csv_with_other_categories_gets_sorted_ids(tmp_path):
    for split, rows in (("train", [("hello", "b_intent"), ("bye", "a_intent")]), ("test", [("hi", "b_intent")])):
        with open(tmp_path / f"{split}.csv", "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(["text", "category"])
            w.writerows(rows)
    data = dataset.load_banking77("csv", csv_dir=tmp_path)
    assert data.label_names == ["a_intent", "b_intent"] and data.dataset["test"]["label"] == [1]


def test_csv_texts_that_look_like_missing_values_stay_text(tmp_path):
    (tmp_path / "train.csv").write_text('text,category\nNA,card_arrival\n"null, really",card_arrival\n')
    (tmp_path / "test.csv").write_text("text,category\nN/A,card_arrival \n")  # a stray space after the category
    data = dataset.load_banking77("csv", csv_dir=tmp_path)
    assert data.dataset["train"]["text"] == ["NA", "null, really"] and data.dataset["test"]["text"] == ["N/A"]
    assert data.label_names == list(BANKING77_LABELS) and data.dataset["test"]["label"] == [11]


def test_bad_csv_folders_get_clear_errors(tmp_path):
    with pytest.raises(Banking77Error, match="train.csv and test.csv"):
        dataset.load_csv_dir(tmp_path)
    (tmp_path / "train.csv").write_text("sentence,intent\nhi,x\n")
    (tmp_path / "test.csv").write_text("sentence,intent\nhi,x\n")
    with pytest.raises(Banking77Error, match="text,category"):
        dataset.load_csv_dir(tmp_path)
    (tmp_path / "train.csv").write_text("text,category\nhi,x\n")
    (tmp_path / "test.csv").write_text("text,category\nho,y\n")
    with pytest.raises(Banking77Error, match="never uses"):
        dataset.load_csv_dir(tmp_path)
    with pytest.raises(Banking77Error, match="CSV_DIR"):
        dataset.load_banking77("csv")
    with pytest.raises(Banking77Error, match="unknown data source"):
        dataset.load_banking77("kaggle")


def test_hub_offline_gives_a_clear_message_not_a_traceback(tmp_path):
    code = textwrap.dedent("""
        from tpu_helpers.banking77 import dataset
        try:
            dataset.load_banking77("hub")
        except dataset.Banking77Error as e:
            print("CLEAR:", e)
    """)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "CLEAR:" in out.stdout and "PolyAI/banking77@refs/convert/parquet" in out.stdout
    assert "DATA_SOURCE='synthetic'" in out.stdout and "Traceback" not in out.stdout + out.stderr


def test_tiny_tokenizer_and_lengths(synthetic):
    tok = dataset.load_tokenizer("tiny", synthetic.dataset["train"]["text"], vocab_size=500)
    assert type(tok).__name__ == "BertTokenizer" and tok.is_fast and tok.cls_token == "[CLS]" and 50 < len(tok) <= 500
    texts = synthetic.dataset["test"]["text"][:5]
    lengths = dataset.token_lengths(texts, tok)
    assert lengths == [len(tok(t)["input_ids"]) for t in texts] and min(lengths) >= 3
    summary = dataset.length_summary([5, 10, 20, 40], 16)
    assert summary["truncated_share"] == 0.5 and summary["longest"] == 40
    assert summary["padding_share"] == pytest.approx(1 - (5 + 10 + 16 + 16) / 64)


def test_tiny_model_takes_its_labels_from_the_dataset(synthetic):
    model = dataset.make_model("tiny", synthetic, vocab_size=300, max_length=16)
    cfg = model.config
    assert (cfg.num_labels, cfg.hidden_size, cfg.num_hidden_layers, cfg.num_attention_heads) == (77, 64, 2, 2)
    assert cfg.id2label == synthetic.id2label and cfg.label2id == synthetic.label2id
    assert cfg._attn_implementation == "eager"


def test_unloadable_hub_model_suggests_the_tiny_one(synthetic, monkeypatch):
    import huggingface_hub.constants as hc
    import transformers.utils.hub as th

    monkeypatch.setattr(hc, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(th, "_is_offline_mode", True, raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", "/nonexistent-tpu-course-cache")
    with pytest.raises(Banking77Error, match="MODEL='tiny'"):
        dataset.load_tokenizer("bert-base-uncased-not-cached-anywhere")
    with pytest.raises(Banking77Error, match="MODEL='tiny'"):
        dataset.make_model("bert-base-uncased-not-cached-anywhere", synthetic)


def test_tokenize_without_padding_keeps_each_querys_length_for_the_buckets(synthetic):
    from tpu_helpers.banking77.lesson_cells import tokenize

    tok = dataset.load_tokenizer("tiny", synthetic.dataset["train"]["text"], vocab_size=500)
    enc = tokenize(synthetic.dataset, tok, 16)  # notebook 05's
    texts = list(synthetic.dataset["train"]["text"])
    lengths = [min(n, 16) for n in dataset.token_lengths(texts, tok)]
    assert [len(x) for x in enc["train"]["input_ids"]] == lengths  # truncated at 16, never padded
    assert sorted(enc["train"].column_names) == ["attention_mask", "input_ids", "labels", "token_type_ids"]
    assert enc["train"]["labels"] == synthetic.dataset["train"]["label"]
    assert isinstance(enc["train"][0]["input_ids"], list)  # plain lists: the collator pads them per batch


def test_a_csv_from_a_spreadsheet_loads(tmp_path):
    (tmp_path / "train.csv").write_bytes("\ufefftext,category\nmy card,card_arrival\n".encode("utf-8"))  # Excel's BOM
    (tmp_path / "test.csv").write_text("text,category\nwhere is it,card_arrival\n", encoding="utf-8")
    assert dataset.load_csv_dir(tmp_path)["train"]["text"] == ["my card"]


@pytest.mark.parametrize("call", ["dataset.load_tokenizer('bert-base-uncased')", "dataset.load_banking77('hub')"])
def test_an_unreachable_hub_fails_fast_with_the_offline_choice(tmp_path, call):
    """No offline flag, no network: one 5 s probe, the cache only, one clear error (was ~60 s of retries)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = textwrap.dedent(f"""
        import time
        from tpu_helpers.banking77 import dataset
        start = time.monotonic()
        try:
            {call}
        except dataset.Banking77Error as e:
            print("CLEAR:", e)
        print("SECONDS:", time.monotonic() - start)
    """)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_OFFLINE")}
    env.update(HF_ENDPOINT=f"http://127.0.0.1:{port}", HF_HOME=str(tmp_path / "hf"))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "CLEAR:" in out.stdout and "did not answer within 5 s" in out.stdout, out.stdout + out.stderr[-2000:]
    assert ("MODEL='tiny'" if "tokenizer" in call else "DATA_SOURCE='synthetic'") in out.stdout
    assert float(out.stdout.split("SECONDS:")[1]) < 15 and "Traceback" not in out.stdout + out.stderr
