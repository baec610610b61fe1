"""Refresh the dated snapshots of the hosted images that the install plans are derived from and rehearsed on.

    python3 tools/images/refresh.py --colab-git ~/src/backend-info --kaggle-git ~/src/docker-python
    python3 tools/images/refresh.py          # reads the same files from GitHub (needs the network)
    python3 tools/images/refresh.py --only colab-cpu colab-gpu     # some snapshots only

* ``colab-tpu.txt``, ``colab-cpu.txt``, ``colab-gpu.txt``: Colab's TPU, CPU (the default) and GPU runtimes,
  googlecolab/backend-info ``pip-freeze.tpu.txt`` / ``pip-freeze.txt`` / ``pip-freeze.gpu.txt`` verbatim, with
  the Python version from ``os-info-tpu.txt`` / ``os-info.txt`` / ``os-info-gpu.txt`` and the commit it came from
  in the header.
* ``kaggle-tpu.txt``: Kaggle's TPU image, Kaggle/docker-python ``tpu/requirements.in`` and ``tpu/config.txt``.
  That image publishes no freeze: its pinned framework lines are taken as written (``${TORCH_VERSION}`` ...), the
  unpinned packages that matter to the course (``KAGGLE_RELEVANT``) are resolved against the package registry for
  the image's Python on the day of the refresh, and the Dockerfile's ``libtpu==0.0.17`` override is applied. The
  CUDA libraries PyPI's torch wheel pulls are left out: the image has the CPU wheel.
* Kaggle's CPU and GPU images have no snapshot: their Dockerfile (``Dockerfile.tmpl``) starts from a dated Colab
  runtime image (``us-docker.pkg.dev/colab-images/public/cpu-runtime:release-colab-external-images_...``, Python
  3.12) whose pip freeze is not published, and adds ``kaggle_requirements.txt``, mostly unpinned.

The header lines (``# key: value``) are read by `tools/install_plan.py` (`image_snapshot`). Standard library only.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
COLAB = ("googlecolab/backend-info", "main")
KAGGLE = ("Kaggle/docker-python", "main")
# requirements.in lines of Kaggle's TPU image kept in the snapshot: the frameworks, the Hugging Face stack and what
# depends on it (pip check covers them), the notebook tooling (tensorflow_datasets needs `promise`, an sdist
# only: left out). jax[tpu]'s own libtpu is overridden by the image.
KAGGLE_RELEVANT = ("tensorflow-cpu", "torch", "torchaudio", "torchvision", "torch_xla", "jax", "keras", "accelerate",
                   "transformers", "diffusers", "timm", "pandas", "scikit-learn", "matplotlib", "ipywidgets",
                   "jupyterlab", "papermill", "tpu-info")
LIBTPU_OVERRIDE = re.compile(r"uv pip install --system --force-reinstall (libtpu==[0-9.]+)")


def _git(folder: str, path: str) -> tuple[str, str, str]:
    text = subprocess.run(["git", "-C", folder, "show", f"HEAD:{path}"], capture_output=True, text=True,
                          check=True).stdout
    commit, date = subprocess.run(["git", "-C", folder, "log", "-1", "--format=%H %cs", "HEAD", "--", path],
                                  capture_output=True, text=True, check=True).stdout.split()
    return text, commit, date


def _web(repo: str, ref: str, path: str) -> tuple[str, str, str]:
    with urllib.request.urlopen(f"https://raw.githubusercontent.com/{repo}/{ref}/{path}", timeout=60) as r:
        text = r.read().decode()
    api = f"https://api.github.com/repos/{repo}/commits?path={path}&sha={ref}&per_page=1"
    with urllib.request.urlopen(api, timeout=60) as r:
        last = json.load(r)[0]
    return text, last["sha"], last["commit"]["committer"]["date"][:10]


def read(repo: tuple[str, str], git: str | None, path: str) -> tuple[str, str, str]:
    return _git(git, path) if git else _web(*repo, path)


COLAB_FILES = {"tpu": ("pip-freeze.tpu.txt", "os-info-tpu.txt"), "cpu": ("pip-freeze.txt", "os-info.txt"),
               "gpu": ("pip-freeze.gpu.txt", "os-info-gpu.txt")}


def colab(git: str | None, accelerator: str = "tpu") -> str:
    freeze_file, os_file = COLAB_FILES[accelerator]
    freeze, commit, date = read(COLAB, git, freeze_file)
    os_info, _, _ = read(COLAB, git, os_file)
    python = re.search(r"^Python (\d+\.\d+\.\d+)", os_info, re.M).group(1)
    body = [ln for ln in freeze.splitlines() if ln.strip() and not ln.startswith("#")]
    return "\n".join([
        f"# Colab {accelerator.upper()} runtime: its pip freeze, verbatim (tools/images/refresh.py writes this file).",
        f"# source: https://github.com/{COLAB[0]}/blob/{commit}/{freeze_file}",
        f"# commit: {commit}", f"# date: {date}", f"# python: {python}", "# image: colab",
        f"# accelerator: {accelerator}", *body]) + "\n"


def _resolve(reqs: list[str], python: str) -> dict[str, str]:
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "r.json"
        tags = [f"manylinux_2_{m}_x86_64" for m in range(35, 16, -1)] + ["manylinux2014_x86_64", "manylinux2010_x86_64",
                                                                           "manylinux1_x86_64", "linux_x86_64"]
        plats = [a for tag in tags for a in ("--platform", tag)]
        subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
                        "--report", str(report), "--python-version", python, "--only-binary=:all:", "--target",
                        str(Path(tmp) / "t"), *plats, *reqs], check=True)
        items = json.loads(report.read_text())["install"]
    return {i["metadata"]["name"]: i["metadata"]["version"] for i in items}


def kaggle(git: str | None) -> str:
    req, commit, date = read(KAGGLE, git, "tpu/requirements.in")
    config, _, _ = read(KAGGLE, git, "tpu/config.txt")
    docker, _, _ = read(KAGGLE, git, "tpu/Dockerfile")
    env = dict(re.findall(r"^([A-Z_]+)=(\S+)", config, re.M))
    python = env["PYTHON_VERSION_PATH"].removeprefix("python")
    wanted, wheels = [], {}
    for line in req.splitlines():
        line = line.split("#", 1)[0].strip()
        url = re.search(r"/(torch|torchaudio|torchvision|torch_xla)-\$\{(\w+)\}", line)
        if url:  # the image's CPU wheels, from PyTorch's and PyTorch/XLA's own buckets: kept as `name @ URL`
            wanted.append(f"{url.group(1)}=={env[url.group(2)]}")
            wheels[url.group(1).lower().replace("_", "-")] = re.sub(r"\$\{(\w+)\}", lambda m: env[m.group(1)], line)
            continue
        name = re.match(r"[A-Za-z0-9_.\-]+", line)
        if name and name.group(0) in KAGGLE_RELEVANT and "git+" not in line:
            wanted.append(re.sub(r"\$\{(\w+)\}", lambda m: env[m.group(1)], line).replace("[tpu]", ""))
    resolved = _resolve(wanted, python)
    libtpu = LIBTPU_OVERRIDE.search(docker)
    if libtpu:
        resolved["libtpu"] = libtpu.group(1).split("==")[1]
    lines = [f"{n} @ {wheels[n.lower().replace('_', '-')]}" if n.lower().replace("_", "-") in wheels else f"{n}=={v}"
             for n, v in sorted(resolved.items(), key=lambda kv: kv[0].lower())
             if not n.lower().startswith(("nvidia-", "triton"))]
    return "\n".join([
        "# Kaggle TPU image: tpu/requirements.in and tpu/config.txt, the course-relevant part resolved on the date",
        "# below (tools/images/refresh.py writes this file; the image publishes no freeze).",
        f"# source: https://github.com/{KAGGLE[0]}/blob/{commit}/tpu/requirements.in",
        f"# commit: {commit}", f"# date: {date}", f"# resolved: {dt.date.today().isoformat()}",
        f"# python: {python}", "# image: kaggle",
        f"# pinned by the image: {', '.join(w for w in wanted if '==' in w)}"
        + (f", {libtpu.group(1)} (Dockerfile)" if libtpu else ""),
        *lines]) + "\n"


SNAPSHOTS = {"colab-tpu": lambda a: colab(a.colab_git, "tpu"), "colab-cpu": lambda a: colab(a.colab_git, "cpu"),
             "colab-gpu": lambda a: colab(a.colab_git, "gpu"), "kaggle-tpu": lambda a: kaggle(a.kaggle_git)}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--colab-git", help="a clone of googlecolab/backend-info (else read from GitHub)")
    ap.add_argument("--kaggle-git", help="a clone of Kaggle/docker-python (else read from GitHub)")
    ap.add_argument("--only", nargs="+", choices=sorted(SNAPSHOTS), help="refresh these snapshots only")
    args = ap.parse_args(argv)
    for name in args.only or sorted(SNAPSHOTS):
        text = SNAPSHOTS[name](args)
        name += ".txt"
        tmp = HERE / f".{name}.tmp"
        tmp.write_text(text)
        tmp.replace(HERE / name)
        print(f"wrote tools/images/{name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
