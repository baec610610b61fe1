"""Reference answers for notebook 00's exercises (TensorFlow imported only when its answer is asked for)."""
from __future__ import annotations


def read_accelerator_type(accelerator_type: str) -> tuple[str, int]:
    """Exercise 1: "v3-8" -> ("v3", 4), "v5litepod-8" -> ("v5e", 8)."""
    # The number counts TensorCores on v2/v3/v4/v5p (two per chip), chips on v5e/v6e (one): cloud.google.com/tpu/docs
    name, number = accelerator_type.rsplit("-", 1)
    generation = "v5e" if name.startswith("v5lite") else name  # "v5litepod" is Google's name for v5e
    if generation in ("v2", "v3", "v4", "v5p"):
        return generation, int(number) // 2
    return generation, int(number)


def hlo_of(function, x) -> str:
    """Exercise 2, second part: the HLO module XLA builds for ``function`` (``jit_compile=True``) on ``x``."""
    return function.experimental_get_compiler_ir(x)(stage="hlo")


def _sum_of_squares():
    import tensorflow as tf

    @tf.function(jit_compile=True)  # XLA compiles the whole function, once per input shape
    def sum_of_squares(x):
        """Exercise 2, first part: the sum of every element squared."""
        return tf.reduce_sum(x * x)

    return sum_of_squares


def __getattr__(name: str):
    if name == "sum_of_squares":
        globals()[name] = _sum_of_squares()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
