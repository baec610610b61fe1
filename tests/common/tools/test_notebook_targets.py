"""A notebook meant for somewhere other than a hosted runtime (``metadata.tpu_course.target``, notebook 08: a Cloud TPU
VM slice) says so on its badge row and in colab_links.md; an unknown target is a convention problem."""
import nbformat
import notebook_conventions as nc


def test_the_badge_row_and_the_links_name_the_target():
    badge = nc.badge_source("08_x.ipynb", target="tpu-vm-slice")
    assert badge.startswith(nc.badge_source("08_x.ipynb")) and "not Colab or Kaggle" in badge
    slice_notebooks = [p for p in nc.notebook_paths()
                       if nbformat.read(p, as_version=4).metadata["tpu_course"].get("target") == "tpu-vm-slice"]
    assert slice_notebooks, "notebook 08 is for a TPU VM slice"
    text = nc.links_markdown(slice_notebooks)
    assert "for a Cloud TPU VM slice, not Colab/Kaggle" in text


def test_an_unknown_target_is_reported(tmp_path):
    path = next(p for p in nc.notebook_paths() if p.name.startswith("08_"))
    nb = nbformat.read(path, as_version=4)
    nb.metadata["tpu_course"]["target"] = "mainframe"
    bad = tmp_path / path.name
    nbformat.write(nb, bad)
    assert any("target must be one of" in p for p in nc.problems(bad))
