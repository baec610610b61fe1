"""get_strategy(): every branch from faked runtimes and a fake TensorFlow backend; the real CPU paths in a child.

No TPU is needed: the resolver/connect/initialize calls go through a fake `TFBackend` that raises the exact
exceptions TensorFlow 2.20 raises (messages copied from tensorflow/python/tpu/client/client.py and
tpu_cluster_resolver.py, and libtpu's from openxla/xla tpu_initialize_util.cc). The real TensorFlow checks
(logical CPU devices, MirroredStrategy, the scope error, jit_compile) run in child processes, because logical
devices can only be configured before TensorFlow initialises, and other test modules share this process.
"""
import json
import os
import subprocess
import sys
import textwrap

import pytest
from course_testing import ROOT, held_libtpu_lock

from tpu_helpers.core.runtime import Runtime
from tpu_helpers.tpu_tf.checklist import tpu_checklist
from tpu_helpers.tpu_tf.strategy import (
    ReplicaSimulationError,
    TPUConnectionError,
    TPUInUseError,
    TPUNameError,
    TPUNotFoundError,
    TPUTarget,
    check_replicas,
    describe_strategy,
    explain_tpu_error,
    get_strategy,
    tpu_target,
)
from tpu_helpers.xla_tf.jit_rule import jit_compile_for, strategy_kind

COLAB_VM = Runtime("colab-tpu-vm", "colab", "v5litepod-1", "v5e", 1, 1)
KAGGLE_VM = Runtime("kaggle-tpu-vm", "kaggle", "v5litepod-8", "v5e", 8, 8)
NODE = Runtime("tpu-node", "colab", devices=8, tpu_address="grpc://10.0.0.2:8470")
CPU = Runtime("cpu", "local")
GPU = Runtime("gpu", "local", gpus=2)


# ------------------------------------------------------------------------------------------- fakes
class NotFoundError(Exception):
    """Named like tf.errors.NotFoundError (the translation goes by name and message)."""


class UnavailableError(Exception):
    pass


class _Strategy:
    def scope(self):  # tf.distribute strategies have one; jit_compile_for recognises a strategy by it
        raise NotImplementedError


class _Extended:
    def __init__(self, devices):
        self.worker_devices = devices

    def variable_created_in_scope(self, v):
        return getattr(v, "in_scope", False)


class TPUStrategyV2(_Strategy):
    def __init__(self, replicas=8):
        self.num_replicas_in_sync = replicas
        self.extended = _Extended([f"/job:worker/replica:0/task:0/device:TPU:{i}" for i in range(replicas)])


class MirroredStrategy(_Strategy):
    def __init__(self, devices):
        self.num_replicas_in_sync = len(devices)
        self.extended = _Extended(devices)


class _DefaultExtended:
    @property
    def worker_devices(self):
        raise RuntimeError("worker_devices() method unsupported by default tf.distribute.Strategy.")

    def variable_created_in_scope(self, v):
        return True


class _DefaultDistributionStrategy(_Strategy):
    num_replicas_in_sync = 1
    extended = _DefaultExtended()


class FakeBackend:
    """Records the calls get_strategy makes; `fail` maps a step name to the exception it raises."""

    lockfile = "/nonexistent/libtpu_lockfile"  # no TPU lock on this machine
    proc_locks = "/proc/locks"

    def __init__(self, fail=None, gpus=0, replicas=8):
        self.fail, self.gpus, self.replicas, self.calls = dict(fail or {}), gpus, replicas, []
        self.cache = {}  # strategies made with this backend only

    def _step(self, name, *args):
        self.calls.append((name, *args))
        if name in self.fail:
            raise self.fail[name]

    def resolver(self, target):
        self._step("resolver", target.resolver_kwargs())
        return f"resolver({target.tpu})"

    def connect(self, resolver):
        self._step("connect", resolver)

    def initialize(self, resolver):
        self._step("initialize", resolver)

    def tpu_strategy(self, resolver):
        self._step("tpu_strategy", resolver)
        return TPUStrategyV2(self.replicas)

    def gpu_count(self):
        return self.gpus

    def mirrored_strategy(self, devices=None):
        self._step("mirrored", devices)
        return MirroredStrategy(devices or [f"/device:GPU:{i}" for i in range(self.gpus)])

    def default_strategy(self):
        self._step("default")
        return _DefaultDistributionStrategy()

    def simulate_cpu_replicas(self, n):
        self._step("simulate", n)
        return [f"/job:localhost/replica:0/task:0/device:CPU:{i}" for i in range(n)]


def names(backend):
    return [c[0] for c in backend.calls]


def strategy_for(rt, backend, **kw):
    kw.setdefault("env", {})
    return get_strategy(rt, backend=backend, **kw)


# ------------------------------------------------------------------------------------------ targets
def test_targets_for_each_runtime():
    assert tpu_target(COLAB_VM, env={}) == TPUTarget("local", how="vm")
    assert tpu_target(KAGGLE_VM, env={}).tpu == "local"
    assert tpu_target(NODE, env={}) == TPUTarget("grpc://10.0.0.2:8470", how="node")
    assert tpu_target(CPU, env={}) is None and tpu_target(GPU, env={}) is None
    named = tpu_target(CPU, zone="us-central1-a", project="p", env={"TPU_NAME": "my-v3-32"})
    assert named == TPUTarget("my-v3-32", "us-central1-a", "p", "named")
    assert named.resolver_kwargs() == {"tpu": "my-v3-32", "zone": "us-central1-a", "project": "p"}
    assert tpu_target(KAGGLE_VM, tpu="other", env={}).tpu == "other"  # an explicit name wins
    assert tpu_target(CPU, tpu="grpc://1.2.3.4:8470", env={}).how == "node"
    assert str(TPUTarget("local")) == "TPUClusterResolver(tpu='local')"


# ------------------------------------------------------------------------------------------ success
@pytest.mark.parametrize("rt,kwargs,expected_tpu", [
    (COLAB_VM, {}, "local"), (KAGGLE_VM, {}, "local"), (NODE, {}, "grpc://10.0.0.2:8470"),
    (CPU, {"tpu": "my-tpu", "zone": "z", "project": "p"}, "my-tpu"),
])
def test_tpu_branches_connect_initialize_and_build_tpu_strategy(rt, kwargs, expected_tpu, capsys):
    backend = FakeBackend()
    strategy = strategy_for(rt, backend, **kwargs)
    assert isinstance(strategy, TPUStrategyV2)
    assert names(backend) == ["resolver", "connect", "initialize", "tpu_strategy"]
    assert backend.calls[0][1]["tpu"] == expected_tpu
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "TPUStrategy with 8 replicas" in out[0] and expected_tpu in out[0]


def test_named_tpu_from_environment_with_profile_tpu():
    backend = FakeBackend(replicas=32)
    s = strategy_for(CPU, backend, env={"TPU_NAME": "my-v3-32"}, profile="tpu", quiet=True)
    assert s.num_replicas_in_sync == 32 and backend.calls[0][1] == {"tpu": "my-v3-32"}


def test_second_call_reuses_the_strategy_without_reinitialising():
    backend = FakeBackend()
    first = strategy_for(KAGGLE_VM, backend, quiet=True)
    second = strategy_for(KAGGLE_VM, backend, quiet=True)
    assert first is second and names(backend).count("initialize") == 1


def test_gpus_get_a_mirrored_strategy(capsys):
    backend = FakeBackend(gpus=2)
    s = strategy_for(GPU, backend, cpu_replicas=8)
    assert names(backend) == ["mirrored"] and s.num_replicas_in_sync == 2 and strategy_kind(s) == "gpu"
    assert "MirroredStrategy over 2 replicas" in capsys.readouterr().out


def test_cpu_gets_the_default_strategy_or_simulated_replicas(capsys):
    backend = FakeBackend()
    s = strategy_for(CPU, backend)
    assert names(backend) == ["default"] and strategy_kind(s) == "cpu"
    assert "default strategy, 1 replica" in capsys.readouterr().out
    backend = FakeBackend()
    s = strategy_for(CPU, backend, cpu_replicas=8)
    assert names(backend) == ["simulate", "mirrored"] and s.num_replicas_in_sync == 8
    assert strategy_kind(s) == "cpu-replicas" and "8 logical CPU devices" in capsys.readouterr().out


def test_the_replicas_parameter_is_checked_on_a_cpu_and_ignored_on_a_tpu_or_gpus(capsys):
    simulated = strategy_for(CPU, FakeBackend(), cpu_replicas=8, quiet=True)
    assert check_replicas(simulated, 8) == 8 and check_replicas(simulated, None) == 8
    assert check_replicas(strategy_for(CPU, FakeBackend(), cpu_replicas=1, quiet=True), 1) == 1
    # a CPU strategy with another count than asked (a kernel whose devices were set before): a clear error
    with pytest.raises(ReplicaSimulationError, match="REPLICAS = 8 asked for 8 simulated replicas, but the strategy "
                                                     "runs 1") as e:
        check_replicas(_DefaultDistributionStrategy(), 8)
    assert "restart the kernel" in e.value.fix
    with pytest.raises(ReplicaSimulationError, match="runs 8"):
        check_replicas(simulated, 4)
    capsys.readouterr()
    # the hardware decides on a TPU (a v5e-1 has one replica) and on GPUs
    assert check_replicas(strategy_for(COLAB_VM, FakeBackend(replicas=1), quiet=True), 8) == 1
    assert "REPLICAS = 8 is ignored: this TPU has 1 replica, and the hardware decides" in capsys.readouterr().out
    assert check_replicas(strategy_for(GPU, FakeBackend(gpus=2), quiet=True), 8, quiet=True) == 2
    assert capsys.readouterr().out == ""
    assert check_replicas(strategy_for(KAGGLE_VM, FakeBackend(), quiet=True), 8) == 8
    assert capsys.readouterr().out == ""


# ------------------------------------------------------------------------------------------ failures
def test_profile_tpu_without_a_tpu_fails_before_touching_tensorflow():
    backend = FakeBackend()
    with pytest.raises(TPUNotFoundError, match="'tpu' profile needs a TPU") as e:
        strategy_for(CPU, backend, profile="tpu")
    assert backend.calls == [] and "PROFILE='cpu'" in e.value.fix


def test_no_tpu_name_from_the_real_message():
    err = explain_tpu_error(ValueError("Please provide a TPU Name to connect to."), TPUTarget(""), CPU)
    assert isinstance(err, TPUNameError) and "tpu='local'" in str(err) and "Fix:" in str(err)


def test_wrong_tpu_name():
    msg = ("Could not lookup TPU metadata from name 'my-tpu'. Please doublecheck the tpu argument in the "
           "TPUClusterResolver constructor. Exception: <HttpError 404>")
    backend = FakeBackend(fail={"resolver": ValueError(msg)})
    with pytest.raises(TPUNameError, match="does not know the TPU 'my-tpu' in zone 'z'") as e:
        strategy_for(CPU, backend, tpu="my-tpu", zone="z", project="p")
    assert "gcloud compute tpus tpu-vm list" in e.value.fix
    assert e.value.__cause__ is None and e.value.__suppress_context__  # a short error, not a chain


def test_missing_cloud_tpu_client():
    msg = "Missing runtime dependency on the Google API client. Run `pip install cloud-tpu-client` to fix."
    backend = FakeBackend(fail={"resolver": RuntimeError(msg)})
    with pytest.raises(TPUConnectionError, match="Cloud TPU API client") as e:
        strategy_for(CPU, backend, tpu="my-tpu", zone="z", project="p")
    assert "pip install cloud-tpu-client" in e.value.fix


def test_named_tpu_off_gce_without_zone():
    import urllib.error

    err = urllib.error.URLError("[Errno -2] Name or service not known")
    backend = FakeBackend(fail={"resolver": err})
    with pytest.raises(TPUConnectionError, match="metadata server") as e:
        strategy_for(CPU, backend, tpu="my-tpu")
    assert "zone='ZONE'" in e.value.fix


def test_no_tpu_found_during_initialize():
    err = NotFoundError("TPUs not found in the cluster. Failed in initialization: ...")
    backend = FakeBackend(fail={"initialize": err})
    with pytest.raises(TPUNotFoundError, match="found no TPU") as e:
        strategy_for(KAGGLE_VM, backend)
    assert "tensorflow-tpu==2.20.0" in e.value.fix


def test_cpu_only_wheel_on_a_tpu_vm():
    err = NotFoundError("TPUs not found in the cluster. Failed in initialization: No OpKernel was registered to "
                        "support Op 'ConfigureDistributedTPU' used by {{node ConfigureDistributedTPU}}")
    with pytest.raises(TPUNotFoundError, match="CPU-only `tensorflow` wheel") as e:
        strategy_for(COLAB_VM, FakeBackend(fail={"initialize": err}))
    assert "pip install tensorflow-tpu" in e.value.fix


def test_cpu_only_wheel_off_a_tpu_is_no_tpu_not_a_wrong_wheel():
    """tpu="local" on a machine without TPU chips (notebook 03's hand-written connection off a TPU)."""
    err = NotFoundError("TPUs not found in the cluster. Failed in initialization: No OpKernel was registered to "
                        "support Op 'ConfigureDistributedTPU' used by {{node ConfigureDistributedTPU}}")
    clear = explain_tpu_error(err, TPUTarget("local", how="vm"), CPU, lockfile="/nonexistent/libtpu_lockfile")
    assert isinstance(clear, TPUNotFoundError) and "found no TPU" in str(clear) and "CPU-only" not in str(clear)


def test_tpu_in_use_message_from_libtpu():
    err = RuntimeError("ABORTED: The TPU is already in use by process with pid 4242. Not attempting to load "
                       "libtpu.so in this process.")
    with pytest.raises(TPUInUseError, match="process 4242") as e:
        strategy_for(KAGGLE_VM, FakeBackend(fail={"initialize": err}))
    assert "kill 4242" in e.value.fix and "sudo rm /nonexistent/libtpu_lockfile" in e.value.fix


def test_stale_lockfile_message_from_libtpu():
    err = RuntimeError('Internal error when accessing libtpu multi-process lockfile. Run "$ sudo rm '
                       '/tmp/libtpu_lockfile".')
    with pytest.raises(TPUInUseError, match="already in use"):
        strategy_for(KAGGLE_VM, FakeBackend(fail={"connect": err}))


def test_node_unreachable():
    err = UnavailableError("failed to connect to all addresses")
    with pytest.raises(TPUConnectionError, match="Could not reach the TPU Node at grpc://10.0.0.2:8470"):
        strategy_for(NODE, FakeBackend(fail={"initialize": err}))


def test_unknown_errors_are_not_hidden():
    err = KeyError("something else")
    with pytest.raises(KeyError):
        strategy_for(KAGGLE_VM, FakeBackend(fail={"tpu_strategy": err}))
    assert explain_tpu_error(err, TPUTarget("local", how="vm"), KAGGLE_VM) is err


# ----------------------------------------------------------------------------------- the libtpu lock
@pytest.fixture
def held_lock(tmp_path):
    with held_libtpu_lock(tmp_path / "libtpu_lockfile") as pid:
        yield tmp_path / "libtpu_lockfile", pid


# the lock holder's own tests: tests/common/core/test_tpu_lock.py


def test_in_use_detected_from_the_lock_when_tf_only_says_not_found(held_lock):
    path, pid = held_lock
    err = NotFoundError("TPUs not found in the cluster.")
    with pytest.raises(TPUInUseError, match=f"process {pid}"):
        backend = FakeBackend(fail={"initialize": err})
        backend.lockfile = str(path)
        get_strategy(KAGGLE_VM, backend=backend, env={})


# -------------------------------------------------------------------------------- the jit_compile rule
def test_jit_compile_rule_per_strategy():
    assert not jit_compile_for(TPUStrategyV2())
    assert jit_compile_for(MirroredStrategy(["/device:GPU:0", "/device:GPU:1"]))
    assert not jit_compile_for(MirroredStrategy(["/device:CPU:0", "/device:CPU:1"]))
    assert jit_compile_for(MirroredStrategy(["/device:CPU:0"]))  # one CPU device: nothing to reach across
    assert jit_compile_for(_DefaultDistributionStrategy())
    assert "TPU" in jit_compile_for(TPUStrategyV2()).reason
    assert "CPU devices" in jit_compile_for(MirroredStrategy(["/device:CPU:0", "/device:CPU:1"])).reason
    assert describe_strategy(TPUStrategyV2(), KAGGLE_VM).startswith("Connected to v5e-8")


def test_checklist_flags_variables_outside_the_scope_and_wrong_jit():
    class V:
        def __init__(self, name, in_scope):
            self.name, self.in_scope = name, in_scope

    class Model:
        variables = [V("dense/kernel:0", True), V("dense/bias:0", False)]
        optimizer = None
        jit_compile = True

    items = {i.item.split(" (")[0]: i for i in tpu_checklist(TPUStrategyV2(), model=Model())}
    scope = next(i for k, i in items.items() if "strategy.scope" in k)
    jit = next(i for k, i in items.items() if k.startswith("jit_compile"))
    assert scope.ok is False and "dense/bias:0" in scope.detail
    assert jit.ok is False and "jit_compile=False" in jit.item


# ------------------------------------------------------------------------------- real TF, in children
def run_child(code: str, timeout: int = 240) -> dict:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    env.pop("TPU_COURSE_FIGURES", None)
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    return json.loads(lines[-1])


def test_real_simulated_replicas_on_this_cpu():
    out = run_child("""
        import json, re
        from tpu_helpers.core.runtime import Runtime
        from tpu_helpers.tpu_tf import strategy as st
        from tpu_helpers.tpu_tf.batches import replica_batch_sizes
        from tpu_helpers.tpu_tf.checklist import tpu_checklist, variables_outside_scope
        from tpu_helpers.xla_tf.jit_rule import jit_compile_for, strategy_kind
        r = {}
        s = st.get_strategy(Runtime("cpu", "local"), cpu_replicas=8, env={}, quiet=True)
        r["replicas"], r["kind"] = s.num_replicas_in_sync, strategy_kind(s)
        r["again"] = len(st.simulate_cpu_replicas(8))             # re-running the cell is fine
        try:
            st.simulate_cpu_replicas(4)
        except st.ReplicaSimulationError as e:
            r["change"] = str(e)
        import numpy as np, tensorflow as tf, tf_keras as keras
        r["jit_mirrored"] = bool(jit_compile_for(s))
        r["jit_default"] = bool(jit_compile_for(tf.distribute.get_strategy()))
        x = np.arange(100, dtype=np.float32)[:, None]
        r["split32"] = replica_batch_sizes(s, tf.data.Dataset.from_tensor_slices(x).batch(32))
        r["split10"] = replica_batch_sizes(s, tf.data.Dataset.from_tensor_slices(x).batch(10), steps=1)
        ds = tf.data.Dataset.from_tensor_slices((x, x)).batch(32, drop_remainder=True)
        def model():
            return keras.Sequential([keras.layers.Dense(1)])
        outside = model(); outside.build((None, 1))
        try:
            with s.scope():
                outside.compile(optimizer="sgd", loss="mse")
        except ValueError as e:
            r["scope_error"] = str(e)
        r["outside"] = len(variables_outside_scope(s, outside.variables))
        with s.scope():
            m = model(); m.compile(optimizer="sgd", loss="mse", jit_compile=True)
        try:
            m.fit(ds, epochs=1, verbose=0)
            r["jit_error"] = None
        except Exception as e:
            r["jit_error"] = type(e).__name__ + ": " + str(e)[-400:]
        with s.scope():
            good = model(); good.compile(optimizer="sgd", loss="mse", jit_compile=bool(jit_compile_for(s)))
        good.fit(ds, epochs=1, verbose=0)
        r["checklist"] = [(i.item, i.ok) for i in tpu_checklist(s, model=good, dataset=ds, xla_trained=True)]
        from tpu_helpers.tpu_tf.batches import replica_batch_shapes
        from tpu_helpers.tpu_tf.checklist import unsynced_variables
        r["shapes_ragged"] = replica_batch_shapes(s, tf.data.Dataset.from_tensor_slices((x, 2 * x)).batch(32))
        r["shapes_default"] = replica_batch_shapes(tf.distribute.get_strategy(), ds)
        trained = good.variables + list(good.optimizer.variables())
        r["unsynced_trained"] = unsynced_variables(s, trained)
        s.experimental_local_results(good.variables[0])[3].assign_add(tf.ones_like(good.variables[0]))  # a planted bug
        r["unsynced_planted"], r["planted"] = unsynced_variables(s, trained), good.variables[0].name
        r["unsynced_default"] = unsynced_variables(tf.distribute.get_strategy(), [tf.Variable(1.0)])
        print(json.dumps(r))
    """)
    assert (out["replicas"], out["kind"], out["again"]) == (8, "cpu-replicas", 8)
    assert "cannot be split into 4" in out["change"] and "restart the kernel" in out["change"]
    assert (out["jit_mirrored"], out["jit_default"]) == (False, True)
    from tpu_helpers.tpu_tf.batches import split_batch
    assert out["split32"] == [split_batch(32, 8)] * 3 + [split_batch(4, 8)]
    assert out["split10"] == [split_batch(10, 8)] == [[2, 2, 2, 2, 2, 0, 0, 0]]
    assert "was not created in the distribution strategy scope" in out["scope_error"] and out["outside"] == 2
    # why the rule says jit_compile=False for simulated replicas: if this starts passing, update the rule
    assert out["jit_error"] and "InvalidArgumentError" in out["jit_error"], out["jit_error"]
    assert all(ok for _, ok in out["checklist"]), out["checklist"]
    # what each replica received, per step: 32 = 4 on each of 8; the last 4 examples leave 4 replicas an empty batch
    four, one, none = [[4, 1], [4, 1]], [[1, 1], [1, 1]], [[0, 1], [0, 1]]  # (x, 2x) shapes, as JSON lists
    assert out["shapes_ragged"] == [[four] * 8] * 3 + [[one] * 4 + [none] * 4]
    assert out["shapes_default"] == [[[[32, 1], [32, 1]]]] * 3  # the default strategy: one replica, the whole batch
    # after training every replica holds the same weights and optimizer state; one changed copy is found
    assert out["unsynced_trained"] == [] and out["unsynced_default"] == []
    assert out["unsynced_planted"] == [out["planted"]] and "kernel" in out["planted"], out["unsynced_planted"]


def test_real_errors_on_this_cpu():
    out = run_child("""
        import json
        from tpu_helpers.core.runtime import Runtime
        from tpu_helpers.tpu_tf import strategy as st
        from tpu_helpers.tpu_tf.batches import replica_batch_sizes
        from tpu_helpers.tpu_tf.checklist import tpu_checklist, variables_outside_scope
        from tpu_helpers.xla_tf.jit_rule import jit_compile_for, strategy_kind
        import tensorflow as tf
        r = {}
        tf.constant(1.0)                                          # TensorFlow has initialised its devices
        try:
            st.simulate_cpu_replicas(8)
        except st.ReplicaSimulationError as e:
            r["late"] = str(e)
        try:
            tf.distribute.cluster_resolver.TPUClusterResolver()
        except ValueError as e:
            r["no_name"] = type(st.explain_tpu_error(e, st.TPUTarget(""), Runtime("cpu", "local"))).__name__
        try:
            st.get_strategy(Runtime("cpu", "local"), tpu="local", env={}, quiet=True)
        except st.TPUNotFoundError as e:
            r["local"] = str(e)
        print(json.dumps(r))
    """)
    assert "already initialised its devices in this kernel with 1 CPU device(s)" in out["late"]
    assert out["no_name"] == "TPUNameError"
    # no chips here: "no TPU" with the fix, not "the CPU-only wheel on this VM" (that needs a TPU runtime)
    assert "found no TPU" in out["local"] and "tensorflow-tpu==" in out["local"] and "CPU-only" not in out["local"]


def test_the_tpu_install_hint_is_the_install_plan():
    """The fix a TPUNotFoundError prints is the plan the notebooks' install cell runs (tools/install_plan.py)."""
    import install_plan

    from tpu_helpers.tpu_tf.strategy import TF_TPU_INSTALL

    pins = install_plan.read_pins()
    for call in install_plan.framework_calls("tf", "tpu", pins):
        for arg in call:
            if "==" in arg or arg in ("tensorflow", "tensorflow-cpu", "--no-deps"):
                assert arg in TF_TPU_INSTALL, (arg, TF_TPU_INSTALL)


@pytest.mark.parametrize("kwargs, message", [({"profile": "tpuu"}, "unknown profile 'tpuu'"),
                                             ({"cpu_replicas": -3}, "cpu_replicas=-3"),
                                             ({"cpu_replicas": 2.5}, "whole number")])
def test_nonsense_settings_are_refused_not_silently_replaced(kwargs, message):
    backend = FakeBackend()
    with pytest.raises(ValueError, match=message):
        strategy_for(CPU, backend, **kwargs)
    assert backend.calls == []  # refused before TensorFlow was touched


def test_a_grpc_address_that_is_not_a_tpu_node_is_a_connection_error():
    """What TensorFlow 2.20 raises when grpc://IP:8470 answers but is not a TPU Node's worker."""
    UnimplementedError = type("UnimplementedError", (Exception,), {})
    err = UnimplementedError("Method not found: /tensorflow.WorkerService/GetStatus")
    with pytest.raises(TPUConnectionError, match="Could not reach the TPU Node at grpc://10.0.0.2:8470"):
        strategy_for(NODE, FakeBackend(fail={"connect": err}))
