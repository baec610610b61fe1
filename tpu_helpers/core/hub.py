"""Hub loads at pinned revisions, behind one 5 s reachability probe and one clear error that names the offline choice."""
import os
from contextlib import contextmanager
from typing import Iterator

from tpu_helpers.core.network import why_unreachable

# the course's defaults at a commit (bert-base-uncased's main of 2024-2026, wikitext's parquet layout); BANKING77's
# is `tpu_helpers.banking77.dataset.HUB_REVISION`; the course never sets trust_remote_code
PINNED_REVISIONS = {
    "bert-base-uncased": "86b5e0934494bd15c9632b12f734a8a67f723594",
    "Salesforce/wikitext": "b08601e04326c79dfdd32d625aee71d232d685c3",
}


class HubUnavailableError(RuntimeError):
    """A model, tokenizer or dataset could not be loaded from the Hugging Face Hub (or its local cache)."""


def pinned_revision(repo: str) -> str | None:
    """The course's pinned commit for `repo`, else None (the repository's ``main``)."""
    return PINNED_REVISIONS.get(repo)


def hub_offline() -> bool:
    """``HF_HUB_OFFLINE`` / ``HF_DATASETS_OFFLINE`` / ``TRANSFORMERS_OFFLINE`` asks for the local cache only."""
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE) or any(
        os.environ.get(k, "").strip().lower() in ("1", "true", "yes", "on")
        for k in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"))


def hub_reachable() -> bool:
    """One 5 s HEAD request to ``HF_ENDPOINT`` (`why_unreachable`: any HTTP answer counts)."""
    return why_unreachable(os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")) is None


def _offline_flags(values: tuple[bool, bool]) -> tuple[bool, bool]:
    """Set datasets' and huggingface_hub's offline flags (both read the variables once, at import); the old ones."""
    import datasets
    from huggingface_hub import constants

    old = (datasets.config.HF_HUB_OFFLINE, constants.HF_HUB_OFFLINE)
    datasets.config.HF_HUB_OFFLINE, constants.HF_HUB_OFFLINE = values
    return old


@contextmanager
def hub_access(what: str, offline_choice: str, *, error: type[Exception] = HubUnavailableError) -> Iterator[bool]:
    """Load `what` in this block (yields ``local_files_only``); a failure: one `error`, why and `offline_choice`."""
    asked = hub_offline()
    local_only = asked or not hub_reachable()
    saved = _offline_flags((True, True)) if local_only else None
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
            _offline_flags(saved)
