"""Connect to whatever this runtime has, in one call: `get_strategy()` (notebooks 03 and 04).

`get_strategy()` returns the `tf.distribute` strategy that fits the runtime `tpu_helpers.core.runtime` detected,
prints one line saying what it connected to, and turns every known failure into a short error that says
how to fix it:

================================  ===================================================================
where                             what it does
================================  ===================================================================
TPU VM (Colab, Kaggle, Cloud)     ``TPUClusterResolver(tpu="local")``: the chips are attached to this
                                  machine. A Colab engineer recommends ``tpu="local"`` on TPU VMs
                                  (https://github.com/tensorflow/docs/pull/2303); Kaggle's image even
                                  patches the resolver's default to it.
legacy TPU Node                   ``TPUClusterResolver(tpu="grpc://IP:8470")``, the address Colab put in
                                  ``COLAB_TPU_ADDR`` or a ``TPU_NAME=grpc://...`` variable.
named Cloud TPU / pod slice       ``TPUClusterResolver(tpu=NAME, zone=..., project=...)``: asks the Cloud
                                  TPU API where the workers are (pass ``tpu=`` or set ``TPU_NAME``).
then, for every TPU               ``tf.config.experimental_connect_to_cluster``,
                                  ``tf.tpu.experimental.initialize_tpu_system``, ``tf.distribute.TPUStrategy``
GPUs                              ``tf.distribute.MirroredStrategy`` over the GPUs
CPU                               the default strategy (one replica), or, with ``cpu_replicas=N``, a
                                  ``MirroredStrategy`` over N logical CPU devices that simulates N replicas
================================  ===================================================================

The failures it explains come from the real code paths (TensorFlow 2.20,
``tensorflow/python/distribute/cluster_resolver/tpu/tpu_cluster_resolver.py`` and
``tensorflow/python/tpu/client/client.py``; libtpu's lock in openxla/xla
``xla/stream_executor/tpu/tpu_initialize_util.cc``):

* no TPU name and no ``TPU_NAME``: ``ValueError: Please provide a TPU Name to connect to.`` -> `TPUNameError`
* a wrong name/zone/project: ``ValueError: Could not lookup TPU metadata from name ...`` -> `TPUNameError`
* the Cloud TPU API client missing: ``RuntimeError: Missing runtime dependency on the Google API client``
  -> `TPUConnectionError`
* no TPU where TensorFlow looks (or the CPU-only ``tensorflow`` wheel on a TPU VM):
  ``NotFoundError: TPUs not found in the cluster`` (documented at
  https://www.tensorflow.org/api_docs/python/tf/tpu/experimental/initialize_tpu_system) -> `TPUNotFoundError`
* another process holds the chips: libtpu keeps a ``lockf`` lock on ``/tmp/libtpu_lockfile`` for the
  life of the process and refuses a second one with ``The TPU is already in use by process with pid N``;
  TensorFlow then finds no TPU. `get_strategy` names the holder (from ``/proc/locks``) -> `TPUInUseError`
* the ``tpu`` profile on a machine without a TPU -> `TPUNotFoundError` before TensorFlow is touched.

Everything TensorFlow does is behind a small `TFBackend` object, so tests drive every branch with fakes.
`check_replicas(strategy, REPLICAS)` holds the notebooks' ``REPLICAS`` parameter to what the strategy runs: equal on
a CPU, ignored (said in one line) on a TPU or GPUs, whose hardware decides.
Calling `get_strategy()` again returns the strategy it already made: re-initialising a TPU system wipes the
variables on it (TensorFlow warns "Reinitializing the TPU can cause previously created variables on TPU to
be lost", ``tensorflow/python/tpu/tpu_strategy_util.py``).

The batch arithmetic of replicas is in `tpu_helpers.tpu_tf.batches`, the checklist in `tpu_helpers.tpu_tf.checklist`;
what a strategy runs on (`strategy_kind`) and the ``jit_compile`` rule are notebook 01's
(`tpu_helpers.xla_tf.jit_rule`).
"""
from __future__ import annotations

import numbers
import os
import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from tpu_helpers.core.profiles import PROFILES
from tpu_helpers.core.runtime import Runtime, detect_runtime
from tpu_helpers.core.tpu_lock import LIBTPU_LOCKFILE, held_message, libtpu_lock_holder
from tpu_helpers.xla_tf.jit_rule import strategy_kind

__all__ = [
    "StrategyError", "TPUNameError", "TPUNotFoundError", "TPUInUseError", "TPUConnectionError",
    "ReplicaSimulationError", "LIBTPU_LOCKFILE", "TPUTarget", "tpu_target", "TFBackend", "explain_tpu_error",
    "libtpu_lock_holder", "simulate_cpu_replicas", "get_strategy", "describe_strategy", "check_replicas",
]

# The TPU build, installed the way the notebooks' install cell does it (tools/install_plan.py owns the plan): the
# CPU `tensorflow` wheel out first (both install the same package folder), tf-keras without its `tensorflow` pin.
TF_TPU_INSTALL = ("pip uninstall -y tensorflow tensorflow-cpu && pip install tensorflow-tpu==2.20.0 libtpu==0.0.14 "
                  "&& pip install --no-deps tf-keras==2.20.1")


# --------------------------------------------------------------------------------------------- errors
class StrategyError(RuntimeError):
    """Connecting to the accelerator failed; the message says why and `fix` says what to do."""

    def __init__(self, problem: str, fix: str):
        self.problem, self.fix = problem, fix
        super().__init__(f"{problem}\nFix: {fix}")


class TPUNameError(StrategyError):
    """No TPU name was given where one is needed, or the Cloud TPU API does not know the name."""


class TPUNotFoundError(StrategyError):
    """A TPU was expected (profile ``tpu``, or a TPU runtime) but TensorFlow found none."""


class TPUInUseError(StrategyError):
    """Another process holds the TPU chips (libtpu allows one process per TPU VM)."""


class TPUConnectionError(StrategyError):
    """The TPU could not be reached (TPU Node over gRPC, Cloud TPU API, metadata server)."""


class ReplicaSimulationError(StrategyError):
    """Logical CPU devices can only be set up before TensorFlow initialises its devices."""


# ------------------------------------------------------------------------------------- where to connect
@dataclass(frozen=True)
class TPUTarget:
    """The arguments for ``TPUClusterResolver`` and how they were chosen (`how`: vm, node, named)."""

    tpu: str
    zone: str | None = None
    project: str | None = None
    how: str = "named"

    def resolver_kwargs(self) -> dict[str, str]:
        kw = {"tpu": self.tpu}
        if self.zone:
            kw["zone"] = self.zone
        if self.project:
            kw["project"] = self.project
        return kw

    def __str__(self) -> str:
        extra = "".join(f", {k}={v!r}" for k, v in (("zone", self.zone), ("project", self.project)) if v)
        return f"TPUClusterResolver(tpu={self.tpu!r}{extra})"


def tpu_target(runtime: Runtime, tpu: str | None = None, zone: str | None = None, project: str | None = None,
               env: Mapping[str, str] | None = None) -> TPUTarget | None:
    """Which TPU to resolve, or None when there is none to connect to.

    An explicit ``tpu=`` wins ("local", "grpc://IP:8470" or a Cloud TPU name); then a TPU VM ("local"), a
    TPU Node (its gRPC address), and finally a ``TPU_NAME`` naming a Cloud TPU (resolved through the Cloud
    TPU API, with `zone`/`project` or, on a GCE VM, the metadata server's).
    """
    env = os.environ if env is None else env
    if tpu:
        how = "vm" if tpu == "local" else ("node" if tpu.startswith("grpc://") else "named")
        return TPUTarget(tpu, zone, project, how)
    if runtime.is_tpu_vm:
        return TPUTarget("local", how="vm")
    if runtime.is_tpu_node and runtime.tpu_address:
        return TPUTarget(runtime.tpu_address, how="node")
    name = env.get("TPU_NAME", "").strip()
    if name and not name.startswith("grpc://"):
        return TPUTarget(name, zone, project, how="named")
    return None


# ---------------------------------------------------------------------------------- the TF operations
class TFBackend:
    """What `get_strategy` touches outside Python: TensorFlow's calls, libtpu's lock file and ``/proc/locks``, and
    the strategies already made in this process. Tests pass a fake with the same methods and attributes."""

    lockfile = LIBTPU_LOCKFILE
    proc_locks = "/proc/locks"
    cache = None  # None: the process-wide dict, so a re-run cell reuses the strategy (a fake brings its own)

    def __init__(self) -> None:
        import tensorflow as tf  # imported here so this module stays importable without TensorFlow

        self.tf = tf

    def resolver(self, target: TPUTarget) -> Any:
        return self.tf.distribute.cluster_resolver.TPUClusterResolver(**target.resolver_kwargs())

    def connect(self, resolver: Any) -> None:
        self.tf.config.experimental_connect_to_cluster(resolver)

    def initialize(self, resolver: Any) -> Any:
        return self.tf.tpu.experimental.initialize_tpu_system(resolver)

    def tpu_strategy(self, resolver: Any) -> Any:
        return self.tf.distribute.TPUStrategy(resolver)

    def gpu_count(self) -> int:
        return len(self.tf.config.list_physical_devices("GPU"))

    def mirrored_strategy(self, devices: Sequence[str] | None = None) -> Any:
        return self.tf.distribute.MirroredStrategy(devices=list(devices) if devices else None)

    def default_strategy(self) -> Any:
        return self.tf.distribute.get_strategy()

    def simulate_cpu_replicas(self, n: int) -> list[str]:
        return simulate_cpu_replicas(n, tf=self.tf)


# ------------------------------------------------------------------------------------- the libtpu lock
def _in_use_error(pid: int | None, path: str) -> TPUInUseError:
    return TPUInUseError(*held_message(pid, path))


def explain_tpu_error(exc: BaseException, target: TPUTarget, runtime: Runtime,
                      lockfile: str = LIBTPU_LOCKFILE, proc_locks: str = "/proc/locks") -> BaseException:
    """Turn an exception from resolving/connecting/initialising a TPU into a `StrategyError` with a fix.

    Returns the exception unchanged when it is none of the known failures.
    """
    msg = str(exc)
    name = type(exc).__name__
    if "already in use by process with pid" in msg:
        m = re.search(r"pid (\d+)", msg)
        return _in_use_error(int(m.group(1)) if m else None, lockfile)
    if "libtpu_lockfile" in msg or "libtpu multi-process lockfile" in msg:
        return _in_use_error(libtpu_lock_holder(lockfile, proc_locks), lockfile)
    if "Please provide a TPU Name" in msg:
        return TPUNameError(
            "No TPU name: TPUClusterResolver() needs tpu='local' on a TPU VM, a grpc:// address for a TPU "
            "Node, or a Cloud TPU name (also read from the TPU_NAME variable), and none was found.",
            "on a Colab/Kaggle/Cloud TPU VM call get_strategy() there (it uses tpu='local'); for a Cloud TPU "
            "you created, call get_strategy(tpu='NAME', zone='ZONE', project='PROJECT') or set TPU_NAME.")
    if "Could not lookup TPU metadata" in msg:
        return TPUNameError(
            f"The Cloud TPU API does not know the TPU {target.tpu!r}"
            f"{' in zone ' + repr(target.zone) if target.zone else ''}"
            f"{' of project ' + repr(target.project) if target.project else ''}.",
            "check the name, zone and project with `gcloud compute tpus tpu-vm list --zone=ZONE` and pass "
            "them: get_strategy(tpu='NAME', zone='ZONE', project='PROJECT'). On the TPU VM itself, use "
            "tpu='local' instead of its name.")
    if "Missing runtime dependency on the Google API client" in msg:
        return TPUConnectionError(
            f"Resolving the named TPU {target.tpu!r} needs the Cloud TPU API client, which is not installed.",
            "`pip install cloud-tpu-client` (it brings google-api-python-client and oauth2client), or run "
            "on the TPU VM itself and use tpu='local', which needs no API.")
    if target.how == "named" and ("metadata.google.internal" in msg or name in ("URLError", "gaierror")
                                  or "Name or service not known" in msg):
        return TPUConnectionError(
            f"Could not ask the GCE metadata server for the zone/project of TPU {target.tpu!r}: this "
            "machine is not a Google Compute Engine VM.",
            "pass them explicitly: get_strategy(tpu='NAME', zone='ZONE', project='PROJECT').")
    if name == "NotFoundError" or "TPUs not found in the cluster" in msg:
        holder = libtpu_lock_holder(lockfile, proc_locks) if target.how == "vm" else None
        if holder:
            return _in_use_error(holder, lockfile)
        if "ConfigureDistributedTPU" in msg and target.how == "vm" and runtime.is_tpu_vm:  # chips here, no TPU build
            return TPUNotFoundError(
                "TensorFlow has no TPU support here: this is the CPU-only `tensorflow` wheel, which cannot "
                "drive the TPU chips of this VM.",
                f"install the TPU build of the same version, `{TF_TPU_INSTALL}`, then restart the kernel "
                "(the notebook's install cell does this on Colab and Kaggle).")
        where = runtime.describe()
        return TPUNotFoundError(
            f"TensorFlow found no TPU through {target} ({where})",
            "choose a TPU runtime (Colab: Runtime > Change runtime type > TPU; Kaggle: Accelerator > TPU VM), "
            f"make sure the TPU build is installed (`{TF_TPU_INSTALL}`), and restart the kernel; "
            "or run without a TPU: PROFILE='cpu'.")
    if target.how == "node" and name in ("UnavailableError", "DeadlineExceededError", "InternalError",
                                         "AbortedError", "CancelledError", "UnimplementedError"):
        return TPUConnectionError(
            f"Could not reach the TPU Node at {target.tpu}: {msg.splitlines()[0] if msg else name}",
            "check the Node is READY (`gcloud compute tpus describe NAME --zone=ZONE`), on the same network as "
            "this VM, and runs the same TensorFlow version as this notebook; TPU Nodes are legacy: a TPU VM "
            "avoids all of this.")
    return exc


# ---------------------------------------------------------------------------------- simulated replicas
def simulate_cpu_replicas(n: int, tf: Any = None) -> list[str]:
    """Split the CPU into `n` logical devices (for a `MirroredStrategy` with `n` replicas); return their names.

    TensorFlow fixes its devices the first time anything initialises them (creating a tensor, listing logical
    devices, building a strategy), after which ``tf.config.set_logical_device_configuration`` raises
    ``RuntimeError: Virtual devices cannot be modified after being initialized``. So call this first, before
    anything else uses TensorFlow. Calling it again with the same `n` (re-running the cell) is fine; a
    different `n` after initialisation raises `ReplicaSimulationError` saying to restart the kernel.
    """
    if n < 1:
        raise ValueError(f"cpu replicas must be >= 1, not {n}")
    if tf is None:
        import tensorflow as tf
    cpu = tf.config.list_physical_devices("CPU")[0]
    wanted = [tf.config.LogicalDeviceConfiguration() for _ in range(n)]
    current = tf.config.get_logical_device_configuration(cpu)
    if not current or len(current) != n:
        try:
            tf.config.set_logical_device_configuration(cpu, wanted)
        except RuntimeError as e:
            have = tf.config.list_logical_devices("CPU")
            if len(have) != n:
                raise ReplicaSimulationError(
                    f"TensorFlow already initialised its devices in this kernel with {len(have)} CPU "
                    f"device(s), so they cannot be split into {n} now ({e}).",
                    "restart the kernel and run the notebook from the top: the cell that calls "
                    "get_strategy(cpu_replicas=...) must run before anything else uses TensorFlow.") from None
    names = [d.name for d in tf.config.list_logical_devices("CPU")]
    if len(names) != n:
        raise ReplicaSimulationError(
            f"expected {n} logical CPU devices, TensorFlow has {len(names)}",
            "restart the kernel and run the notebook from the top.")
    return names


# ------------------------------------------------------------------------------------------ get_strategy
_STRATEGIES: dict[tuple, Any] = {}


def describe_strategy(strategy: Any, runtime: Runtime | None = None, target: TPUTarget | None = None) -> str:
    """One line: which strategy, how many replicas, on what."""
    n = strategy.num_replicas_in_sync
    kind = strategy_kind(strategy)
    reps = f"{n} replica{'s' if n != 1 else ''}"
    if kind == "tpu":
        size = (runtime.slice_name if runtime and runtime.slice_name else None) or "TPU"
        via = f" via {target}" if target else ""
        return f"Connected to {size}{via}: TPUStrategy with {reps} (one per TPU core)."
    if kind == "gpu":
        return f"No TPU: MirroredStrategy over {reps} (one per GPU)."
    if kind == "cpu-replicas":
        return (f"No TPU: MirroredStrategy over {n} logical CPU devices, simulating {reps} "
                f"(the arithmetic of a TPU, not its speed).")
    what = "the default strategy" if "Default" in type(strategy).__name__ else type(strategy).__name__
    return f"No TPU or GPU: {what}, {reps} on the CPU."


def check_replicas(strategy: Any, requested: int | None, quiet: bool = False) -> int:
    """The replicas `strategy` runs (TensorFlow's ``num_replicas_in_sync``), checked against a notebook's
    ``REPLICAS`` parameter, `requested`.

    On the CPU (`strategy_kind` "cpu" or "cpu-replicas": `get_strategy` split the CPU as asked) they must be equal,
    else `ReplicaSimulationError`. On a TPU or GPUs the hardware decides: `requested` is ignored, and a line says so
    when it differs (unless `quiet`). None requests nothing: the strategy's count is returned unchecked.
    """
    n = int(strategy.num_replicas_in_sync)
    if requested is None or n == requested:
        return n
    kind = strategy_kind(strategy)
    if kind in ("cpu", "cpu-replicas"):
        raise ReplicaSimulationError(
            f"REPLICAS = {requested} asked for {requested} simulated replicas, but the strategy runs {n}",
            "restart the kernel and run the notebook from the top: the cell that calls get_strategy(cpu_replicas=...) "
            "must run before anything else uses TensorFlow.")
    if not quiet:
        print(f"REPLICAS = {requested} is ignored: this {kind.upper()} has {n} replica{'s' if n != 1 else ''}, "
              "and the hardware decides (REPLICAS splits only a CPU).")
    return n


def get_strategy(runtime: Runtime | None = None, *, profile: Any = None, tpu: str | None = None,
                 zone: str | None = None, project: str | None = None, cpu_replicas: int | None = None,
                 env: Mapping[str, str] | None = None, quiet: bool = False, backend: Any = None) -> Any:
    """The right `tf.distribute` strategy for this runtime, connected and initialised; prints one line.

    runtime: from `tpu_helpers.core.runtime.detect_runtime()` (detected when None).
    profile: a `Profile` or name; ``"tpu"`` on a machine without a TPU raises `TPUNotFoundError`.
    tpu, zone, project: connect to a named Cloud TPU or pod slice (or "local", or "grpc://IP:8470").
    cpu_replicas: off-TPU and off-GPU, simulate this many replicas with logical CPU devices
      (call before anything else uses TensorFlow; see `simulate_cpu_replicas`).
    env: the environment variables to read (``TPU_NAME``, Colab's and Kaggle's; ``os.environ`` by default).
    quiet: do not print the line.
    backend: TensorFlow, libtpu's lock and the strategies made so far (`TFBackend()`); tests pass a fake. A second
      call returns the strategy the first one made, so a re-run cell does not re-initialise the TPU.
    """
    env = os.environ if env is None else env
    runtime = runtime or detect_runtime(env)
    profile_name = getattr(profile, "name", profile)
    if profile_name is not None and profile_name not in PROFILES:
        raise ValueError(f"unknown profile {profile_name!r}: use one of {', '.join(PROFILES)} (or None: automatic)")
    if cpu_replicas is not None and (isinstance(cpu_replicas, bool) or not isinstance(cpu_replicas, numbers.Integral)
                                     or cpu_replicas < 1):
        raise ValueError(f"cpu_replicas={cpu_replicas!r}: give a whole number of simulated replicas, 1 or more "
                         "(8 simulates a v2-8/v3-8), or None")
    target = tpu_target(runtime, tpu, zone, project, env)

    if profile_name == "tpu" and target is None:
        raise TPUNotFoundError(
            f"The 'tpu' profile needs a TPU, but this runtime has none: {runtime.describe()}",
            "choose a TPU runtime (Colab: Runtime > Change runtime type > TPU; Kaggle: Settings > Accelerator "
            "> TPU VM v5e-8), or pass tpu='NAME', zone=..., project=... for a Cloud TPU; or run the small "
            "sizes here with PROFILE='cpu'.")

    backend = backend or TFBackend()
    cache = _STRATEGIES if getattr(backend, "cache", None) is None else backend.cache
    if target is not None:
        key: tuple = ("tpu", target.tpu, target.zone, target.project)
        if key in cache:
            strategy = cache[key]
        else:
            try:
                resolver = backend.resolver(target)
                backend.connect(resolver)
                backend.initialize(resolver)
                strategy = backend.tpu_strategy(resolver)
            except Exception as e:  # noqa: BLE001 - every known failure is translated, others re-raised
                err = explain_tpu_error(e, target, runtime, getattr(backend, "lockfile", LIBTPU_LOCKFILE),
                                        getattr(backend, "proc_locks", "/proc/locks"))
                if err is e:
                    raise
                raise err from None
            cache[key] = strategy
        line = describe_strategy(strategy, runtime, target)
    else:
        gpus = backend.gpu_count()
        if gpus:
            key = ("gpu", gpus)
            strategy = cache.get(key) or backend.mirrored_strategy()
        elif cpu_replicas and cpu_replicas > 1:
            key = ("cpu", cpu_replicas)
            strategy = cache.get(key) or backend.mirrored_strategy(backend.simulate_cpu_replicas(cpu_replicas))
        else:
            key = ("default",)
            strategy = backend.default_strategy()
        cache[key] = strategy
        line = describe_strategy(strategy, runtime)
    if not quiet:
        print(line)
    return strategy
