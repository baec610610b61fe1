"""tpu_helpers.xla_tf (counters, compiler; the losses and the jit_compile rule of notebook 01) counts what XLA really compiled (TensorFlow 2.20, XLA:CPU), and its helpers hold.

TensorFlow is imported in fixtures, never at module level (see tools/run_tests.py). One test checks the
counters against ground truth: the HLO modules XLA dumps (XLA_FLAGS=--xla_dump_to) in a child process.
"""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tpu_helpers.core import runtime
from tpu_helpers.xla_tf import compiler, counters
from tpu_helpers.xla_tf.lesson_cells import (
    boolean_mask_sparse_categorical_crossentropy,
    jit_compile_for,
    masked_sparse_categorical_crossentropy,
)


def test_three_shapes_three_compilations_then_cache_hits(tf):
    step = counters.jit(lambda x: tf.reduce_sum(x * 3.0))
    with counters.CompilationCounter(step) as c:
        for n in (13, 14, 15):
            step(tf.ones((n,)))
    assert (c.compilations, c.traces, c.calls, c.cache_hits) == (3, 3, 3, 0)
    assert step.function.experimental_get_tracing_count() == step.traces == 3  # Python counter == TensorFlow's
    with counters.CompilationCounter(step) as again:
        for n in (13, 14, 15, 13):
            step(tf.ones((n,)))
    assert (again.compilations, again.traces, again.calls, again.cache_hits) == (0, 0, 4, 4)
    # dtype is part of the shape signature: a new compilation; a NumPy array of a known shape is not
    with counters.CompilationCounter(step) as dtype:
        step(tf.ones((13,), tf.float64))
        step(np.ones(14, np.float32))
    assert dtype.compilations == 1 and step.function.experimental_get_tracing_count() == 4


def test_update_inside_the_block_and_per_function(tf):
    a = counters.jit(lambda x: x + 1.0)
    b = counters.jit(lambda x: x * 2.0)
    with counters.CompilationCounter(a, b) as c:
        a(tf.ones(2))
        assert c.update().compilations == 1
        b(tf.ones(2))
        b(tf.ones(3))
    assert c.compilations == 3 and sorted(v["compilations"] for v in c.per_function.values()) == [1, 2]
    assert "compilations=3" in str(c)


def test_reduce_retracing_traces_once_but_compiles_every_shape(tf):
    step = counters.jit(lambda x: tf.reduce_sum(x * 2.0), reduce_retracing=True)
    with counters.CompilationCounter(step) as c:
        for n in (3, 4, 5, 6):
            step(tf.ones((n,)))
    assert c.compilations == 4 and c.traces < 4


def test_a_failed_call_is_not_a_compilation(tf):
    step = counters.jit(lambda x: tf.numpy_function(lambda a: a, [x], tf.float32))
    with pytest.raises(Exception):
        step(tf.ones(2))
    assert step.compilations == 0 and step.calls == 0


_DUMP_SCRIPT = textwrap.dedent("""
    import json, os
    import tensorflow as tf
    from tpu_helpers.xla_tf import compiler, counters
    static = counters.jit(lambda x: tf.reduce_sum(x * 3.0))
    relaxed = counters.jit(lambda x: tf.reduce_max(x * 5.0), reduce_retracing=True)
    with counters.CompilationCounter(static) as a:
        for n in (5, 6, 7, 5, 6):
            static(tf.ones((n,)))
    with counters.CompilationCounter(relaxed) as b:
        for n in (5, 6, 7, 8, 5):
            relaxed(tf.ones((n,)))
    print(json.dumps({"static": a.compilations, "relaxed": b.compilations, "relaxed_traces": b.traces}))
""")


def test_counts_equal_the_modules_xla_compiled(tmp_path):
    """Ground truth: XLA dumps one HLO module per program it compiles."""
    dump = tmp_path / "dump"
    env = dict(os.environ, XLA_FLAGS=f"--xla_dump_to={dump}", TF_CPP_MIN_LOG_LEVEL="2")
    proc = subprocess.run([sys.executable, "-c", _DUMP_SCRIPT], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    counts = json.loads([ln for ln in proc.stdout.splitlines() if ln.startswith("{")][-1])
    modules = [p.name for p in dump.glob("*.before_optimizations.txt")]
    # the lambdas trace as __inference_<lambda>_N: tell them apart by the op each one uses
    by_op = {"static": 0, "relaxed": 0}
    for p in dump.glob("*.before_optimizations.txt"):
        text = p.read_text()
        if "constant(3)" in text:
            by_op["static"] += 1
        elif "constant(5)" in text:
            by_op["relaxed"] += 1
    assert len(modules) == by_op["static"] + by_op["relaxed"], modules
    assert counts["static"] == by_op["static"] == 3
    assert counts["relaxed"] == by_op["relaxed"] == 4 and counts["relaxed_traces"] < 4


def test_check_xla_reports_what_fails_and_why(tf):
    def halve_if_big(t):
        if tf.reduce_sum(t) > 10:
            t = t / 2.0
        return t

    x = tf.range(6, dtype=tf.float32)
    ok = compiler.check_xla(halve_if_big, x)
    assert ok.compiles and ok.error_type is None
    no_autograph = compiler.check_xla(halve_if_big, x, autograph=False)
    assert not no_autograph.compiles and no_autograph.error_type == "OperatorNotAllowedInGraphError"
    assert "Python `bool`" in no_autograph.message and len(no_autograph.message) < 200
    callback = compiler.check_xla(lambda t: tf.numpy_function(lambda a: a, [t], tf.float32), x)
    assert callback.error_type == "InvalidArgumentError" and "PyFunc" in callback.message

    def one_branch(t):
        if tf.reduce_sum(t) > 0:
            y = t * 2
        return y

    branch = compiler.check_xla(one_branch, x)
    assert branch.error_type == "ValueError" and branch.message.startswith("'y' must also be initialized")


def _reference_loss(labels, logits):
    lab, lg = labels.reshape(-1), logits.reshape(labels.size, -1).astype(np.float64)
    keep = lab != -100
    lg = lg[keep] - lg[keep].max(axis=1, keepdims=True)
    logp = lg - np.log(np.exp(lg).sum(axis=1, keepdims=True))
    return -logp[np.arange(keep.sum()), lab[keep]].mean()


def test_masked_loss_equals_the_reference_and_the_boolean_mask_loss(tf):
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(3, 7, 11)).astype(np.float32)
    labels = rng.integers(0, 11, size=(3, 7)).astype(np.int32)
    labels[rng.random((3, 7)) < 0.6] = -100
    ref = _reference_loss(labels, logits)
    eager = float(masked_sparse_categorical_crossentropy(labels, logits))
    compiled = float(counters.jit(masked_sparse_categorical_crossentropy)(tf.constant(labels),
                                                                               tf.constant(logits)))
    boolean = float(boolean_mask_sparse_categorical_crossentropy(labels, logits))
    assert eager == pytest.approx(ref, rel=1e-5) and compiled == pytest.approx(ref, rel=1e-5)
    assert boolean == pytest.approx(ref, rel=1e-5)
    # no labelled position: 0, not NaN; a different ignore index works too
    assert float(masked_sparse_categorical_crossentropy(np.full((2, 3), -100), logits[:2, :3])) == 0.0
    shifted = np.where(labels == -100, -1, labels)
    assert float(masked_sparse_categorical_crossentropy(shifted, logits, ignore_index=-1)) == \
        pytest.approx(ref, rel=1e-5)


def test_masked_loss_matches_transformers(tf):
    """transformers' own TF loss (the masked mean, not the legacy boolean mask) gives the same number."""
    from tpu_helpers.core.frameworks import use_framework

    use_framework("tf")
    modeling_tf_utils = pytest.importorskip("transformers.modeling_tf_utils")
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(2, 9, 13)).astype(np.float32)
    labels = rng.integers(0, 13, size=(2, 9)).astype(np.int32)
    labels[rng.random((2, 9)) < 0.5] = -100

    class Loss(modeling_tf_utils.TFCausalLanguageModelingLoss):
        config = type("Config", (), {"tf_legacy_loss": False})()

    hf = float(Loss().hf_compute_loss(tf.constant(labels), tf.constant(logits))[0])
    ours = float(masked_sparse_categorical_crossentropy(labels, logits))
    assert ours == pytest.approx(hf, rel=1e-6)


def test_ir_stats_show_the_bounded_dynamic_shape(tf):
    rng = np.random.default_rng(2)
    logits = tf.constant(rng.normal(size=(2, 8, 5)), tf.float32)
    labels = tf.constant(np.where(rng.random((2, 8)) < 0.5, -100, rng.integers(0, 5, (2, 8))), tf.int32)
    bm = compiler.compiled_ir_stats(counters.jit(boolean_mask_sparse_categorical_crossentropy), labels, logits)
    mm = compiler.compiled_ir_stats(counters.jit(masked_sparse_categorical_crossentropy), labels, logits)
    assert bm.dynamic_shapes and all("<=16" in s for s in bm.dynamic_shapes)
    assert not bm.optimized_dynamic_shapes and "f32[16,5]" in bm.optimized_shapes
    assert not mm.dynamic_shapes and bm.optimized_instructions > mm.optimized_instructions
    assert "reduce" in mm.opcodes and mm.hlo_instructions > 0


def test_jit_compile_for_runtimes():
    cpu = runtime.Runtime("cpu", "local")
    gpu = runtime.Runtime("gpu", "colab", gpus=1)
    tpu_vm = runtime.Runtime("kaggle-tpu-vm", "kaggle", "v5litepod-8", "v5e", 8, 8)
    node = runtime.Runtime("tpu-node", "colab", None, None, None, 8, "grpc://10.0.0.2:8470")
    assert jit_compile_for(cpu) and jit_compile_for(gpu)
    assert not jit_compile_for(tpu_vm) and not jit_compile_for(node)
    assert jit_compile_for(tpu_vm).enabled is False and "TPU" in jit_compile_for(tpu_vm).reason
    assert str(jit_compile_for(cpu)).startswith("jit_compile=True")
    assert bool(jit_compile_for(runtime.detect_runtime())) == (not runtime.detect_runtime().is_tpu)
    for not_a_target in ("tpu", None):
        with pytest.raises(TypeError, match="takes a runtime"):
            jit_compile_for(not_a_target)


def test_jit_compile_for_strategies(tf):
    assert jit_compile_for(tf.distribute.get_strategy())
    assert jit_compile_for(tf.distribute.OneDeviceStrategy("/cpu:0"))
    # a TPUStrategy cannot be built without a TPU; the class (by name, like TPUStrategyV2) is what counts
    fake_tpu = type("TPUStrategyV2", (), {"extended": None, "scope": lambda self: None})()
    assert not jit_compile_for(fake_tpu)
    on_tpu_devices = type("MirroredStrategy", (), {"scope": lambda self: None, "extended": type(
        "E", (), {"worker_devices": ("/job:worker/replica:0/task:0/device:TPU:0",)})()})()
    assert not jit_compile_for(on_tpu_devices)
    two_cpus = type("MirroredStrategy", (), {"scope": lambda self: None, "extended": type(
        "E", (), {"worker_devices": ("/device:CPU:0", "/device:CPU:1")})()})()
    decision = jit_compile_for(two_cpus)
    assert not decision and "2 CPU devices" in decision.reason


def test_seconds_per_call(tf):
    step = counters.jit(lambda x: tf.reduce_sum(x))
    t = counters.seconds_per_call(step, tf.ones(4), repeat=3, warmup_steps=1)
    assert 0 < t < 5 and step.calls == 4 and step.compilations == 1


def test_compilations_come_from_xlas_records_not_from_python(tf):
    """The count is what XLA wrote (one record per program it compiled to run the function), beside Python's
    expectation; asking for the optimized IR compiles too, under another name, and does not count."""
    f = counters.jit(lambda x: tf.reduce_sum(x * 7.0))
    for n in (3, 4, 3, 5):
        f(tf.ones((n,)))
    assert f.expected_compilations == 3 and f.compilations == 3 and f.calls == 4
    f.experimental_get_compiler_ir(tf.ones((9,)))(stage="optimized_hlo")
    assert f.compilations == 3 and counters.xla_compiled_modules(f.tag) == 3
    relaxed = counters.jit(lambda x: tf.reduce_max(x * 7.0), reduce_retracing=True)
    for n in (3, 4, 5, 6):
        relaxed(tf.ones((n,)))
    assert relaxed.traces < 4 and relaxed.compilations == relaxed.expected_compilations == 4


_NO_RECORDS = textwrap.dedent("""
    import os
    os.environ.pop("XLA_FLAGS", None)
    import tensorflow as tf
    from tpu_helpers.xla_tf import compiler, counters
    f = counters.jit(lambda x: x + 1.0)
    f(tf.ones(2))
    try:
        f.compilations
    except RuntimeError as e:
        print("CLEAR:", e)
""")


def test_without_xlas_records_the_count_is_refused_not_guessed():
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    proc = subprocess.run([sys.executable, "-c", _NO_RECORDS], env={**env, "TF_CPP_MIN_LOG_LEVEL": "3"},
                          capture_output=True, text=True, timeout=300)
    assert "CLEAR:" in proc.stdout and "use_framework('tf')" in proc.stdout, proc.stdout + proc.stderr[-1500:]


_EMPTY_FOLDER = textwrap.dedent("""
    import json, os, sys
    import tensorflow as tf
    from tpu_helpers.xla_tf import counters
    f = counters.jit(lambda x: tf.reduce_sum(x * 3.0))
    with counters.CompilationCounter(f) as c:
        for n in (5, 6, 5):
            f(tf.ones((n,)))
    kept = counters.recorded(c)
    print(json.dumps({"kept": kept, "compilations": c.compilations, "function": f.compilations, "calls": c.calls,
                      "text": str(c), "files": os.listdir(sys.argv[1])}))
""")


def test_a_dump_folder_that_stays_empty_is_not_measured_and_the_run_goes_on(tmp_path):
    """Where XLA writes no record (here: the learner's own dump flags filter every module out), the count is said
    to be not measured, with the reason, and nothing stops."""
    dump = tmp_path / "dump"
    dump.mkdir()
    env = dict(os.environ, XLA_FLAGS=f"--xla_dump_to={dump} --xla_dump_hlo_module_re=^nothing$",
               TF_CPP_MIN_LOG_LEVEL="2")
    proc = subprocess.run([sys.executable, "-c", _EMPTY_FOLDER, str(dump)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["files"] == [] and out["calls"] == 3  # the folder stayed empty; every call ran
    assert out["kept"] is False and out["compilations"] is None and out["function"] is None
    assert "compilations=n/a" in out["text"]
    assert "n/a   XLA compilations of <lambda>: not measured on this runtime (your XLA_FLAGS send" in proc.stdout


def test_on_a_tpu_a_missing_record_is_not_measured_while_on_this_host_it_is_an_error(tf, monkeypatch, capsys):
    """The course's own records on this host: a missing one raises (use_framework came too late). Where TensorFlow
    compiles on a TPU (libtpu, unverified), it is reported as not measured instead."""
    f = counters.jit(lambda x: x * 2.0)
    f(tf.ones(3))
    assert f.compilations == 1 and counters.recorded(f) and capsys.readouterr().out == ""
    monkeypatch.setattr(f, "tag", f.tag + "elsewhere")  # a program compiled where no record of it is written
    with pytest.raises(RuntimeError, match="use_framework"):
        f.compilations
    monkeypatch.setattr(counters, "_compiles_on_tpu", lambda: True)
    assert f.compilations is None and "compiled it on the TPU" in f.unmeasured
    assert not counters.recorded(f) and "not measured on this runtime (TensorFlow compiled it on the TPU" in (
        capsys.readouterr().out)


def test_first_xla_check_traces_once_and_returns_hlo(tf):
    """What notebook 00 shows (moved here from its asserts): one input shape, one trace, an HLO module."""
    from tpu_helpers.core.runtime import detect_runtime
    from tpu_helpers.ready import first_xla

    check = first_xla.tf_first_xla(detect_runtime())
    assert check["traces"] == 1 and check["value"] == check["expected"] and check["hlo"].startswith("HloModule")


def test_the_cpu_build_compiles_for_the_host_and_says_where(tf):
    """TensorFlow's CPU build has XLA:CPU (the TPU build has none: tests/hosted rehearses that on Colab's image)."""
    from tpu_helpers.core.runtime import Runtime
    from tpu_helpers.ready import first_xla

    assert first_xla.tf_host_xla_missing() is None
    check = first_xla.tf_first_xla(Runtime("cpu", "local"))
    assert check["xla"] and check["device"] == "/CPU:0" and not any(":TPU:" in d for d in check["devices"])
    first_xla.require_host_xla("this test")  # the CPU build: nothing to stop


def test_the_tpu_build_stops_a_host_xla_notebook_with_what_to_do(monkeypatch):
    from tpu_helpers.ready import first_xla

    monkeypatch.setattr(first_xla, "tf_host_xla_missing", lambda: first_xla.HOST_XLA_MISSING + " -- check target linkage")
    with pytest.raises(RuntimeError, match=r"Notebook 01 measures.*TPU build has no XLA backend.*CPU runtime"):
        first_xla.require_host_xla("Notebook 01 measures XLA on this machine's CPU")
