"""Notebook 04 as a script (examples/mlm_from_scratch_tensorflow.py, exported from its save cells): a tiny run on
text the test writes, in a process where `import tpu_helpers` fails."""
import re

from course_support.examples import run_example

from tpu_helpers.shared import synthetic_text

TINY = ["--vocab-size", "300", "--block-size", "32", "--per-replica-batch", "16", "--steps", "8",
        "--steps-per-execution", "4", "--hidden-size", "32", "--layers", "1", "--heads", "2",
        "--records-per-shard", "200"]


def test_the_script_pretrains_on_your_text_and_fills_in_blanks(tmp_path):
    corpus = tmp_path / "texts" / "corpus.txt"
    corpus.parent.mkdir()
    corpus.write_text("\n".join(synthetic_text.iter_paragraphs(max_chars=60_000)) + "\n", encoding="utf-8")
    done = run_example("mlm_from_scratch_tensorflow", "--corpus", str(corpus.parent),
                       "--data-dir", str(tmp_path / "data"), "--output-dir", str(tmp_path / "model"), *TINY)
    out = done.stdout
    assert done.returncode == 0, (out + done.stderr)[-4000:]
    assert "4 shards in" in out and "8 steps" in out and re.search(r"loss \d+\.\d+ \(ln\(vocab\) = ", out), out
    assert "runs/run/ckpt-8" in out and (tmp_path / "model" / "tf_model.h5").exists()
    assert len(re.findall(r"<mask>.* -> '", out)) == 3, out  # three sentences of the corpus, three guesses each


def test_the_script_says_what_its_flags_are():
    done = run_example("mlm_from_scratch_tensorflow", "--help")
    assert done.returncode == 0 and "--corpus" in done.stdout and "--tpu" in done.stdout, done.stdout
