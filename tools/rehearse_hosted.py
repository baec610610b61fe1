"""Rehearse today's hosted runtimes (Colab's TPU, CPU and GPU, Kaggle's TPU) on this CPU: each image's packages on
its Python, the notebook's install cell run verbatim on top, then ``pip check`` and the course's notebooks.

    ./course python tools/rehearse_hosted.py                      # every target and framework
    ./course python tools/rehearse_hosted.py colab-cpu torch      # one

For each target (`TARGETS`: the image snapshot in ``tools/images/`` and the Python it runs):

1. **The image**: a virtual environment on the image's Python with the snapshot's packages at their versions
   (``--no-deps``: exactly the image, no resolution). What the package registry cannot give is replaced or left
   out, and ``image.txt`` in the environment says which: a CPU wheel of torch from PyTorch's own index
   (``torch @ https://download.pytorch.org/...+cpu``) is stood in for by PyPI's build of the same version, with the
   CUDA libraries that build needs (a GPU image's ``torch==2.11.0+cu128`` likewise by PyPI's ``2.11.0``); system
   packages with no wheel (``python-apt``, ``dbus-python``, ...) are dropped. ``pip check`` of this environment is
   the image's own baseline.
2. **The install cell**: the environment copied (hard links) per framework, and a notebook's install cell run in
   it *verbatim* with the image's variables (``COLAB_RELEASE_TAG`` / ``KAGGLE_KERNEL_RUN_TYPE``,
   ``TPU_ACCELERATOR_TYPE`` / ``COLAB_GPU``), the helper package from the wheel built from this checkout
   (``TPU_COURSE_HELPER``). PyTorch's CPU index is out of this machine's reach: ``TPU_COURSE_TORCH_CPU_INDEX``
   names PyPI instead, whose build of the same versions (the CUDA build) stands in. The first run records what pip
   fetched (its log's sizes, cache hits apart) and how long the cell took in ``install.json``.
3. **pip check**: every line that is not in the image's baseline fails, unless `ALLOWED_PIP_CHECK` documents it or
   it concerns a package of the image that the course does not use (outside `install_plan.course_distributions` of
   the plan): the rule by which the install cell calls pip's conflict lines harmless.
4. **What the lessons need**: TensorFlow builds ``TFAutoModelForMaskedLM.from_config`` through transformers;
   PyTorch imports torchvision, torchaudio, lightning and ``BertForSequenceClassification``; JAX imports flax, optax,
   orbax, grain and notebook 09's saved cells.
5. **The notebooks** (`Target.notebooks`) run at the ``ci`` profile on the CPU in that environment (nbval, each
   alone in an empty folder), with the image's variables but no accelerator: the TPU builds must work off a TPU.

Environments are cached under ``${TPU_COURSE_ENV_ROOT:-~/.cache/tpu-course}/hosted/``, keyed by the snapshot and the
install cell's plans: a rerun repeats steps 2-5 on the cached environment (pip finds everything installed but the helper).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import install_plan  # a sibling tool (tools/__init__.py: how tools import each other)
import stderr_check

ROOT = Path(__file__).resolve().parents[1]

BUILDER_VERSION = "1"  # bump to rebuild every cached image environment


@dataclass(frozen=True)
class Target:
    name: str
    image: str
    accelerator: str  # the snapshot is tools/images/<image>-<accelerator>.txt
    variables: dict = field(default_factory=dict)  # what the runtime sets in every process
    device: dict = field(default_factory=dict)  # what it sets for its accelerator (for the install cell: none here)
    notebooks: dict = field(default_factory=dict)  # {framework: notebook stems} run at the ci profile

    @property
    def snapshot(self) -> Path:
        return install_plan.IMAGES_DIR / f"{self.image}-{self.accelerator}.txt"

    @property
    def python(self) -> str:
        header = install_plan.image_snapshot(self.image, accelerator=self.accelerator)[0]
        return ".".join(header["python"].split(".")[:2])


COLAB = {"COLAB_RELEASE_TAG": "release-colab-rehearsal"}
# TPU images: notebook 00 (the readiness check) and 03 (TPU access) on TensorFlow's TPU build, 02 on torch_xla's;
# JAX: the lessons' imports only (Colab's TPU image has the CPU image's JAX line, which runs notebook 09 below)
TPU_NOTEBOOKS = {"tf": ("00_is_my_runtime_ready", "03_tpu_access_tensorflow"), "torch": ("02_xla_rules_pytorch_xla",),
                 "jax": ()}
# CPU and GPU images: each framework's XLA rules and training notebooks (07 needs lightning, so torchvision; 10 peft
# and FSDPv2 on the image's transformers); 09 on
# the image's own JAX (0.7.2, flax 0.11.2: the install cell keeps them)
CPU_NOTEBOOKS = {"tf": ("01_xla_rules_tensorflow", "04_mlm_from_scratch_tensorflow"),
                 "torch": ("02_xla_rules_pytorch_xla", "05_banking77_accelerate", "07_trainers_lightning_hf",
                           "10_llm_lora_fsdp"),
                 "jax": ("09_banking77_jax_flax",)}
TARGETS = {
    # Colab sets COLAB_RELEASE_TAG in every runtime, TPU_ACCELERATOR_TYPE on a TPU VM (v5e-1: v5litepod-1) and
    # COLAB_GPU on a GPU runtime
    "colab-tpu": Target("colab-tpu", "colab", "tpu", COLAB, {"TPU_ACCELERATOR_TYPE": "v5litepod-1"}, TPU_NOTEBOOKS),
    "colab-cpu": Target("colab-cpu", "colab", "cpu", COLAB, {}, CPU_NOTEBOOKS),
    # No notebooks on the GPU image: with no GPU here its install cell leaves the CPU image's course packages, at the
    # same versions, on the same CPU (its own lines are the CUDA libraries and TensorFlow's [and-cuda] extra)
    "colab-gpu": Target("colab-gpu", "colab", "gpu", COLAB, {"COLAB_GPU": "1"}, {"tf": (), "torch": (), "jax": ()}),
    # Kaggle's TPU Dockerfile sets ISTPUVM and TPU_PROCESS_ADDRESSES; its kernels carry KAGGLE_KERNEL_RUN_TYPE
    "kaggle-tpu": Target("kaggle-tpu", "kaggle", "tpu", {"KAGGLE_KERNEL_RUN_TYPE": "Interactive", "ISTPUVM": "1",
                                                         "TPU_PROCESS_ADDRESSES": "local"},
                         {"TPU_ACCELERATOR_TYPE": "v5litepod-8"}, TPU_NOTEBOOKS),
}
# PyTorch's CPU index is out of CI's reach: PyPI's build of the same versions stands in for it
TORCH_CPU_INDEX_STANDIN = "https://pypi.org/simple"
INSTALL_CELL_FROM = {"tf": "00_is_my_runtime_ready", "torch": "02_xla_rules_pytorch_xla", "jax": "09_banking77_jax_flax"}
# pip check lines the course accepts, each with its reason
ALLOWED_PIP_CHECK = {
    r"tf-keras [0-9.]+ requires tensorflow, which is not installed\.":
        "tf-keras names `tensorflow`; the TPU plan installs `tensorflow-tpu` (the same package) instead, on purpose",
}
# A TPU image off its TPU: nothing of the TPU builds may look for a TPU or a metadata server (a hang, not a failure).
# Not for the CPU and GPU images, which set none of them: with TPU_SKIP_MDS_QUERY=1 and no TPU_ACCELERATOR_TYPE,
# Lightning's TPU probe (notebook 07) fails with a TypeError in torch_xla's tpu.version() instead of "no TPU"
OFF_TPU = {"TPU_SKIP_MDS_QUERY": "1", "PJRT_DEVICE": "CPU", "JAX_PLATFORMS": "cpu"}
LESSON_CHECKS = {
    "tf": ("from tpu_helpers.core.frameworks import use_framework; use_framework('tf'); import transformers; "
           "c = transformers.RobertaConfig(vocab_size=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,"
           " intermediate_size=32, max_position_embeddings=40); "
           "m = transformers.TFAutoModelForMaskedLM.from_config(c); print('TFAutoModelForMaskedLM', type(m).__name__)"),
    "torch": ("from tpu_helpers.core.frameworks import use_framework; use_framework('torch'); "
              "import torchvision, torchaudio, lightning, peft; from transformers import BertForSequenceClassification; "
              "print('torchvision', torchvision.__version__, 'torchaudio', torchaudio.__version__, "
              "'lightning', lightning.__version__, BertForSequenceClassification.__name__)"),
    "jax": ("from tpu_helpers.core.frameworks import use_framework; use_framework('jax'); "
            "import jax, flax, optax, orbax.checkpoint, grain, tokenizers, safetensors; "
            "from tpu_helpers.banking77_jax import exercise_checks; "
            "print('jax', jax.__version__, 'flax', flax.__version__, 'grain imported', grain.__name__)"),
}
VERSIONS_SHOWN = ("tensorflow", "tensorflow-tpu", "tensorflow-cpu", "keras", "tf-keras", "torch", "torch-xla",
                  "torchvision", "torchaudio", "libtpu", "jax", "transformers", "tokenizers", "huggingface-hub", "datasets",
                  "accelerate", "lightning", "tpu-course")


class RehearsalError(RuntimeError):
    """A step of a rehearsal failed; the message says which and shows pip's or Python's last lines."""


def env_root() -> Path:
    return Path(os.environ.get("TPU_COURSE_ENV_ROOT", Path.home() / ".cache" / "tpu-course")) / "hosted"


def find_python(version: str) -> str:
    """An interpreter of `version` ("3.13"): ``python3.13`` on PATH, else pyenv's, else TPU_COURSE_PYTHON313."""
    named = os.environ.get(f"TPU_COURSE_PYTHON{version.replace('.', '')}")
    candidates = [named] if named else []
    candidates.append(shutil.which(f"python{version}"))
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    candidates += sorted((str(p) for p in pyenv.glob(f"{version}.*/bin/python{version}")), reverse=True)
    for c in candidates:  # the first that runs and is that version (pyenv's shims exist but may refuse)
        if c and Path(c).exists() and subprocess.run(
                [c, "-c", f"import sys; assert '%d.%d' % sys.version_info[:2] == '{version}'"],
                capture_output=True).returncode == 0:
            return c
    raise RehearsalError(f"no Python {version} found (the image runs {version}): install it (pyenv install "
                         f"{version}) or set TPU_COURSE_PYTHON{version.replace('.', '')} to its interpreter")


def _run(cmd: list[str], what: str, **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if proc.returncode:
        tail = "\n".join(ln for ln in (proc.stderr + proc.stdout).splitlines() if "is ignored" not in ln)[-3000:]
        raise RehearsalError(f"{what} failed (exit {proc.returncode}):\n{tail}")
    return proc


def _pip(python: str, *args: str, what: str) -> subprocess.CompletedProcess:
    return _run([python, "-m", "pip", "--disable-pip-version-check", *args], what)


def snapshot_requirements(image: str, accelerator: str = "tpu") -> tuple[list[str], dict[str, str]]:
    """The snapshot as ``name==version`` lines, and {name: why} for each line replaced (a wheel the registry has
    under another name or build)."""
    path = install_plan.IMAGES_DIR / f"{image}-{accelerator}.txt"
    lines, standins = [], {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        local = re.fullmatch(r"([A-Za-z0-9_.\-]+)==([^+\s]+)\+(\S+)", line)
        if local:  # torch==2.11.0+cu128 from PyTorch's own index: PyPI's build of the same version stands in
            name, version, build = local.groups()
            lines.append(f"{name}=={version}")
            standins[name] = f"{name}=={version}+{build} -> PyPI's {name}=={version}"
            continue
        m = re.match(r"([A-Za-z0-9_.\-]+) @ (\S+)", line)
        if m:
            name, url = m.groups()
            v = re.search(r"-(\d[\w.]*?)(%2B\w+)?-cp\d+", url)
            if v:
                lines.append(f"{name}=={v.group(1)}")
                standins[name] = f"{url.rsplit('/', 1)[-1]} -> PyPI's {name}=={v.group(1)}"
            else:
                standins[name] = f"left out: {url} is not on the package registry"
            continue
        lines.append(line)
    return lines, standins


def _key(*parts: str) -> str:
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:12]


def image_env(target: Target, log=print) -> Path:
    """The image's environment (built once, then cached)."""
    text = target.snapshot.read_text()
    stem = target.image if target.accelerator == "tpu" else f"{target.image}-{target.accelerator}"
    folder = env_root() / f"image-{stem}-py{target.python}-{_key(text, BUILDER_VERSION)}"
    if (folder / ".complete").exists():
        return folder
    python = find_python(target.python)
    log(f"[{target.name}] building the image environment {folder} (first time: a few minutes)")
    shutil.rmtree(folder, ignore_errors=True)  # an unfinished one of ours (no .complete)
    _run([python, "-m", "venv", str(folder)], "creating the virtual environment")
    py = str(folder / "bin" / "python")
    reqs, standins = snapshot_requirements(target.image, target.accelerator)
    # what an image environment built before on this Python found no wheel for, at the same version
    known = {d.lower() for other in env_root().glob(f"image-*-py{target.python}-*/image.txt")
             for d in json.loads(other.read_text())["left out (no wheel for this Python)"]}
    dropped = [r for r in reqs if r.lower() in known]
    reqs = [r for r in reqs if r.lower() not in known]
    req_file = folder / "image-requirements.txt"
    checked: list[str] = []  # found on the registry: listed last, so that each dry run stops at the next unknown
    for _ in range(120):  # drop, one at a time, what has no wheel for this Python on the registry
        req_file.write_text("\n".join(reqs + checked) + "\n")
        proc = subprocess.run([py, "-m", "pip", "install", "--quiet", "--dry-run", "--no-deps", "--only-binary=:all:",
                               "-r", str(req_file)], capture_output=True, text=True)
        if proc.returncode == 0:
            _pip(py, "install", "--quiet", "--no-deps", "--only-binary=:all:", "-r", str(req_file),
                 what=f"installing the {target.image} image's packages")
            reqs += checked
            break
        bad = re.search(r"No matching distribution found for (\S+)", proc.stderr)
        if not bad:
            raise RehearsalError(f"installing the {target.image} image's packages failed:\n{proc.stderr[-3000:]}")
        dropped.append(bad.group(1))
        at = next((i for i, r in enumerate(reqs) if r.lower() == bad.group(1).lower()), None)
        if at is None:  # pip took the lines in another order than the file's: it was among the ones moved last
            checked = [r for r in checked if r.lower() != bad.group(1).lower()]
        else:
            checked, reqs = reqs[:at] + checked, reqs[at + 1:]
    else:
        raise RehearsalError("too many of the image's packages have no wheel: is the registry reachable?")
    # a stand-in (PyPI's CUDA build of torch for the image's CPU wheel) with what it needs to import
    for name in standins:
        pin = next((r for r in reqs if r.lower().startswith(f"{name.lower()}==")), None)
        if pin:
            _pip(py, "install", "--quiet", "--only-binary=:all:", pin, what=f"installing {pin}'s dependencies")
    baseline = subprocess.run([py, "-m", "pip", "check"], capture_output=True, text=True)  # the image's own lines
    (folder / "pip-check-baseline.txt").write_text(baseline.stdout)
    (folder / "image.txt").write_text(json.dumps({"python": target.python, "stand-ins": standins,
                                                  "left out (no wheel for this Python)": dropped}, indent=1))
    dedupe(env_root())
    (folder / ".complete").touch()
    return folder


OWN_FILES = ("install-cell-output.txt", "install.json", "install-cell-pip.log", "pip-check-baseline.txt", "image.txt")


def dedupe(root: Path) -> None:
    """Identical files of the rehearsal environments kept once (hard links): the images share most of their packages,
    which would otherwise fill the disk (measured: 23.7 of 55 GiB saved). util-linux's ``hardlink`` where the machine
    has it (Debian's base system does); content, mode and owner must match, the files this module rewrites in place
    stay apart. Without it nothing changes but the disk used."""
    tool = shutil.which("hardlink")
    if tool:
        names = "|".join(re.escape(n) for n in OWN_FILES)
        subprocess.run([tool, "--ignore-time", "--quiet", "--exclude", f"(^|/)({names})$", str(root)],
                       capture_output=True)


def _clone(src: Path, dst: Path) -> None:
    """A hard-link copy of a virtual environment, its scripts pointed at the copy."""
    tmp = dst.with_name(dst.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    _run(["cp", "-al", str(src), str(tmp)], "copying the image environment")
    for f in [*(tmp / "bin").iterdir(), tmp / "pyvenv.cfg"]:
        if f.is_file() and not f.is_symlink():
            try:
                text = f.read_text()
            except (UnicodeDecodeError, OSError):
                continue
            if str(src) in text:
                f.unlink()  # break the hard link before writing
                f.write_text(text.replace(str(src), str(dst)))
                f.chmod(0o755)
    (tmp / ".complete").unlink(missing_ok=True)
    tmp.rename(dst)


def install_cell(framework: str, notebooks: Path = ROOT / "notebooks") -> str:
    import nbformat

    path = notebooks / f"{INSTALL_CELL_FROM[framework]}.ipynb"
    cell = next(c for c in nbformat.read(path, as_version=4).cells if "install" in c.metadata.get("tags", []))
    return cell.source


def build_wheel(folder: Path) -> Path:
    """The tpu-course wheel of this checkout (what ./course installs), into `folder`."""
    src = folder / "src"
    src.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md", "requirements-common.txt", "requirements-tf.txt", "requirements-torch.txt",
                 "requirements-jax.txt"):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(ROOT / "tpu_helpers", src / "tpu_helpers", ignore=shutil.ignore_patterns("__pycache__"))
    _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(folder / "wheel"), str(src)],
         "building the tpu-course wheel")
    return next((folder / "wheel").glob("*.whl"))


def variables(target: Target, on_device: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TPU_", "COLAB_", "KAGGLE_", "PJRT_", "USE_"))
           and k not in ("ISTPUVM", "VIRTUAL_ENV", "PYTHONPATH", "FORCE_TF_AVAILABLE", "JUPYTER_PATH")}
    env.update(target.variables)
    if on_device:
        env.update(target.device)
    elif target.accelerator == "tpu":  # a TPU image off its TPU; a CPU or GPU runtime sets none of these
        env.update(OFF_TPU)
    return env


def framework_env(target: Target, framework: str, wheel: Path, log=print) -> tuple[Path, str]:
    """The image's environment with this framework's install cell run in it verbatim; (folder, the cell's output)."""
    base = image_env(target, log)
    cell = install_cell(framework)
    # keyed by what the cell installs (its plans), not by its wording or the helper's revision (a version bump or a
    # new note needs no new environment)
    plans = re.search(r"^PLANS = \{.*?^\}$", cell, re.S | re.M).group(0)
    folder = env_root() / f"{target.name}-{framework}-{_key(base.name, plans)}"
    if not (folder / ".complete").exists():
        log(f"[{target.name} x {framework}] copying the image and running the install cell")
        shutil.rmtree(folder, ignore_errors=True)
        _clone(base, folder)
    # a runtime has no tpu-course before its first install cell (pip would keep a cached one of the same version)
    _pip(str(folder / "bin" / "python"), "uninstall", "-y", "-q", "tpu-course", what="removing the previous helper")
    env = variables(target, on_device=True)
    env["TPU_COURSE_HELPER"] = str(wheel)
    env["TPU_COURSE_TORCH_CPU_INDEX"] = TORCH_CPU_INDEX_STANDIN
    first = not (folder / ".complete").exists()
    log_file = folder / "install-cell-pip.log"
    log_file.unlink(missing_ok=True)
    env["PIP_LOG"] = str(log_file)  # pip's verbose log: what it downloaded, what came from its cache
    start = time.monotonic()
    proc = subprocess.run([str(folder / "bin" / "python"), "-c", cell], capture_output=True, text=True, env=env,
                          cwd=tempfile.gettempdir())
    seconds = time.monotonic() - start
    output = proc.stdout + proc.stderr
    (folder / "install-cell-output.txt").write_text(output)
    if proc.returncode:
        raise RehearsalError(f"[{target.name} x {framework}] the install cell failed (exit {proc.returncode}):\n"
                             + "\n".join(ln for ln in output.splitlines() if "is ignored" not in ln)[-3000:])
    if first:  # what the cell did to the image (a rerun finds everything installed)
        (folder / "install.json").write_text(json.dumps({"seconds": round(seconds, 1),
                                                         **pip_fetched(log_file.read_text())}, indent=1))
        dedupe(env_root())
    (folder / ".complete").touch()
    return folder, output


SIZE = {"bytes": 1, "kB": 1e3, "MB": 1e6, "GB": 1e9}


def pip_fetched(log: str) -> dict:
    """What pip's log says it fetched, {"downloaded": {file: bytes}, "cached": {...}, "local": {...}}: pip gives a
    wheel's size when it downloads it and when it takes it from its cache; "local" are wheels it took from a folder
    or a ``file://`` index (a machine's mirror of the registry: a download on a hosted runtime), sized on disk."""
    out = {"downloaded": {}, "cached": {}, "local": {}}
    for m in re.finditer(r"(Downloading|Using cached) (\S+) \(([0-9.]+) (bytes|kB|MB|GB)\)", log):
        kind = "downloaded" if m.group(1) == "Downloading" else "cached"
        out[kind][m.group(2).rsplit("/", 1)[-1]] = round(float(m.group(3)) * SIZE[m.group(4)])
    for m in re.finditer(r"Processing (/\S+\.whl)", log):
        if Path(m.group(1)).is_file():
            out["local"][Path(m.group(1)).name] = Path(m.group(1)).stat().st_size
    return out


def course_distributions(folder: Path, framework: str, output: str) -> set[str]:
    """`install_plan.course_distributions` of the plan the install cell ran (its output names it), as installed in
    the environment."""
    key = re.search(r"plan '([^']+)'", output).group(1)
    calls = install_plan.plan_variants(framework, "tpu-course/tpu-course")[key]
    code = ("import json, runpy, sys; p = runpy.run_path(sys.argv[1]); "
            "print(json.dumps(sorted(p['course_distributions'](p['plan_roots'](json.loads(sys.argv[2]))))))")
    proc = _run([str(folder / "bin" / "python"), "-c", code, install_plan.__file__, json.dumps(calls)],
                "listing the course's distributions")
    return set(json.loads(proc.stdout))


def new_pip_check_lines(folder: Path, base: Path, course: set[str]) -> list[str]:
    """pip check's lines that the image did not have before the install cell and that concern a package the course
    uses (``course``), unless `ALLOWED_PIP_CHECK` documents them."""
    proc = subprocess.run([str(folder / "bin" / "python"), "-m", "pip", "check"], capture_output=True, text=True)
    baseline = set((base / "pip-check-baseline.txt").read_text().splitlines())
    lines = [ln for ln in proc.stdout.splitlines() if ln and not ln.startswith("No broken requirements")]
    return [ln for ln in lines if ln not in baseline and not any(re.fullmatch(p, ln) for p in ALLOWED_PIP_CHECK)
            and (install_plan.conflict_parts(ln) or ("",))[0] in course]


def installed_versions(folder: Path) -> dict[str, str]:
    proc = _run([str(folder / "bin" / "python"), "-m", "pip", "list", "--format=json"], "pip list")
    have = {d["name"].lower().replace("_", "-"): d["version"] for d in json.loads(proc.stdout)}
    return {n: have[n] for n in VERSIONS_SHOWN if n in have}


def lesson_check(target: Target, framework: str, folder: Path) -> str:
    proc = _run([str(folder / "bin" / "python"), "-c", LESSON_CHECKS[framework]],
                f"[{target.name} x {framework}] the lessons' imports", env=variables(target, on_device=False),
                cwd=tempfile.gettempdir(), timeout=600)
    return proc.stdout.strip().splitlines()[-1]


def kernel(folder: Path, name: str) -> Path:
    """A Jupyter kernel spec for the environment; returns the folder to put on JUPYTER_PATH."""
    spec = folder / "share" / "jupyter" / "kernels" / name
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(folder / "bin" / "python"), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": name, "language": "python"}))
    return folder / "share" / "jupyter"


def run_notebooks(target: Target, framework: str, folder: Path, tmp: Path, extra: list[str] | None = None,
                  log=print) -> int:
    """nbval over the framework's notebooks, each alone in an empty folder, in the rehearsal's kernel; as under
    ``./course test``, a cell with red output that tools/known_stderr.py does not explain fails (`stderr_check`)."""
    name = f"rehearse-{target.name}-{framework}"
    env = variables(target, on_device=False)
    env["JUPYTER_PATH"] = str(kernel(folder, name))
    env.setdefault("TPU_COURSE_PROFILE", "ci")
    env.setdefault("TPU_COURSE_SOLUTIONS", "1")
    copies = []
    for stem in target.notebooks[framework]:
        (tmp / stem).mkdir(parents=True)
        copies.append(str(shutil.copy2(ROOT / "notebooks" / f"{stem}.ipynb", tmp / stem)))
    report = tmp / "stderr.json"
    cmd = [*stderr_check.pytest_command(), "--nbval-lax", f"--nbval-kernel-name={name}", "--nbval-cell-timeout=900",
           "--nbval-sanitize-with", str(ROOT / "tests" / "nbval_sanitize.cfg"), "--rootdir", str(tmp), "-c",
           os.devnull, "-p", "no:cacheprovider", "-q", *copies, f"--stderr-report={report}", *(extra or [])]
    rc = subprocess.call(cmd, cwd=tmp, env=env)
    if report.exists():
        log(f"[{target.name} x {framework}] " + stderr_check.stderr_summary(json.loads(report.read_text())))
    return rc


def rehearse(target_name: str, framework: str, log=print, notebooks: bool = True, wheel: Path | None = None) -> dict:
    """Every step for one target and framework; raises `RehearsalError` at the first that fails. ``wheel``: the
    tpu-course wheel to install (built from this checkout when None). Returns what it found: the plan, versions,
    the first install's measures, and {distribution: version} of the course's distributions (``course``)."""
    target = TARGETS[target_name]
    with tempfile.TemporaryDirectory(prefix="tpu-course-rehearsal-") as tmp:
        wheel = wheel or build_wheel(Path(tmp) / "build")
        folder, output = framework_env(target, framework, wheel, log)
        base = image_env(target, log)
        plan = next((ln for ln in output.splitlines() if "plan '" in ln), "")
        log(f"[{target.name} x {framework}] install cell: exit 0; {plan}")
        if "Not expected:" in output:
            raise RehearsalError(f"[{target.name} x {framework}] the install cell reports a conflict among the "
                                 f"course's packages:\n{output[output.index('Not expected:'):][:3000]}")
        harmless = next((ln for ln in output.splitlines() if ln.startswith("Expected and harmless")), "")
        if harmless:
            log(f"[{target.name} x {framework}] the cell says: {harmless[:200]}")
        measured = json.loads((folder / "install.json").read_text()) if (folder / "install.json").exists() else {}
        if measured:
            mb = {k: sum(measured.get(k, {}).values()) / 1e6 for k in ("downloaded", "cached", "local")}
            log(f"[{target.name} x {framework}] first install: {measured['seconds']:.0f} s; pip downloaded "
                f"{mb['downloaded']:.0f} MB, took {mb['cached']:.0f} MB from its cache and {mb['local']:.0f} MB "
                f"from this machine's mirror of the registry: {sum(mb.values()):.0f} MB of wheels in all")
        course = course_distributions(folder, framework, output)
        new = new_pip_check_lines(folder, base, course)
        if new:
            raise RehearsalError(f"[{target.name} x {framework}] pip check after the install cell:\n" + "\n".join(new))
        log(f"[{target.name} x {framework}] pip check: nothing new about the course's packages beyond the image's own "
            "lines and the documented ones")
        log(f"[{target.name} x {framework}] {lesson_check(target, framework, folder)}")
        versions = installed_versions(folder)
        log(f"[{target.name} x {framework}] python {target.python}: "
            + " ".join(f"{k}=={v}" for k, v in versions.items()))
        if notebooks and target.notebooks[framework]:
            stems = ", ".join(target.notebooks[framework])
            start = time.monotonic()
            rc = run_notebooks(target, framework, folder, Path(tmp) / "nb", log=log)
            if rc:
                raise RehearsalError(f"[{target.name} x {framework}] notebooks {stems} failed (nbval exit {rc}; its "
                                     "report is above)")
            log(f"[{target.name} x {framework}] notebooks {stems}: passed in {time.monotonic() - start:.0f} s")
    installed = {n.lower().replace("_", "-"): v for n, v in (ln.split("==", 1) for ln in _run(
        [str(folder / "bin" / "python"), "-m", "pip", "list", "--format=freeze"], "pip list").stdout.split() if "==" in ln)}
    return {"python": target.python, "plan": plan, "versions": versions, "install": measured,
            "course": {n: installed.get(n) for n in sorted(course)}}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("target", nargs="?", choices=sorted(TARGETS))
    ap.add_argument("framework", nargs="?", choices=install_plan.FRAMEWORKS)
    ap.add_argument("--no-notebooks", action="store_true", help="stop after the lessons' imports")
    args = ap.parse_args(argv)
    failed = 0
    for t in [args.target] if args.target else sorted(TARGETS):
        for fw in [args.framework] if args.framework else install_plan.FRAMEWORKS:
            try:
                rehearse(t, fw, notebooks=not args.no_notebooks)
            except RehearsalError as e:
                print(f"FAILED: {e}", flush=True)
                failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
