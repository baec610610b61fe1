"""tpu_helpers.core.hub: pinned revisions, the probe, and the one clear error (no network is used)."""
from __future__ import annotations

import socket
import time

import pytest

from tpu_helpers.core import hub


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens once it is closed: connections are refused at once


def test_the_courses_defaults_are_pinned_to_commits_and_an_explicit_revision_wins():
    for repo in ("bert-base-uncased", "Salesforce/wikitext"):
        rev = hub.pinned_revision(repo)
        assert rev is not None and len(rev) == 40 and int(rev, 16) >= 0
    assert hub.pinned_revision("someone/their-model") is None  # the learner's own choice: its main


def test_an_unreachable_hub_answers_no_at_once_and_the_block_runs_against_the_cache(monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{_closed_port()}")
    for key in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(key, raising=False)
    from huggingface_hub import constants
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    start = time.monotonic()
    assert hub.hub_reachable() is False and time.monotonic() - start < 5
    with pytest.raises(hub.HubUnavailableError) as err:
        with hub.hub_access("the tokenizer of 'x'", "Offline? Use MODEL='tiny'.") as local_only:
            assert local_only and constants.HF_HUB_OFFLINE  # libraries read only their cache in here
            raise OSError("We couldn't connect to 'https://huggingface.co' ... (40 more lines)")
    message = str(err.value)
    assert "did not answer within 5 s" in message and "MODEL='tiny'" in message and "40 more lines" not in message
    assert constants.HF_HUB_OFFLINE is False  # restored after the block


def test_a_lessons_own_error_class_and_a_reachable_hubs_own_reason(monkeypatch):
    monkeypatch.setattr(hub, "hub_reachable", lambda: True)
    monkeypatch.setattr(hub, "hub_offline", lambda: False)
    with pytest.raises(ValueError, match="cannot load 'no/such-model'.*RepositoryNotFound.*tiny"):
        with hub.hub_access("'no/such-model'", "Use MODEL='tiny'.", error=ValueError) as local_only:
            assert not local_only
            raise type("RepositoryNotFoundError", (OSError,), {})("404 Client Error")
