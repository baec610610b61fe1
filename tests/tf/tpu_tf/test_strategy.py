"""The connection of notebook 03 (`lesson_cells.make_strategy`, around it `tpu_tf.strategy`): the TPU each runtime connects
to, every known failure from TensorFlow's and libtpu's own messages (TensorFlow 2.20's tpu_cluster_resolver.py and
tpu/client/client.py, openxla/xla tpu_initialize_util.cc), and the real CPU paths in child processes (logical devices
can only be configured before TensorFlow initialises, and other test modules share this process).
"""
import json
import os
import subprocess
import sys
import textwrap
import urllib.error

import pytest
from course_testing import ROOT, held_libtpu_lock

from tpu_helpers.core.runtime import Runtime
from tpu_helpers.tpu_tf.checklist import tpu_checklist
from tpu_helpers.tpu_tf.strategy import (
    check_replicas,
    explain_tpu_error,
    tpu_to_connect,
)
from tpu_helpers.xla_tf.lesson_cells import jit_compile_for

COLAB_VM = Runtime("colab-tpu-vm", "colab", "v5litepod-1", "v5e", 1, 1)
KAGGLE_VM = Runtime("kaggle-tpu-vm", "kaggle", "v5litepod-8", "v5e", 8, 8)
NODE = Runtime("tpu-node", "colab", devices=8, tpu_address="grpc://10.0.0.2:8470")
CPU = Runtime("cpu", "local")
GPU = Runtime("gpu", "local", gpus=2)


class NotFoundError(Exception):
    """Named like tf.errors.NotFoundError (the explanation goes by name and message)."""


class UnavailableError(Exception):
    pass


# --------------------------------------------------------------------------------- fake strategies
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




@pytest.fixture(autouse=True)
def no_lock_holder(monkeypatch):
    """No process holds this machine's libtpu lock (a test that needs one patches its own)."""
    from tpu_helpers.tpu_tf import strategy

    monkeypatch.setattr(strategy, "libtpu_lock_holder", lambda: None)


def explained(message_or_error, tpu, rt=CPU, **kw):
    err = message_or_error if isinstance(message_or_error, BaseException) else ValueError(message_or_error)
    clear = explain_tpu_error(err, tpu, rt, **kw)
    assert clear is not err and isinstance(clear, RuntimeError) and "\nFix: " in str(clear), clear
    return str(clear)


# ------------------------------------------------------------------------------------------ targets
def test_the_tpu_each_runtime_connects_to():
    assert tpu_to_connect(COLAB_VM, env={}) == tpu_to_connect(KAGGLE_VM, env={}) == "local"
    assert tpu_to_connect(NODE, env={}) == "grpc://10.0.0.2:8470"
    assert tpu_to_connect(CPU, env={}) is None and tpu_to_connect(GPU, env={}) is None
    assert tpu_to_connect(CPU, env={"TPU_NAME": "my-v3-32"}) == "my-v3-32"
    assert tpu_to_connect(KAGGLE_VM, "other", env={}) == "other"  # an explicit name wins


def test_the_replicas_parameter_is_checked_on_a_cpu_and_ignored_on_a_tpu_or_gpus(capsys):
    simulated = MirroredStrategy([f"/device:CPU:{i}" for i in range(8)])
    assert check_replicas(simulated, 8) == 8 and check_replicas(simulated, None) == 8
    with pytest.raises(RuntimeError, match="REPLICAS = 8 asked for 8 simulated replicas, but the strategy runs 1(.|\n)*"
                                           "restart the kernel"):
        check_replicas(_DefaultDistributionStrategy(), 8)
    assert check_replicas(TPUStrategyV2(1), 8) == 1
    assert "REPLICAS = 8 is ignored: this TPU has 1 replica, and the hardware decides" in capsys.readouterr().out
    assert check_replicas(MirroredStrategy(["/device:GPU:0", "/device:GPU:1"]), 8) == 2


# ------------------------------------------------------------------------------------------ failures
def test_known_failures_say_what_to_do():
    assert "tpu='local'" in explained("Please provide a TPU Name to connect to.", None)
    wrong = explained("Could not lookup TPU metadata from name 'my-tpu'. Please doublecheck the tpu argument in the "
                      "TPUClusterResolver constructor. Exception: <HttpError 404>", "my-tpu", zone="z", project="p")
    assert "does not know the TPU 'my-tpu' in zone 'z'" in wrong and "gcloud compute tpus tpu-vm list" in wrong
    google_api = RuntimeError("Missing runtime dependency on the Google API client. Run `pip install cloud-tpu-client`")
    assert explain_tpu_error(google_api, "my-tpu", CPU) is google_api  # TensorFlow's own message says what to do
    assert "metadata server" in explained(urllib.error.URLError("[Errno -2] Name or service not known"), "my-tpu")
    not_found = NotFoundError("TPUs not found in the cluster. Failed in initialization: ...")
    assert "found no TPU" in explained(not_found, "local", KAGGLE_VM) and "tensorflow-tpu==2.20.0" in explained(
        not_found, "local", KAGGLE_VM)
    cpu_wheel = NotFoundError("TPUs not found in the cluster. Failed in initialization: No OpKernel was registered "
                              "to support Op 'ConfigureDistributedTPU' used by {{node ConfigureDistributedTPU}}")
    assert "tensorflow-tpu==2.20.0" in explained(cpu_wheel, "local", COLAB_VM)  # (start() stops the CPU wheel first)
    in_use = explained(RuntimeError("ABORTED: The TPU is already in use by process with pid 4242. Not attempting to "
                                    "load libtpu.so in this process."), "local", KAGGLE_VM)
    assert "process 4242" in in_use and "kill 4242" in in_use
    assert "already in use" in explained(RuntimeError('Internal error when accessing libtpu multi-process lockfile. '
                                                      'Run "$ sudo rm /tmp/libtpu_lockfile".'), "local", KAGGLE_VM)
    assert "Could not reach the TPU Node at grpc://10.0.0.2:8470" in explained(
        UnavailableError("failed to connect to all addresses"), "grpc://10.0.0.2:8470", NODE)
    unimplemented = type("UnimplementedError", (Exception,), {})("Method not found: /tensorflow.WorkerService/GetStatus")
    assert "Could not reach the TPU Node" in explained(unimplemented, "grpc://10.0.0.2:8470", NODE)
    # TensorFlow's TPU build off a TPU (the hosted TPU images rehearsed on a CPU): an InternalError from its TPU init op
    internal = type("InternalError", (Exception,), {})("[[{{node disconnect_tpu_host/_1}}]] [Op:__inference__tpu_init_fn_28]")
    assert "TensorFlow found no TPU" in explained(internal, "local", CPU)
    assert explain_tpu_error(internal, "local", KAGGLE_VM) is internal  # on a TPU VM: not guessed
    other = KeyError("something else")
    assert explain_tpu_error(other, "local", KAGGLE_VM) is other  # unknown errors are not hidden


def test_in_use_detected_from_the_lock_when_tf_only_says_not_found(tmp_path, monkeypatch):
    from tpu_helpers.core.tpu_lock import libtpu_lock_holder
    from tpu_helpers.tpu_tf import strategy

    monkeypatch.setattr(strategy, "libtpu_lock_holder", lambda: libtpu_lock_holder(tmp_path / "libtpu_lockfile"))
    with held_libtpu_lock(tmp_path / "libtpu_lockfile") as pid:
        text = explained(NotFoundError("TPUs not found in the cluster."), "local", KAGGLE_VM)
    assert f"process {pid}" in text


def test_jit_compile_rule_per_strategy():
    assert not jit_compile_for(TPUStrategyV2())
    assert jit_compile_for(MirroredStrategy(["/device:GPU:0", "/device:GPU:1"]))
    assert not jit_compile_for(MirroredStrategy(["/device:CPU:0", "/device:CPU:1"]))
    assert jit_compile_for(MirroredStrategy(["/device:CPU:0"]))  # one CPU device: nothing to reach across
    assert jit_compile_for(_DefaultDistributionStrategy())
    assert "TPU" in jit_compile_for(TPUStrategyV2()).reason
    assert "CPU devices" in jit_compile_for(MirroredStrategy(["/device:CPU:0", "/device:CPU:1"])).reason


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
        from tpu_helpers.tpu_tf.checklist import tpu_checklist, variables_outside_scope
        from tpu_helpers.xla_tf.lesson_cells import jit_compile_for, strategy_kind
        import importlib.util  # tests/course_support/mlm.py by path: tests/ off sys.path (tests/torch is no `torch`)
        spec = importlib.util.spec_from_file_location("course_support_mlm", "tests/course_support/mlm.py")
        support = importlib.util.module_from_spec(spec); spec.loader.exec_module(support)
        checks = support.notebook_04_checks()  # notebook 04's replicas checks, from its cells
        replica_batch_shapes, unsynced_variables = checks.replica_batch_shapes, checks.unsynced_variables
        def replica_batch_sizes(s, ds):
            return [[shapes[0][0] for shapes in step] for step in replica_batch_shapes(s, ds)]
        from tpu_helpers.tpu_tf.lesson_cells import make_strategy
        r = {}
        s = make_strategy(cpu_replicas=8)
        r["replicas"], r["kind"] = s.num_replicas_in_sync, strategy_kind(s)
        r["again"] = make_strategy(cpu_replicas=8).num_replicas_in_sync
        try:                                                      # re-running the cell is fine; another count is not
            make_strategy(cpu_replicas=4)
        except Exception as e:  # as notebook 03's connection cell explains it
            r["change"] = str(st.explain_tpu_error(e, None, Runtime("cpu", "local")))
        import numpy as np, tensorflow as tf, tf_keras as keras
        r["jit_mirrored"] = bool(jit_compile_for(s))
        r["jit_default"] = bool(jit_compile_for(tf.distribute.get_strategy()))
        x = np.arange(100, dtype=np.float32)[:, None]
        r["split32"] = replica_batch_sizes(s, tf.data.Dataset.from_tensor_slices(x).batch(32))
        r["split10"] = replica_batch_sizes(s, tf.data.Dataset.from_tensor_slices(x).batch(10).take(1))
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
    assert "cannot be split into replicas now" in out["change"] and "restart the kernel" in out["change"]
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
        from tpu_helpers.tpu_tf.lesson_cells import make_strategy
        import tensorflow as tf
        r = {}
        tf.constant(1.0)                                          # TensorFlow has initialised its devices
        try:
            make_strategy(cpu_replicas=8)
        except Exception as e:  # as notebook 03's connection cell explains it
            r["late"] = str(st.explain_tpu_error(e, None, Runtime("cpu", "local")))
        try:
            tf.distribute.cluster_resolver.TPUClusterResolver()
        except ValueError as e:
            r["no_name"] = str(st.explain_tpu_error(e, None, Runtime("cpu", "local")))
        try:
            make_strategy("local")
        except Exception as e:
            r["local"] = str(st.explain_tpu_error(e, "local", Runtime("cpu", "local")))
        print(json.dumps(r))
    """)
    assert "already set up its devices" in out["late"] and "restart the kernel" in out["late"]
    assert "No TPU name" in out["no_name"] and "tpu='local'" in out["no_name"]
    # no chips here: "no TPU" with the fix, not "the CPU-only wheel on this VM" (that needs a TPU runtime)
    assert "found no TPU" in out["local"] and "tensorflow-tpu==" in out["local"] and "CPU-only" not in out["local"]


def test_the_tpu_install_hint_is_the_install_plan():
    """The fix for "no TPU found" prints is the plan the notebooks' install cell runs (tools/install_plan.py)."""
    import install_plan

    from tpu_helpers.tpu_tf.strategy import TF_TPU_INSTALL

    pins = install_plan.read_pins("tf")
    for call in install_plan.framework_calls("tf", "tpu", pins):
        for arg in call:
            if "==" in arg or arg in ("tensorflow", "tensorflow-cpu", "--no-deps"):
                assert arg in TF_TPU_INSTALL, (arg, TF_TPU_INSTALL)
