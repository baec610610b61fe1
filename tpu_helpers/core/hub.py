"""The Hugging Face Hub: pinned revisions, one reachability probe, and one clear error when it cannot be reached.

Every Hub load in the course goes through `hub_access`: it asks the Hub once (one HEAD request, 5 s), and when the
Hub does not answer (or ``HF_HUB_OFFLINE`` is set) the loaders read only their local cache, so a cached model or
dataset still loads offline and a missing one fails at once with one `HubUnavailableError` that names the offline
choice, instead of a minute of retries and a long traceback.

The course's own defaults load at a pinned commit (`PINNED_REVISIONS`); a name the learner picks loads its
``main`` unless they pass a revision. Nothing loads remote code: the course never sets ``trust_remote_code``, and
``datasets`` >= 4 refuses loading scripts.
"""
from __future__ import annotations

import os
import time
from contextlib import contextmanager
from typing import Iterator

from tpu_helpers.core.network import why_unreachable

__all__ = ["PINNED_REVISIONS", "HubUnavailableError", "hub_access", "hub_offline", "hub_reachable",
           "pinned_revision"]

# Commits checked against public code that pins the same repositories (google-bert/bert-base-uncased's main
# as of 2024-2026; Salesforce/wikitext's parquet layout). BANKING77 is loaded from the Hub's parquet export
# branch (`tpu_helpers.banking77.dataset.HUB_REVISION`): data only, no script, and its shape is checked on load.
PINNED_REVISIONS = {
    "bert-base-uncased": "86b5e0934494bd15c9632b12f734a8a67f723594",
    "google-bert/bert-base-uncased": "86b5e0934494bd15c9632b12f734a8a67f723594",
    "Salesforce/wikitext": "b08601e04326c79dfdd32d625aee71d232d685c3",
}

_PROBE: dict[str, tuple[float, bool]] = {}  # endpoint -> (when, reachable): one probe per minute at most
_PROBE_TTL_S = 60.0


class HubUnavailableError(RuntimeError):
    """A model, tokenizer or dataset could not be loaded from the Hugging Face Hub (or its local cache)."""


def pinned_revision(repo: str, revision: str | None = None) -> str | None:
    """`revision` if given, else the course's pinned commit for `repo`, else None (the repository's ``main``)."""
    return revision or PINNED_REVISIONS.get(repo)


def hub_offline() -> bool:
    """``HF_HUB_OFFLINE`` / ``HF_DATASETS_OFFLINE`` / ``TRANSFORMERS_OFFLINE`` asks for the local cache only."""
    for key in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(key, "").strip().lower() in ("1", "true", "yes", "on"):
            return True
    try:
        from huggingface_hub import constants
        return bool(constants.HF_HUB_OFFLINE)
    except ImportError:  # pragma: no cover - huggingface_hub is pinned
        return False


def hub_reachable(timeout: float = 5.0) -> bool:
    """One HEAD request to the Hub (``HF_ENDPOINT``, through any configured proxy; the rule of
    `tpu_helpers.core.network.why_unreachable`: any HTTP answer counts); remembered for a minute."""
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
    seen = _PROBE.get(endpoint)
    if seen is not None and time.monotonic() - seen[0] < _PROBE_TTL_S:
        return seen[1]
    ok = why_unreachable(endpoint, timeout=timeout) is None
    _PROBE[endpoint] = (time.monotonic(), ok)
    return ok


def _set_offline(value: bool) -> tuple[bool, bool]:
    """Switch datasets' and huggingface_hub's offline flags (both read the variables once, at import)."""
    from huggingface_hub import constants

    try:
        import datasets
        saved = (datasets.config.HF_HUB_OFFLINE, constants.HF_HUB_OFFLINE)
        datasets.config.HF_HUB_OFFLINE = value
    except ImportError:  # pragma: no cover - datasets is pinned
        saved = (False, constants.HF_HUB_OFFLINE)
    constants.HF_HUB_OFFLINE = value
    return saved


@contextmanager
def hub_access(what: str, offline_choice: str, *, error: type[Exception] = HubUnavailableError) -> Iterator[bool]:
    """Load `what` from the Hub inside this block; yields ``local_files_only`` for ``from_pretrained``.

    Offline (asked for, or the probe got no answer): the block runs against the local cache only. Any failure
    becomes one `error` (a lesson's own error class, or `HubUnavailableError`) that says why and names
    `offline_choice` (e.g. "MODEL='tiny' ...").
    """
    asked = hub_offline()
    local_only = asked or not hub_reachable()
    saved = _set_offline(True) if local_only else None
    try:
        yield local_only
    except (HubUnavailableError, error):
        raise
    except Exception as e:
        if asked:
            why = "HF_HUB_OFFLINE (or HF_DATASETS_OFFLINE/TRANSFORMERS_OFFLINE) is set and it is not in the local cache"
        elif local_only:
            endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
            why = f"the Hub ({endpoint}) did not answer within 5 s (offline?) and it is not in the local cache"
        else:
            why = f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:200]}"
        raise error(f"cannot load {what} from the Hugging Face Hub: {why}. {offline_choice}") from None
    finally:
        if saved is not None:
            _restore(saved)


def _restore(saved: tuple[bool, bool]) -> None:
    from huggingface_hub import constants

    try:
        import datasets
        datasets.config.HF_HUB_OFFLINE = saved[0]
    except ImportError:  # pragma: no cover
        pass
    constants.HF_HUB_OFFLINE = saved[1]
