"""A Google Cloud Storage emulator on 127.0.0.1 for TensorFlow's own ``gs://`` and google-cloud-storage (`LocalGCS`)."""
from .proxy import EMULATED_HOSTS, write_target_bucket
from .server import TEST_TOKEN, EmulatorError, LocalGCS, active

FRAMEWORK = None  # the framework this package's modules may import (tests/conventions enforce it)

__all__ = ["LocalGCS", "EmulatorError", "active", "EMULATED_HOSTS", "TEST_TOKEN", "write_target_bucket"]
