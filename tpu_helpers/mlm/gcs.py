"""Cloud Storage checks through TensorFlow's gs:// client: each failure a ValueError/RuntimeError saying what to do."""
from __future__ import annotations

import os
import re
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from tpu_helpers.core.network import why_unreachable
from tpu_helpers.core.runtime import Runtime, detect_runtime

# Cloud Storage bucket names: 3-63 characters (up to 222 with dots, each part at most 63), lower-case letters,
# digits, "-", "_" and "."; first and last a letter or digit (https://cloud.google.com/storage/docs/buckets#naming).
_BUCKET_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$")


def split_gcs_path(url: str | os.PathLike[str]) -> tuple[str, str]:
    """``"gs://bucket/a/b"`` -> ``("bucket", "a/b")``; a `ValueError` for anything else."""
    url = str(url)
    expected = "expected gs://BUCKET/optional/prefix"
    if not url.startswith("gs://"):
        fix = f"write it as gs://{url[3:].lstrip('/')}" if url[:3].lower() == "gs:" else expected
        raise ValueError(f"not a gs:// URL: {url!r} ({fix})")
    bucket, _, prefix = url[5:].partition("/")
    if not bucket:
        raise ValueError(f"no bucket in {url!r} ({expected})")
    if not _BUCKET_RE.match(bucket) or ".." in bucket or any(len(part) > 63 for part in bucket.split(".")):
        raise ValueError(
            f"{bucket!r} is not a valid bucket name: 3-63 characters, lower-case letters, digits, '-', '_' and '.', "
            "starting and ending with a letter or digit (https://cloud.google.com/storage/docs/buckets#naming)")
    return bucket, prefix.strip("/")


def using_emulator(env: Mapping[str, str] | None = None) -> bool:
    """True when the variables point TensorFlow at `tpu_helpers.gcs_emulator.LocalGCS`."""
    env = os.environ if env is None else env
    return bool(env.get("TPU_COURSE_LOCAL_GCS")) and env.get("https_proxy") == env.get("TPU_COURSE_LOCAL_GCS")


def require_gcs_path(path: str | os.PathLike[str], runtime: Runtime | None = None, *, what: str = "the data") -> str:
    """`path` unchanged, or an error when this runtime's TPU (a TPU Node) could not read it."""
    runtime = runtime or detect_runtime()
    path = str(path)
    if runtime.is_tpu_node:
        if not path.startswith("gs://"):
            raise ValueError(
                f"{what} is at the local path {path!r}, but this runtime's TPU is a TPU Node ({runtime.tpu_address}): "
                "a separate machine that reads training data from gs:// (or from tensors sent with the graph), "
                "never from this VM's disk. Put it in a bucket, e.g. write_shards(..., 'gs://YOUR_BUCKET/mlm/train'), "
                "and give the TPU's service account read access. (On a TPU VM local paths work.)")
        if using_emulator():
            raise RuntimeError(
                f"{what} is in the local GCS emulator, but a TPU Node reads gs:// itself from Google's network and "
                "cannot reach this machine's 127.0.0.1. Stop the emulator (gcs.stop(), then restart the kernel) and "
                "use a real bucket.")
    return path


def _metadata_server_answers(timeout: float) -> bool:
    """True when a GCE metadata server hands out a service account (on Google Cloud VMs)."""
    host = os.environ.get("GCE_METADATA_HOST", "metadata.google.internal")
    req = urllib.request.Request(f"http://{host}/computeMetadata/v1/instance/service-accounts/default/email",
                                 headers={"Metadata-Flavor": "Google"})
    try:
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(req, timeout=timeout) as resp:
            return resp.status == 200
    except OSError:  # urllib.error.URLError is an OSError
        return False


GCS_ENDPOINT = "https://storage.googleapis.com/"


def _gcs_unreachable(env: Mapping[str, str], timeout: float = 5.0) -> str | None:
    """Why one HEAD request to GCS through `env`'s proxy failed, or None (any HTTP status counts)."""
    proxy = env.get("https_proxy") or env.get("HTTPS_PROXY")
    return why_unreachable(GCS_ENDPOINT, timeout=timeout, proxies={"https": proxy} if proxy else {})


def _login_hint(runtime: Runtime) -> str:
    """How to log in on this runtime (Colab, Kaggle, a Cloud TPU VM, elsewhere)."""
    if runtime.platform in ("colab", "kaggle"):
        return {"colab": "on Colab run `from google.colab import auth; auth.authenticate_user()` in a cell, and use a "
                         "bucket your Google account can write",
                "kaggle": "on Kaggle attach Google Cloud Services (Add-ons > Google Cloud Services) and call `from "
                          "kaggle_secrets import UserSecretsClient; UserSecretsClient().set_gcloud_credentials("
                          "project=...)`"}[runtime.platform]
    return ("run `gcloud auth application-default login`, or set GOOGLE_APPLICATION_CREDENTIALS to a service-account "
            "key file" + ("; on a Cloud TPU VM the VM's service account is used: create the TPU with one and the "
                          "cloud-platform scope (gcloud ... --service-account=... --scopes=cloud-platform)"
                          if runtime.is_tpu_vm else "; to practise without Google Cloud, start the local emulator: "
                          "`from tpu_helpers.gcs_emulator import LocalGCS; LocalGCS().start()`"))


def find_credentials(env: Mapping[str, str] | None = None, *, home: str | os.PathLike[str] | None = None,
                     runtime: Runtime | None = None, check_metadata: bool = True) -> str:
    """Say where TensorFlow will get its GCS token from, in TensorFlow's order; `RuntimeError` if nowhere."""
    env = os.environ if env is None else env
    home = Path(home) if home is not None else Path.home()
    if env.get("GOOGLE_AUTH_TOKEN_FOR_TESTING"):
        return ("the local GCS emulator's test token" if using_emulator(env)
                else "a fixed token from GOOGLE_AUTH_TOKEN_FOR_TESTING")
    runtime = runtime or detect_runtime(env)
    named = env.get("GOOGLE_APPLICATION_CREDENTIALS")
    if named:
        if Path(named).is_file():
            return f"the credentials file GOOGLE_APPLICATION_CREDENTIALS={named}"
        raise RuntimeError(f"GOOGLE_APPLICATION_CREDENTIALS={named} but there is no such file: fix the path or "
                           f"unset it; then {_login_hint(runtime)}.")
    config = env.get("CLOUDSDK_CONFIG")
    adc = (Path(config) if config else home / ".config" / "gcloud") / "application_default_credentials.json"
    if adc.is_file():
        return f"gcloud application-default credentials ({adc})"
    if str(env.get("NO_GCE_CHECK", "")).lower() != "true" and check_metadata and _metadata_server_answers(1.0):
        return "this VM's service account (GCE metadata server)"
    raise RuntimeError(
        "no Google Cloud credentials found (TensorFlow would send anonymous requests, and a private bucket answers "
        f"401/403). Fix: {_login_hint(runtime)}.")


@dataclass
class BucketCheck:
    """What `check_bucket` proved."""

    url: str
    bucket: str | None
    credentials: str
    writable: bool
    emulator: bool

    def __str__(self) -> str:
        where = "local emulator" if self.emulator else ("Google Cloud Storage" if self.bucket else "local folder")
        return f"{self.url}: {'readable and writable' if self.writable else 'readable'} ({where}; credentials: {self.credentials})"


def check_bucket(url: str | os.PathLike[str], *, write: bool = True, runtime: Runtime | None = None) -> BucketCheck:
    """Check that `url` (``gs://bucket/prefix`` or a local folder) is readable and, with `write`, writable."""
    runtime = runtime or detect_runtime()
    url = str(url)
    bucket, prefix = split_gcs_path(url) if url[:3].lower() == "gs:" else (None, "")  # gs:/x: an error, first
    url = url.rstrip("/")
    require_gcs_path(url, runtime, what="this location")
    import tensorflow as tf

    if not url.startswith("gs://"):
        tf.io.gfile.makedirs(url)
        if write and not os.access(url, os.W_OK):
            raise RuntimeError(f"the local folder {url} is not writable: choose another folder")
        return BucketCheck(url, None, "not needed (local folder)", write, False)

    emulated = using_emulator()
    why = None if emulated else _gcs_unreachable(os.environ)
    if why:
        raise RuntimeError(
            f"cannot reach Google Cloud Storage ({GCS_ENDPOINT}) to check gs://{bucket}: {why}. Offline? Use a local "
            "folder instead of gs:// (off a TPU Node), or practise with the local emulator: "
            "`from tpu_helpers.gcs_emulator import LocalGCS; LocalGCS().start()`.")
    credentials = find_credentials(runtime=runtime)
    node_note = (" On a TPU Node the TPU reads the bucket with its own service account "
                 "(service-PROJECT_NUMBER@cloud-tpu.iam.gserviceaccount.com): grant it access too."
                 if runtime.is_tpu_node else "")
    denied = (tf.errors.PermissionDeniedError, tf.errors.UnauthenticatedError)
    try:
        exists = tf.io.gfile.exists(f"gs://{bucket}")
    except denied as e:
        raise RuntimeError(
            f"gs://{bucket}: access denied with {credentials} ({e.message.splitlines()[0][:200]}). The bucket may "
            "belong to another project, or your account lacks roles/storage.objectViewer (read) and "
            f"roles/storage.objectAdmin (write) on it.{node_note}") from None
    if not exists:
        create = ("gcs.create_bucket(NAME) on the emulator object" if emulated else
                  f"`gcloud storage buckets create gs://{bucket} --location=REGION` (the TPU's region, e.g. "
                  "us-central1: reading across regions is slower and costs egress)")
        raise RuntimeError(f"the bucket gs://{bucket} does not exist (or the name is misspelled). Create it with "
                           f"{create}, or use an existing bucket.")
    writable = False
    if write:
        folder = f"gs://{bucket}/{prefix}" if prefix else f"gs://{bucket}"
        probe = f"{folder}/.tpu-course-write-probe-{uuid.uuid4().hex[:12]}"
        try:
            with tf.io.gfile.GFile(probe, "w") as f:
                f.write("tpu-course write probe: safe to delete\n")
            tf.io.gfile.remove(probe)
            writable = True
        except denied as e:
            raise RuntimeError(
                f"gs://{bucket} exists but {credentials} may not write to it ({e.message.splitlines()[0][:200]}). "
                f"Grant roles/storage.objectAdmin on the bucket (`gcloud storage buckets add-iam-policy-binding "
                f"gs://{bucket} --member=user:YOU --role=roles/storage.objectAdmin`), or use a bucket you own."
                f"{node_note}") from None
    return BucketCheck(url, bucket, credentials, writable, emulated)
