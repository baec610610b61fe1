"""Anything that starts with gs: is a Cloud Storage URL or a clear error (issue 18): never a local folder named
``gs:``, never an invalid bucket name sent to Google."""
import os

import pytest

from tpu_helpers.core.runtime import Runtime
from tpu_helpers.mlm import gcs

CPU = Runtime("cpu", "local")


@pytest.mark.parametrize("url, message", [
    ("gs://", "no bucket"),
    ("gs:///x", "no bucket"),
    ("gs:/bucket/x", "write it as gs://bucket/x"),
    ("GS://bucket/x", "write it as gs://bucket/x"),
    ("gs:bucket", "write it as gs://bucket"),
    ("gs://My Bucket/x", "not a valid bucket name"),
    ("gs://ab/x", "not a valid bucket name"),  # under 3 characters
    ("gs://-bucket", "not a valid bucket name"),
    ("gs://a" + "b" * 63, "not a valid bucket name"),
    ("gs://two..dots", "not a valid bucket name"),
])
def test_bad_gcs_urls_are_refused_before_anything_is_created(tmp_path, monkeypatch, url, message):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(gcs.InvalidGCSPathError, match=message):
        gcs.check_bucket(url, runtime=CPU, env={})
    with pytest.raises(ValueError, match=message):  # InvalidGCSPathError is a ValueError too
        gcs.split_gcs_path(url)
    assert os.listdir(tmp_path) == []  # no local folder named "gs:" (or anything else)


def test_valid_bucket_names_split():
    assert gcs.split_gcs_path("gs://my-bucket_1.example.com/a/b/") == ("my-bucket_1.example.com", "a/b")
    assert gcs.looks_like_gcs("Gs:/x") and not gcs.looks_like_gcs("./gs/x")
