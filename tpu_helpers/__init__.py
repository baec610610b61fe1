"""tpu_helpers: the code the tpu-course notebooks share (counters, checks, data plumbing, infrastructure).

Installed with the course (``pip install tpu-course``, or the notebooks' install cell on Colab/Kaggle); the
package imports no ML framework at this level, so ``import tpu_helpers`` is safe in any kernel.
"""
from importlib import metadata as _metadata

try:
    __version__ = _metadata.version("tpu-course")
except _metadata.PackageNotFoundError:  # imported from a source tree that is not installed
    __version__ = "0+unknown"
