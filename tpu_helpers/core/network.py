"""The one rule for "does this service answer?": one HEAD request; any HTTP answer, an error status too, means yes."""
import urllib.error
import urllib.request
from typing import Mapping


def why_unreachable(url: str, *, timeout: float = 5.0, proxies: Mapping[str, str] | None = None) -> str | None:
    """None when `url` answered, else ``"ExceptionType: reason"``; `proxies` for ``ProxyHandler`` (None: the env's)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler(None if proxies is None else dict(proxies)))
    try:
        opener.open(urllib.request.Request(url, method="HEAD"), timeout=timeout).close()
        return None
    except urllib.error.HTTPError:
        return None  # it answered
    except (OSError, ValueError) as e:  # URLError is an OSError; ValueError: a URL urllib cannot use
        reason = getattr(e, "reason", e)
        return f"{type(reason).__name__}: {str(reason)[:160]}"
