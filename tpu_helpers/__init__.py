"""tpu_helpers: the code the tpu-course notebooks share; imports no ML framework at this level."""
from importlib import metadata as _metadata

try:
    __version__ = _metadata.version("tpu-course")
except _metadata.PackageNotFoundError:  # imported from a source tree that is not installed
    __version__ = "0+unknown"
