"""Notebook 00's framework-free exercise check: reading a TPU accelerator type. It passes on the reference
answer and fails, naming the problem, on typical wrong answers. And its TensorFlow exercise, a first XLA function
and its HLO."""
import pytest
from course_testing import ROOT, failed, skeleton

from tpu_helpers.ready import exercise_checks as nb00
from tpu_helpers.ready import solutions as solution


def test_reference_answer_passes():
    result = nb00.check_read_accelerator_type(solution.read_accelerator_type)
    assert result.passed and result.attempted, result.message
    assert "all 10 accelerator types" in result.message


def test_the_number_in_the_name_is_not_always_chips():
    def chips_from_the_name(name):  # the typical slip: "v3-8" read as 8 chips
        generation, number = name.rsplit("-", 1)
        return ("v5e" if generation.startswith("v5lite") else generation), int(number)

    result = nb00.check_read_accelerator_type(chips_from_the_name)
    assert not result.passed and result.attempted
    assert "counts TensorCores, 2 per chip" in result.message and "'v3-8' has 4 chips" in result.message
    assert result.message.startswith("4 of 10 accelerator types read right")


def test_v5litepod_is_a_v5e():
    def literal_generation(name):
        generation, number = name.rsplit("-", 1)
        return generation, solution.read_accelerator_type(name)[1]

    result = nb00.check_read_accelerator_type(literal_generation)
    assert not result.passed
    assert "'v5litepod-1' is Google's name for a v5e slice" in result.message


def test_wrong_return_type_and_crash_are_explained():
    result = nb00.check_read_accelerator_type(lambda name: f"{name} has 4 chips")
    assert not result.passed and "returned 'v2-8 has 4 chips', expected ('v2', 4)" in result.message

    def crashes(name):
        return name.split("-")[2]

    result = nb00.check_read_accelerator_type(crashes)
    assert not result.passed and result.attempted
    assert "read_accelerator_type('v2-8') raised IndexError" in result.message


def test_skeleton_is_not_attempted():
    def skeleton(name):
        raise NotImplementedError  # YOUR ANSWER

    result = nb00.check_read_accelerator_type(skeleton)
    assert not result.passed and not result.attempted and "not attempted" in result.message


def test_check_modules_and_the_nb00_solutions_do_not_import_a_framework():
    import subprocess
    import sys

    code = ("import sys; import tpu_helpers.ready.exercise_checks, tpu_helpers.xla_tf.exercise_checks, tpu_helpers.ready.solutions; "
            "loaded = [m for m in ('tensorflow', 'torch') if m in sys.modules]; assert not loaded, loaded")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr


@pytest.fixture(scope="module")
def solution0(tf):
    from tpu_helpers.ready import solutions as solution
    return solution


# ----------------------------------------------------------------------------- notebook 00: a first XLA function
def test_nb00_first_xla_function_passes_on_reference(solution0):
    result = nb00.check_first_xla_function(solution0.sum_of_squares, solution0.hlo_of)
    assert result.passed, result.message
    assert "14 and 55 are right" in result.message and "HloModule" in result.message


def test_nb00_counting_jit_wrapper_is_accepted(tf, solution0):
    from tpu_helpers.xla_tf import counters

    result = nb00.check_first_xla_function(counters.jit(lambda x: tf.reduce_sum(tf.square(x))), solution0.hlo_of)
    assert result.passed, result.message


def test_nb00_plain_python_function_is_not_compiled_by_xla(tf, solution0):
    result = nb00.check_first_xla_function(lambda x: tf.reduce_sum(x * x), solution0.hlo_of)
    assert failed(result, "plain Python function", "@tf.function(jit_compile=True)")


def test_nb00_tf_function_without_jit_compile(tf, solution0):
    result = nb00.check_first_xla_function(tf.function(lambda x: tf.reduce_sum(x * x)), solution0.hlo_of)
    assert failed(result, "without jit_compile=True")


def test_nb00_wrong_value(tf, solution0):
    result = nb00.check_first_xla_function(tf.function(tf.reduce_sum, jit_compile=True), solution0.hlo_of)
    assert failed(result, "sum_of_squares([1.0, 2.0, 3.0]) returned 6.0, expected 14")
    result = nb00.check_first_xla_function(tf.function(lambda x: x * x, jit_compile=True), solution0.hlo_of)
    assert failed(result, "returned [1.0, 4.0, 9.0], expected 14", "one number", "tf.reduce_sum")


def test_nb00_hlo_of_returns_the_tensorflow_graph(tf, solution0):
    def graph_of(function, x):
        return str(function.get_concrete_function(x).graph.as_graph_def())

    result = nb00.check_first_xla_function(solution0.sum_of_squares, graph_of)
    assert failed(result, "not XLA's program", "experimental_get_compiler_ir")


def test_nb00_hlo_of_one_shape_only(tf, solution0):
    def hlo_of_first_input(function, x):  # ignores x: the program of another input shape
        return function.experimental_get_compiler_ir(tf.ones(3))(stage="hlo")

    result = nb00.check_first_xla_function(solution0.sum_of_squares, hlo_of_first_input)
    assert failed(result, "not XLA's program for this input", "f32[2,3]")


def test_nb00_skeletons_are_not_attempted(solution0):
    result = nb00.check_first_xla_function(skeleton, skeleton)
    assert not result.passed and not result.attempted
    result = nb00.check_first_xla_function(solution0.sum_of_squares, skeleton)
    assert not result.passed and not result.attempted and "now write hlo_of" in result.message
