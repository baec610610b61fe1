"""Notebook 00's verdicts: does each framework work here, and if not, what to do (never raised)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from tpu_helpers.core import tpu_lock
from tpu_helpers.core.frameworks import TPUHeldError, WrongBuildError, check_tpu_build, framework_python
from tpu_helpers.core.tpu_slices import RESTART_MENUS
from tpu_helpers.ready import first_xla
from tpu_helpers.ready.lesson_cells import tf_first_computation

NAMES = {"tf": "TensorFlow", "torch": "PyTorch/XLA", "jax": "JAX"}
# XLA's pjrt_api.cc logs it (INFO) when a framework loads a PJRT plugin such as libtpu
_PJRT_LINE = re.compile(r"PJRT plugin has PJRT API version (\d+\.\d+)\. The framework PJRT API version is (\d+\.\d+)")
SIDE_FOLDER = Path.home() / ".cache" / "tpu-course"  # where `fetch_libtpu` puts a framework's own libtpu


@dataclass(frozen=True)
class Verdict:
    """One framework here: ``works`` (True, False, or None: not checked), where it ran, what was found, what to do."""

    framework: str  # "tf", "torch" or "jax"
    works: bool | None
    where: str  # "TPU", "CPU" ... ("" when it ran nowhere)
    found: str
    todo: str = ""

    def line(self) -> str:
        """The verdict in one paragraph for the learner."""
        state = {True: f"works here (on the {self.where})", False: "does not work here", None: "not checked"}
        todo = f" To do: {self.todo}" if self.todo else ""
        return f"{NAMES[self.framework]}: {state[self.works]}. {self.found}{todo}"


def build_check(runtime, framework: str, *, probe_devices: bool = False) -> tuple[bool | None, str]:
    """`check_tpu_build` as (True, what it says), (False: wrong build, why) or (None: the TPU is held, why)."""
    try:
        return True, check_tpu_build(runtime, framework, probe_devices=probe_devices)
    except WrongBuildError as e:
        return False, str(e)
    except TPUHeldError as e:
        return None, str(e)


def torch_xla_libtpu(requires: list[str]) -> str | None:
    """The libtpu release torch_xla's ``[tpu]`` extra pins in its `requires` (0.0.21 for 2.9), or None."""
    pins = [re.fullmatch(r"libtpu\s*==\s*([0-9][0-9.]*)\s*;\s*extra\s*==\s*['\"]tpu['\"]", r.strip()) for r in requires]
    return next((m.group(1) for m in pins if m), None)


def libtpu_matches(have: str | None, want: str) -> bool:
    """Whether libtpu `have` is release `want` or a post-release of it (0.0.21.1 for 0.0.21)."""
    return bool(have) and (have == want or have.startswith(want + "."))


def fetch_libtpu(version: str) -> tuple[str | None, str]:
    """libtpu `version` (or a post-release: 0.0.21 has no wheel for Python 3.13) in a side folder: (libtpu.so, how)."""
    folder = SIDE_FOLDER / f"libtpu-{version}"
    found = sorted(folder.glob("libtpu/libtpu.so"))
    problem = ""
    for spec in ([] if found else [f"libtpu=={version}", f"libtpu=={version}.*"]):
        argv = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--upgrade", "--retries", "2",
                "--timeout", "30", "--target", str(folder), spec]
        proc = subprocess.run(argv, capture_output=True, text=True)  # pip's own --timeout and --retries
        found = sorted(folder.glob("libtpu/libtpu.so"))
        if proc.returncode == 0 and found:
            break
        problem = (proc.stderr or proc.stdout or "").strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
        problem = f"pip could not install {spec} into {folder} ({problem[0][:200]})"
    if not found:
        return None, problem
    got = sorted(p.name[len("libtpu-"):-len(".dist-info")] for p in folder.glob("libtpu-*.dist-info"))
    return str(found[0]), f"libtpu {got[-1] if got else version} from {folder}"


def pjrt_api_versions(output: str) -> tuple[str, str] | None:
    """(the PJRT plugin's API version, the framework's) from XLA's log line, or None when the output has none."""
    return m.groups() if (m := _PJRT_LINE.search(output or "")) else None


def torch_failure(output: str, returncode: int | None, *, have: str | None, want: str | None,
                  side: bool) -> tuple[str, str]:
    """(what went wrong, what to do) for a failed PyTorch/XLA probe on a TPU: a libtpu mismatch, else its last lines."""
    pjrt, exit_ = pjrt_api_versions(output), "timed out" if returncode is None else f"exit {returncode}"
    why = [f"torch_xla asks libtpu {want}, this runtime has libtpu {have or '(none)'} (this TensorFlow notebook's "
           "install cell installed TensorFlow's)"] if want and not side and not libtpu_matches(have, want) else []
    if pjrt and pjrt[0] != pjrt[1]:
        why.append(f"the PJRT plugin (libtpu) has PJRT API version {pjrt[0]}, torch_xla's framework {pjrt[1]}")
    if why:
        return (f"libtpu mismatch ({exit_}): " + "; ".join(why) + ".",
                "The PyTorch/XLA notebooks (02, 05-07) install torch_xla's own libtpu in their install cell"
                f"{f' ({want})' if want else ''}: run them as they are (restart the runtime when "
                "their install cell says so). Nothing else holds the TPU here.")
    tail = " | ".join(ln.strip() for ln in (output or "").strip().splitlines()[-3:])
    return (f"the PyTorch/XLA check failed on the TPU ({exit_}), with no libtpu mismatch and no other process "
            f"holding the chips; its last lines: {tail}",
            f"restart the runtime ({RESTART_MENUS}) and run notebook 02 from the top; if it fails there too, "
            "report these lines.")


def tpu_held(framework: str, runtime) -> Verdict | None:
    """A "not checked" verdict for `framework` when this kernel or another process holds the TPU, else None."""
    pid = tpu_lock.libtpu_lock_holder(self_pid=-1) if runtime.is_tpu_vm else None
    if pid == os.getpid():
        return Verdict(framework, None, "TPU", "This kernel itself holds the TPU (TensorFlow took it when section 4 "
                       "ran).", f"restart the runtime ({RESTART_MENUS}) and run this notebook from the top.")
    return None if pid is None else Verdict(framework, None, "TPU", *tpu_lock.held_message(pid))


def torch_verdict(runtime, installed: dict, requires: list[str],
                  computation: Callable[[], dict]) -> tuple[Verdict, dict | None]:
    """PyTorch/XLA's verdict from `computation` (notebook 00's cell) in a child; on a TPU, with its own libtpu."""
    xla = installed.get("torch-xla")
    if not xla:
        return Verdict("torch", None, "", "torch_xla is not installed in this runtime.",
                       "nothing here: the PyTorch/XLA notebooks (02, 05-07) install it in their install cell."), None
    where, note, path, have, want = "CPU", "", None, installed.get("libtpu"), None
    if held := tpu_held("torch", runtime):
        return held, None
    if runtime.is_tpu_vm:
        where = "TPU"
        want = torch_xla_libtpu(requires)
        if want and not libtpu_matches(have, want):
            path, fetched = fetch_libtpu(want)
            note = (f" torch_xla {xla} asks libtpu {want}; this runtime has libtpu {have or '(none)'} (TensorFlow's, "
                    "from this notebook's install cell), so the check ran with "
                    + (f"{fetched}." if path else f"the installed one: {fetched}."))
    try:
        result = first_xla.torch_xla_first_xla(runtime, computation, libtpu_path=path)
    except first_xla.ProbeFailed as e:
        if not runtime.is_tpu_vm:
            return Verdict("torch", False, "", f"On the CPU, {e}",
                           "reinstall the course's environment (./course setup) and run again."), None
        found, todo = torch_failure(e.output, e.returncode, have=have, want=want, side=bool(path))
        return Verdict("torch", False, "", found + note, todo), None
    if result["device_type"] != where:
        return Verdict("torch", False, result["device_type"], f"torch_xla {xla} ran on {result['device_type']}, "
                       f"not the {where}.{note}", "unset PJRT_DEVICE, restart the runtime and run from the top."), result
    pjrt = pjrt_api_versions(result.get("output", ""))
    api = f" PJRT API: plugin {pjrt[0]}, framework {pjrt[1]}." if pjrt else ""
    return Verdict("torch", True, where, f"torch_xla {result['torch_xla']} computed on {result['device']} "
                   f"({result['devices']} device(s)).{api}{note}"), result


JAX_TODO = ("run notebook 09 (JAX) in a runtime of its own: Colab's images ship JAX and its install cell adds what is "
            "missing (Kaggle too); on a Cloud TPU VM `./course setup --tpu` installs jax[tpu].")


def jax_verdict(runtime, computation: Callable[[], dict]) -> tuple[Verdict, dict | None]:
    """JAX's verdict and probe result, from a child with `framework_python("jax")`; on a TPU VM, on the TPU."""
    if held := tpu_held("jax", runtime):
        return held, None
    where, python = ("TPU" if runtime.is_tpu_vm else "CPU"), framework_python("jax")
    try:
        result = first_xla.jax_first_xla(runtime, computation)
    except first_xla.ProbeFailed as e:
        if "No module named 'jax'" in e.output:
            return Verdict("jax", None, "", f"JAX is not installed for {python}.", JAX_TODO), None
        lines = e.output.strip().splitlines() or [""]
        error = [ln for ln in lines if re.match(r"[\w.]+(Error|Exception): ", ln)][-1:] or lines[-1:]
        return Verdict("jax", False, "", f"The JAX check failed ({python}, exit {e.returncode}): {error[0][:300]}",
                       JAX_TODO), None
    found = f"JAX {result['jax']} computed on {result['device']} ({result['devices']} device(s))"
    if result["device_type"] != where:  # a TPU VM whose JAX found no TPU (no libtpu, or not its release)
        tail = [ln.strip() for ln in result["output"].splitlines() if ln.strip() and not ln.startswith("{")][-1:]
        return Verdict("jax", False, result["device_type"], f"{found}, not on the {where}. {' '.join(tail)}".strip(),
                       "JAX found no TPU it can use (its environment has no libtpu, or TensorFlow's from this "
                       "notebook's install cell): " + JAX_TODO), result
    return Verdict("jax", True, where, found + "."), result


def tf_probe(runtime, tpu: bool | None, computation: Callable[[str], dict] = tf_first_computation) -> dict:
    """`first_xla.tf_first_xla` on the TPU when `tpu`, else the CPU; on a TPU VM an error comes back as ``xla: False``."""
    if not runtime.is_tpu_vm:
        return first_xla.tf_first_xla(runtime, computation, tpu=False)
    try:
        return first_xla.tf_first_xla(runtime, computation, tpu=bool(tpu))
    except Exception as e:  # noqa: BLE001  (TensorFlow raises several types when it cannot use the TPU)
        first = (str(e).strip().splitlines() or [""])[0][:300]
        return {"xla": False, "why": f"{type(e).__name__} on the {'TPU' if tpu else 'host'}: {first}",
                "device": None, "devices": [], "tpu_error": tpu}


def tf_verdict(runtime, tpu_ok: bool | None, tpu_found: str, tf_check: dict) -> Verdict:
    """TensorFlow's verdict from `build_check` (``probe_devices=True``) and `tf_probe`."""
    compiled = f"TensorFlow {tf_check.get('tensorflow', '')} compiled with XLA on {tf_check.get('device')}."
    if runtime.is_tpu_vm and tpu_ok is None:
        return Verdict("tf", None, "", tpu_found)
    if runtime.is_tpu_vm and not tpu_ok:
        cpu = f" (Only this machine's CPU: {compiled})" if tf_check.get("xla") else ""
        return Verdict("tf", False, "", tpu_found + cpu)
    if tf_check.get("xla"):
        where = "TPU" if ":TPU:" in str(tf_check.get("device")) else "CPU"
        return Verdict("tf", True, where, compiled)
    if tf_check.get("tpu_error"):
        return Verdict("tf", False, "", f"TensorFlow lists the TPU but could not use it: {tf_check['why']}",
                       "the TensorFlow notebooks (01, 03, 04) run with the 'cpu' profile (PROFILE = \"cpu\") "
                       "on a CPU runtime; the PyTorch/XLA ones use this TPU.")
    return Verdict("tf", False, "", f"TensorFlow compiled nothing here: {tf_check.get('why')}.",
                   "off a TPU use TensorFlow's CPU build (./course, or a CPU runtime's install cell).")
