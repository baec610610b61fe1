"""Notebook 04 on real English text: its context claims asserted on a learner's run, in CI.

The notebooks group runs notebook 04 at the ``ci`` profile on the course's generated text, where the run is too small
to leave the unigram plateau and the context claims are only printed. Here the notebook runs as a learner with their
own text runs it: the ``cpu`` profile (32-token blocks, 2,000 steps at most), ``CORPUS`` a ``.txt`` file of real
prose, copied alone into an empty folder, in a kernel of its own. Its cells must then assert that the model reads the
context: the loss at the masks clearly below the unigram entropy, worse with the context shuffled, and different top
guesses for different prompts.

The text is the prose of the Python Language Reference that every CPython carries (`python_docs_paragraphs`, the
notebook's ``CORPUS = "python-docs"``), written to a ``.txt`` file as a learner's text would be: about 330 KB of
English written by people, on every machine and offline. The measurements behind the cpu profile used 1.1 MB of other
real English (docs/benchmarks.md). About 2.5 minutes on the 2-core reference machine.
"""
from course_testing import ROOT, run_notebook_alone

from tpu_helpers.mlm.sources import python_docs_paragraphs

NOTEBOOK = ROOT / "notebooks" / "04_mlm_from_scratch_tensorflow.ipynb"


def test_notebook_04_reads_the_context_of_real_text_at_the_cpu_profile(tmp_path, monkeypatch):
    corpus = tmp_path / "python-reference.txt"  # the learner's own text: a .txt file, one paragraph a line
    corpus.write_text("\n".join(python_docs_paragraphs()) + "\n", encoding="utf-8")
    recorded = run_notebook_alone(NOTEBOOK, tmp_path, monkeypatch, profile="cpu",
                                  parameters={"CORPUS": str(corpus), "WORK_DIR": str(tmp_path / "work")})
    assert recorded["corpus"].startswith("local:"), recorded
    assert recorded["context claims"] == "asserted", recorded  # not the plan's NOTE: the cells asserted them
