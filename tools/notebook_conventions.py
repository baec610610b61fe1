"""The course's notebook conventions, in one place: generated cells, normalisation and checks.

Every notebook in notebooks/ is named ``NN_slug.ipynb`` (NN = 00, 01, ... without gaps) and has:
  cell 0  the "Open in Colab" / "Open in Kaggle" badges (generated: `badge_source`);
  cell 1  the install cell (generated: `install_source`, from the plans of `install_plan`), tagged ``install``
          and ``nbval-skip``: it installs the pinned stack only on Colab/Kaggle and does nothing anywhere else;
  one cell tagged ``parameters`` (papermill convention) holding every knob the notebook reads, written so that
          ``papermill --help-notebook`` lists each one with its help (`parameter_problems`);
  no outputs (except cells marked ``# NBVAL_CHECK_OUTPUT``), the kernelspec of its framework's kernel
  (``tpu-course-tf`` / ``-torch`` / ``-jax``: `./course setup` registers them, on a TPU VM one environment each),
  and metadata limited to kernelspec, language_info and ``tpu_course``: the notebook's framework ("tf", "torch", "jax")
  and its lesson package (``"package": "tpu_helpers.xla_tf"``). The package is one hop from the notebook: a folder
  of tpu_helpers/ whose ``__init__`` declares the same ``FRAMEWORK`` and ``NOTEBOOK``, with ``exercise_checks.py`` and
  ``solutions.py``; the notebook imports its checks from it, and no module of it imports the other framework.
The badges and the install cell point at the notebook's own revision: the tag ``v<version>`` of pyproject.toml.
`./course links` regenerates the badge and install cells and colab_links.md; tests/common/tools/test_notebook_conventions.py
fails when anything here is out of date.
"""
from __future__ import annotations

import ast
import inspect
import logging
import os
import re
from pathlib import Path

import install_plan
import nbformat

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
LINKS = ROOT / "colab_links.md"
# The GitHub repository the badges point to. A fork regenerates them: TPU_COURSE_GITHUB=me/tpu-course ./course links
GITHUB_REPO = os.environ.get("TPU_COURSE_GITHUB", "tpu-course/tpu-course")
VERSION = install_plan.project_version()
REVISION = f"v{VERSION}"  # the git tag of this version: a notebook opened from it installs the helpers of it
NAME_RE = re.compile(r"^(\d\d)_[a-z0-9_]+\.ipynb$")
FRAMEWORKS = ("tf", "torch", "jax")
KERNELSPECS = {
    "tf": {"display_name": "tpu-course · TensorFlow", "language": "python", "name": "tpu-course-tf"},
    "torch": {"display_name": "tpu-course · PyTorch/XLA", "language": "python", "name": "tpu-course-torch"},
    "jax": {"display_name": "tpu-course · JAX", "language": "python", "name": "tpu-course-jax"},
}
LABELS = {"tf": "TensorFlow", "torch": "PyTorch/XLA", "jax": "JAX"}
LANGUAGE_INFO = {"name": "python"}
CHECK_OUTPUT_MARK = "NBVAL_CHECK_OUTPUT"
# A section's claims are asserted in one cell after its lesson cells, tagged ``check``: its source is folded
# (``FOLDED``) and starts with a ``#@title`` line, Colab's name for the folded cell. The learner's answer cell is
# tagged ``exercise``, the cell that checks it ``exercise-check``. No other code cell holds an ``assert``.
CHECK_TAG, EXERCISE_CHECK_TAG = "check", "exercise-check"
MEASURE_TAG = "measure"  # a cell that only measures for a check (tools/course_stats.py finds untagged ones)
FOLDED = {"jupyter": {"source_hidden": True}, "cellView": "form"}

def notebook_paths(folder: Path = NOTEBOOKS) -> list[Path]:
    return sorted(folder.glob("*.ipynb"))


def colab_url(name: str, repo: str = GITHUB_REPO) -> str:
    return f"https://colab.research.google.com/github/{repo}/blob/{REVISION}/notebooks/{name}"


def kaggle_url(name: str, repo: str = GITHUB_REPO) -> str:
    return f"https://kaggle.com/kernels/welcome?src=https://github.com/{repo}/blob/{REVISION}/notebooks/{name}"


REPO_FILE_RE = re.compile(r"https://github\.com/[\w.-]+/[\w.-]+/blob/v[\w.]+/((?:tpu_helpers|tests|benchmarks|docs|tools)/)")


def repo_file_url(path: str, repo: str = GITHUB_REPO) -> str:
    """A file of this repository at the notebook's own tag: what a learner on Colab (no checkout) can open."""
    return f"https://github.com/{repo}/blob/{REVISION}/{path}"


def retag_repo_links(source: str, repo: str = GITHUB_REPO) -> str:
    """Point a cell's links to this repository's files at `repo` and this version's tag (``./course links``)."""
    return REPO_FILE_RE.sub(lambda m: repo_file_url(m.group(1), repo), source)


RECIPE_TAG = "tpu-vm-recipe"  # the markdown cell (notebook 03) whose bash block is the Cloud TPU VM recipe
README = ROOT / "README.md"
README_RECIPE = re.compile(r"(<!-- tpu-vm-recipe:start -->\n```bash\n).*?(\n```\n<!-- tpu-vm-recipe:end -->)", re.S)
CELL_RECIPE = re.compile(r"(```bash\n).*?(\n```)", re.S)


def tpu_vm_recipe(repo: str = GITHUB_REPO) -> str:
    """The Cloud TPU VM recipe, the one source of README's block and notebook 03's: create, connect with the
    Jupyter port forwarded, one environment per framework (``./course setup --tpu``), Jupyter, delete."""
    folder = repo.split("/")[-1]
    return "\n".join([
        "gcloud compute tpus tpu-vm create my-tpu --zone=us-central1-a --accelerator-type=v5litepod-8 \\",
        "    --version=v2-alpha-tpuv5-lite",
        "gcloud compute tpus tpu-vm ssh my-tpu --zone=us-central1-a -- -L 8888:localhost:8888",
        "# on the VM:",
        f"git clone https://github.com/{repo} && cd {folder} && git checkout {REVISION}",
        "./course setup --tpu     # one environment and Jupyter kernel per framework, each with its TPU build:",
        "                         #   tpu-course-tf (tensorflow-tpu + libtpu), tpu-course-torch (torch_xla + libtpu)",
        "./course lab             # prints http://127.0.0.1:8888/lab?token=... (open it on your machine) and the tunnel",
        "# back on your machine, when you are done (a TPU VM is billed while it exists):",
        "gcloud compute tpus tpu-vm delete my-tpu --zone=us-central1-a",
    ])


def with_recipe(text: str, pattern: re.Pattern, repo: str = GITHUB_REPO) -> str:
    """`text` with its recipe block (README's markers, or a cell's bash fence) replaced by `tpu_vm_recipe`."""
    if not pattern.search(text):
        raise ValueError("no TPU VM recipe block found (README: the tpu-vm-recipe markers; notebook 03: a ```bash "
                         "block in the cell tagged tpu-vm-recipe)")
    return pattern.sub(lambda m: m.group(1) + tpu_vm_recipe(repo) + m.group(2), text, count=1)


# Where a notebook is meant to run, when that is not a hosted runtime (``metadata.tpu_course.target``): said on its
# badge row and in colab_links.md, next to the badges (which still open it, to read it and run its CPU rehearsal).
TARGETS = {
    "tpu-vm-slice": "**For a Cloud TPU VM slice, not Colab or Kaggle:** a hosted runtime is one TPU host. Open it "
                    "there to read it and to run its CPU rehearsal; section 2 gives the commands for a slice.",
}


def notebook_target(nb: nbformat.NotebookNode) -> str | None:
    target = nb.metadata.get("tpu_course", {}).get("target")
    if target is not None and target not in TARGETS:
        raise ValueError(f"metadata.tpu_course.target must be one of {sorted(TARGETS)} (or absent), not {target!r}")
    return target


def badge_source(name: str, repo: str = GITHUB_REPO, target: str | None = None) -> str:
    badges = (f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({colab_url(name, repo)}) "
              f"[![Open In Kaggle](https://kaggle.com/static/images/open-in-kaggle.svg)]({kaggle_url(name, repo)})")
    return badges + (f"\n\n{TARGETS[target]}" if target else "")


PIP_FUNCTION = '''
def pip(call):
    """Run pip with its output shown; return the lines of its dependency-conflict report."""
    proc = subprocess.Popen([sys.executable, "-m", "pip", *call], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    report = []
    for line in proc.stdout:
        print(line, end="", flush=True)
        if conflict_parts(line) and (", but you have " in line or "which is not installed" in line):
            report.append(line.strip())
    if proc.wait():
        raise SystemExit(f"pip {' '.join(call)} failed (exit {proc.returncode}): its output is above.")
    return report
'''.strip("\n")

RUN_PLAN = '''
if os.environ.get("COLAB_RELEASE_TAG") or os.environ.get("KAGGLE_KERNEL_RUN_TYPE"):
    image = "colab" if os.environ.get("COLAB_RELEASE_TAG") else "kaggle"
    python = "%d.%d" % sys.version_info[:2]
    if python not in (PYTHONS):
        raise SystemExit(f"This runtime has Python {python}; the course supports 3.11-3.13. Pick another "
                         "runtime version (Colab: Runtime > Change runtime type).")
    if os.environ.get("TPU_ACCELERATOR_TYPE") or any(os.path.exists(p) for p in ("/dev/accel0", "/dev/vfio/0")):
        accelerator = "tpu"
    elif os.environ.get("COLAB_GPU") or os.path.exists("/dev/nvidia0"):
        accelerator = "gpu"
    else:
        accelerator = "cpu"
    key = next(k for k in (f"{accelerator}-{image}", f"{accelerator}-py{python}", accelerator) if k in PLANS)
    print(f"{image} runtime, {accelerator.upper()}, Python {python}: plan {key!r}", flush=True)
    if key in NOTES:
        print(NOTES[key], flush=True)
    conflicts = []
    for call in PLANS[key]:
        print("pip", *call, flush=True)
        conflicts += pip(call)
    # pip's red "ERROR: pip's dependency resolver does not currently take into account ..." lists packages whose
    # requirements the new versions break: say which of them are expected
    conflicts = list(dict.fromkeys(conflicts))
    course = course_distributions(plan_roots(PLANS[key])) if conflicts else set()
    for line in conflicts:
        if conflict_parts(line) in KNOWN_CONFLICTS:
            print(f"Expected: {line!r} ({KNOWN_CONFLICTS[conflict_parts(line)]}).")
    others = sorted({conflict_parts(ln)[0] for ln in conflicts if conflict_parts(ln)[0] not in course})
    if others:
        print(f"Expected and harmless: pip's ERROR lines above about {', '.join(others)}. The course does not use "
              "these packages of the image; they want other versions of packages the course pins, so they may not "
              "work in this session (a new runtime restores them). The course's own packages agree.")
    ours = [ln for ln in conflicts if conflict_parts(ln)[0] in course and conflict_parts(ln) not in KNOWN_CONFLICTS]
    if ours:
        print("Not expected: pip reports a conflict among the course's own packages (please report it with this "
              "cell's output):", *ours, sep="\\n")
    print(f"Installed for a {accelerator.upper()} runtime. If pip replaced a package that was already imported, "
          "restart the runtime (Colab: Runtime > Restart session; Kaggle: Run > Restart & clear cell outputs) and run "
          "from the top.")
else:
    print("Not on Colab/Kaggle: nothing to install (./course set up the pinned environment).")
'''.strip("\n")


def install_source(framework: str, repo: str = GITHUB_REPO) -> str:
    """The install cell: on Colab/Kaggle it runs the pip calls of `install_plan.plan_variants` for the runtime
    (its accelerator, image and Python), then says which of pip's conflict lines are expected; anywhere else it does
    nothing. ``TPU_COURSE_HELPER`` replaces the helper package's requirement (a wheel file or another revision) and
    ``TPU_COURSE_TORCH_CPU_INDEX`` PyTorch's CPU index (the hosted rehearsal, with no route to it, names PyPI)."""
    pins = install_plan.read_pins(framework)  # that framework's pinned set (requirements-common.txt + its own file)
    plans = install_plan.plan_variants(framework, repo, pins, VERSION)
    helper = install_plan.helper_spec(repo, VERSION)
    index = install_plan.TORCH_CPU_INDEX
    label = LABELS[framework]
    notes = {key: install_plan.plan_note(framework, key) for key in plans}
    known = {k: v for k, v in install_plan.KNOWN_CONFLICTS.items()
             if any(k[0] in " ".join(c) for calls in plans.values() for c in calls)}
    lines = [
        "#@title Install the course's packages on Colab or Kaggle (does nothing locally)",
        "# Install cell (generated by ./course links from tools/install_plan.py): does something only on Colab /",
        "# Kaggle. Locally, `./course` has already installed the pinned stack and this course's package.",
        "import os, re, subprocess, sys",
        "",
        f'HELPER = os.environ.get("TPU_COURSE_HELPER") or {helper!r}  # this notebook\'s own revision',
    ]
    if any(index in call for calls in plans.values() for call in calls):
        lines.append(f'TORCH_CPU_INDEX = os.environ.get("TPU_COURSE_TORCH_CPU_INDEX") or {index!r}')
    lines.append(f"PLANS = {{  # the pip calls for this notebook's framework ({label}), per runtime")
    for key, calls in plans.items():
        lines.append(f"    {key!r}: [")
        lines += [f"        {call!r},".replace(repr(helper), "HELPER").replace(repr(index), "TORCH_CPU_INDEX")
                  for call in calls]
        lines.append("    ],")
    lines.append("}")
    lines.append("NOTES = {  # what a plan downloads and how long it takes (tools/rehearse_hosted.py measures it)")
    lines += [f"    {key!r}: {note!r}," for key, note in notes.items() if note]
    lines.append("}")
    lines.append(f"KNOWN_CONFLICTS = {known!r}  # pip's lines about the course's own packages that are expected")
    for function in (install_plan.conflict_parts, install_plan.course_distributions, install_plan.plan_roots):
        lines += ["", "", inspect.getsource(function).rstrip()]
    lines += ["", "", PIP_FUNCTION, "", "",
              RUN_PLAN.replace("(PYTHONS)", "(" + ", ".join(repr(p) for p in install_plan.PYTHONS) + ")")]
    return "\n".join(lines)


def _tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def normalise(nb: nbformat.NotebookNode, framework: str | None = None) -> nbformat.NotebookNode:
    """Strip outputs and volatile metadata; keep tags; set the kernelspec."""
    meta = nb.get("metadata", {})
    course = dict(meta.get("tpu_course", {}))
    if framework:
        course["framework"] = framework
    nb.metadata = nbformat.from_dict({"kernelspec": KERNELSPECS.get(course.get("framework"), KERNELSPECS["tf"]),
                                      "language_info": LANGUAGE_INFO, "tpu_course": course})
    for i, cell in enumerate(nb.cells):
        tags = _tags(cell)
        cell.metadata = nbformat.from_dict({"tags": tags} if tags else {})
        if set(tags) & {CHECK_TAG, MEASURE_TAG, "install"}:  # folded where the notebook is opened: Jupyter's
            # source_hidden, Colab's form view (the install cell too: the first screen is the title, not pip)
            cell.metadata.update(FOLDED)
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
    badge = nbformat.v4.new_markdown_cell(badge_source(path.name, repo, notebook_target(nb)))
    install = nbformat.v4.new_code_cell(install_source(framework, repo))
    install.metadata["tags"] = ["install", "nbval-skip"]
    cells = list(nb.cells)
    if cells and cells[0].cell_type == "markdown" and "colab-badge.svg" in cells[0].source:
        cells = cells[1:]
    if cells and "install" in _tags(cells[0]):
        cells = cells[1:]
    for cell in cells:
        cell.source = retag_repo_links(cell.source, repo)
        if RECIPE_TAG in _tags(cell):
            cell.source = with_recipe(cell.source, CELL_RECIPE, repo)
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
        where = " (for a Cloud TPU VM slice, not Colab/Kaggle: they run its CPU rehearsal only)" \
            if notebook_target(nb) == "tpu-vm-slice" else ""
        lines.append(f"| `{p.name}`{where} | {LABELS.get(fw, fw)} | "
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
    if framework in FRAMEWORKS and meta.get("kernelspec") != KERNELSPECS[framework]:
        out.append(f"kernelspec must be {KERNELSPECS[framework]['name']} (run ./course links)")
    cells = nb.cells
    try:
        target = notebook_target(nb)
    except ValueError as error:
        out.append(str(error))
        target = None
    if not cells or cells[0].cell_type != "markdown" or cells[0].source != badge_source(path.name, repo, target):
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
    else:
        out += [f"parameters cell: {p}" for p in parameter_problems(cells[params[0]].source)]
    for i, c in enumerate(cells):
        if c.cell_type == "code" and (c.get("outputs") or c.get("execution_count")) and \
                CHECK_OUTPUT_MARK not in c.source:
            out.append(f"cell {i} has committed outputs")
        if set(c.get("metadata", {})) - {"tags", *FOLDED}:
            out.append(f"cell {i} has metadata other than tags (and a check cell's folding)")
    sources = "\n".join(c.source for c in cells if c.cell_type == "code")
    out += package_problems(meta.get("tpu_course", {}).get("package"), framework, path.stem, sources)
    out += lesson_problems(nb)
    if nbformat.writes(normalise(nbformat.reads(raw, as_version=4))) + "\n" != raw:
        out.append("not normalised (run ./course links)")
    return out


def parameter_problems(source: str) -> list[str]:
    """What keeps papermill from listing a parameters cell's knobs (``papermill --help-notebook``, ``-p NAME``).

    The format: one parameter per line, ``NAME = LITERAL  # help``; other lines only blank or ``#`` comments.
    papermill's own parser (`papermill.translators.PythonTranslator.inspect`) splits the cell at every ``=``: a
    line with a second ``=`` (in the help, or a ``==``) is skipped ("Unable to parse line"), and ``-p NAME`` then
    warns "Passed unknown parameter". So the help must say "None: automatic", never "None = automatic".
    """
    from papermill.translators import PythonTranslator

    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        return [f"not valid Python ({e.msg}, line {e.lineno})"]
    out, assigned = [], []
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
        if not isinstance(target, ast.Name) or node.lineno != node.end_lineno:
            out.append(f"line {node.lineno}: only one-line `NAME = value  # help` assignments belong here")
            continue
        try:
            ast.literal_eval(node.value)
        except ValueError:
            out.append(f"line {node.lineno}: {target.id} must be a literal (a number, string, None, True/False, "
                       "list or dict), which papermill can replace")
        assigned.append(target.id)
    papermill_log = logging.getLogger("papermill")
    level = papermill_log.level
    papermill_log.setLevel(logging.ERROR)  # its "Unable to parse line" warnings: reported below, in our words
    try:
        listed = {p.name: p for p in PythonTranslator.inspect({"source": source})}
    finally:
        papermill_log.setLevel(level)
    for name in assigned:
        if name not in listed:
            out.append(f"{name}: papermill cannot parse its line (a second '=' in it? write 'None: automatic', "
                       "not 'None = automatic')")
        elif not listed[name].help:
            out.append(f"{name}: no help: end its line with `# what it does` (papermill --help-notebook shows it)")
    return out


# what a package of one framework must never import (TensorFlow and torch_xla cannot share a process)
FORBIDDEN = {"tf": ("torch_xla", "accelerate", "torch", "jax", "flax"), "torch": ("tensorflow", "tf_keras", "keras"),
             "jax": ("tensorflow", "tf_keras", "keras", "torch", "torch_xla", "accelerate", "transformers")}
FRAMEWORK_FREE = ("tensorflow", "tf_keras", "keras", "torch", "torch_xla", "accelerate", "jax", "flax")


def _declared(init: Path) -> dict[str, object]:
    """The constants FRAMEWORK and NOTEBOOK of a lesson package's __init__.py (read, not imported)."""
    out = {}
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass
    return out


def imported_modules(path: Path) -> set[str]:
    """The top-level names of every module a Python file imports (anywhere in it, lazily or not)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def package_problems(package: str | None, framework: str | None, stem: str, sources: str,
                     root: Path = ROOT) -> list[str]:
    """The link between a notebook and its lesson package (``metadata.tpu_course.package``)."""
    if not package or not re.fullmatch(r"tpu_helpers\.[a-z][a-z0-9_]*", package):
        return ["metadata.tpu_course.package must name the notebook's lesson package, e.g. tpu_helpers.xla_tf"]
    folder = root / Path(*package.split("."))
    if not (folder / "__init__.py").is_file():
        return [f"{package} (metadata.tpu_course.package) is not a package of tpu_helpers/"]
    out = []
    declared = _declared(folder / "__init__.py")
    if declared.get("FRAMEWORK") != framework:
        out.append(f"{package}.FRAMEWORK is {declared.get('FRAMEWORK')!r}, the notebook's framework is {framework!r}")
    if declared.get("NOTEBOOK") != stem:
        out.append(f"{package}.NOTEBOOK is {declared.get('NOTEBOOK')!r}, not this notebook ({stem!r})")
    for name in ("exercise_checks.py", "solutions.py"):
        if not (folder / name).is_file():
            out.append(f"{package} has no {name} (every lesson package holds its exercises' checks and answers)")
    if not re.search(rf"^\s*from {re.escape(package)} import exercise_checks\b", sources, re.M):
        out.append(f"the notebook must import its exercise checks from its own package ({package}.exercise_checks)")
    for module in sorted(folder.rglob("*.py")):
        bad = sorted(imported_modules(module) & set(FORBIDDEN.get(framework, ())))
        if bad:
            out.append(f"{module.relative_to(root)} imports {', '.join(bad)}: a {framework} package must not")
    return out


def framework_free_problems(root: Path = ROOT) -> list[str]:
    """tpu_helpers' core/, shared/ and top-level modules import no ML framework (a lesson of either kind uses them)."""
    out = []
    tpu = root / "tpu_helpers"
    for module in sorted([*tpu.glob("*.py"), *(tpu / "core").rglob("*.py"), *(tpu / "shared").rglob("*.py")]):
        bad = sorted(imported_modules(module) & set(FRAMEWORK_FREE))
        if bad and module.name != "frameworks.py":  # frameworks.py names both only to keep them apart
            out.append(f"{module.relative_to(root)} imports {', '.join(bad)}; core and shared must stay framework-free")
    return out


def numbering_problems(paths: list[Path]) -> list[str]:
    numbers = [int(m.group(1)) for p in paths if (m := NAME_RE.match(p.name))]
    if numbers != list(range(len(numbers))):
        return [f"notebook numbers must run 00, 01, ... without gaps or repeats (found {numbers})"]
    return []


ASSERT_RE = re.compile(r"^\s*assert\b", re.M)


def _code_only(source: str) -> str:
    """A cell's code without its strings and comments (a message saying "lower BATCH_SIZE or ..." is not code)."""
    import io
    import tokenize

    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return source
    return " ".join(t.string for t in tokens if t.type not in (tokenize.STRING, tokenize.COMMENT))


def _claims_left_unasserted(source: str) -> list[str]:
    """The names of ``with Claims(...) as NAME:`` blocks whose next statement is not ``assert NAME.passed, NAME.why``."""
    try:
        tree = ast.parse(source)
    except SyntaxError:  # a cell with IPython syntax: the notebook run itself reports real errors
        return []
    missing = []
    for node in ast.walk(tree):
        for body in (getattr(node, field, None) for field in ("body", "orelse", "finalbody")):
            for k, stmt in enumerate(body if isinstance(body, list) else []):
                item = stmt.items[0] if isinstance(stmt, ast.With) and len(stmt.items) == 1 else None
                call = item.context_expr if item is not None else None
                if not (isinstance(call, ast.Call) and getattr(call.func, "id", None) == "Claims"
                        and isinstance(item.optional_vars, ast.Name)):
                    continue
                name = item.optional_vars.id
                after = body[k + 1] if k + 1 < len(body) else None
                if not (isinstance(after, ast.Assert) and ast.unparse(after) == f"assert {name}.passed, {name}.why"):
                    missing.append(name)
    return missing


def lesson_problems(nb: nbformat.NotebookNode) -> list[str]:
    """Where the proof is not folded: an ``assert`` outside check cells, a check cell without its title, a
    parameter resolved with ``X or default`` (``BATCH_SIZE = 0`` would train with the default: use profiles.param)."""
    out = []
    cells = nb.cells
    checks = [i for i, c in enumerate(cells) if CHECK_TAG in _tags(c)]
    if not checks:
        out.append("no cell tagged 'check': which claim does this notebook prove?")
    params = next((c for c in cells if "parameters" in _tags(c)), None)
    names = re.findall(r"^([A-Z][A-Z0-9_]*)\s*=", params.source, re.M) if params is not None else []
    or_default = re.compile(r"\b(" + "|".join(names) + r")\s+or\b") if names else None
    for i, c in enumerate(cells):
        if c.cell_type != "code":
            continue
        tags = set(_tags(c))
        if ASSERT_RE.search(c.source) and not tags & {CHECK_TAG, EXERCISE_CHECK_TAG}:
            out.append(f"cell {i} asserts but is not tagged '{CHECK_TAG}' or '{EXERCISE_CHECK_TAG}': fold the claim "
                       "into the section's check cell")
        if CHECK_TAG in tags and not c.source.startswith("#@title "):
            out.append(f"cell {i} is tagged '{CHECK_TAG}' but does not start with a '#@title ...' line")
        for name in _claims_left_unasserted(c.source) if CHECK_TAG in tags else ():
            out.append(f"cell {i}: the 'with Claims(...) as {name}:' block is not followed by "
                       f"'assert {name}.passed, {name}.why'")
        found = or_default.search(_code_only(c.source)) if or_default and "parameters" not in tags else None
        if found:
            out.append(f"cell {i} resolves {found.group(1)} with 'or': use profiles.param(...) (None is the "
                       "default, anything else is checked)")
    return out
