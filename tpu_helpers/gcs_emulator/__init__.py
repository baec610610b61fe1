"""A Google Cloud Storage emulator on 127.0.0.1 that TensorFlow's own ``gs://`` reaches (`LocalGCS`)."""
from .server import LocalGCS, active

FRAMEWORK = None  # the framework this package's modules may import (tests/conventions enforce it)

__all__ = ["LocalGCS", "active"]
