"""tests/torch: the PyTorch/XLA lessons' packages (xla_torch, banking77, xla_debug). TensorFlow cannot be imported
here."""
from course_testing import guard_frameworks

guard_frameworks("torch", "torch")
