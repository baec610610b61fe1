"""The course's one rule for "does this service answer?": one HEAD request with a short timeout, and any HTTP
answer, an error status included, means the server is reachable; only a failure to get an answer (no network, DNS,
a refused connection, a proxy that refuses, a timeout) means it is not. `tpu_helpers.core.hub.hub_reachable` (the
Hugging Face Hub) and `tpu_helpers.mlm.gcs.check_bucket` (Google Cloud Storage) both ask through `why_unreachable`.
Standard library only."""
from __future__ import annotations

import urllib.error
import urllib.request
from typing import Mapping

__all__ = ["why_unreachable"]


def why_unreachable(url: str, *, timeout: float = 5.0, proxies: Mapping[str, str] | None = None) -> str | None:
    """One HEAD request to `url`: None when the server answered (any HTTP status), else why not
    (``"ExceptionType: reason"``, at most 160 characters of the reason). `proxies` (scheme -> proxy URL, ``{}`` for
    none) as `urllib.request.ProxyHandler` takes them; None: the environment's proxies, as ``urlopen`` uses."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler(None if proxies is None else dict(proxies)))
    try:
        opener.open(urllib.request.Request(url, method="HEAD"), timeout=timeout).close()
        return None
    except urllib.error.HTTPError:
        return None  # it answered
    except (OSError, ValueError) as e:  # URLError is an OSError; ValueError: a URL urllib cannot use
        reason = getattr(e, "reason", e)
        return f"{type(reason).__name__}: {str(reason)[:160]}"
