"""One digest of a model's weights for both frameworks: equal digests, equal weights (replicas, hosts, a reload)."""
import hashlib
from typing import Any, Iterable


def weights_digest(named_arrays: Iterable[tuple[str, Any]]) -> int:
    """A 63-bit SHA-256 digest of (name, numpy array) pairs, in order: each name, shape, dtype and the array's bytes."""
    h = hashlib.sha256()
    for name, value in named_arrays:
        h.update(f"{name}:{tuple(value.shape)}:{value.dtype}".encode())
        h.update(value.tobytes())
    return int.from_bytes(h.digest()[:8], "big") >> 1
