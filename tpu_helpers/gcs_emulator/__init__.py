"""A real Google Cloud Storage emulator on 127.0.0.1 that TensorFlow's own ``gs://`` filesystem can use: the upstream
fake-gcs-server binary behind a loopback TLS proxy (why: docs/history.md).

* ``server.py``: `LocalGCS` (start, buckets, environment, stop) and the command line;
* ``proxy.py``: the HTTPS proxy child process (standard library only);
* ``certs.py``: the throwaway certificate authority.
"""
from .proxy import EMULATED_HOSTS, write_target_bucket
from .server import TEST_TOKEN, EmulatorError, LocalGCS, active

FRAMEWORK = None  # the framework this package's modules may import (tests/conventions enforce it)

__all__ = ["LocalGCS", "EmulatorError", "active", "EMULATED_HOSTS", "TEST_TOKEN", "write_target_bucket"]
