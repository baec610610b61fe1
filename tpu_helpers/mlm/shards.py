"""Checking TFRecord shards against their manifest (present, size, sha256; strays reported): `verify_shards`."""
from __future__ import annotations

import hashlib
import os
import posixpath
from typing import NamedTuple

from tpu_helpers.core.frameworks import import_tensorflow
from tpu_helpers.mlm.lesson_cells import MANIFEST_NAME, read_manifest


class VerifyReport(NamedTuple):
    """The shards that verified, and one line per problem found."""

    ok: list[str]
    problems: list[str]

    @property
    def all_ok(self) -> bool:
        return not self.problems


def verify_shards(shard_dir: str | os.PathLike[str]) -> VerifyReport:
    """Check every shard against the manifest (present, size, sha256), and report strays."""
    tf = import_tensorflow()
    shard_dir = str(shard_dir).rstrip("/")
    manifest = read_manifest(shard_dir)
    ok, problems = [], []
    if not manifest.complete:
        problems.append("the manifest is incomplete: the run that wrote these shards did not finish")
    present = {posixpath.basename(p) for p in tf.io.gfile.glob(posixpath.join(shard_dir, "*"))}
    for name in sorted(present - {s.name for s in manifest.shards} - {MANIFEST_NAME}):
        if name.endswith(".tfrecord"):
            problems.append(f"{name}: not in the manifest (stale or foreign shard; a glob would read it)")
        elif ".partial-" in name:
            problems.append(f"{name}: leftover of an interrupted write")
    for info in manifest.shards:
        path = posixpath.join(shard_dir, info.name)
        if info.name not in present:
            problems.append(f"{info.name}: missing")
        elif (size := tf.io.gfile.stat(path).length) != info.bytes:
            problems.append(f"{info.name}: {size} bytes, the manifest says {info.bytes} (truncated or replaced)")
        elif hashlib.sha256(tf.io.gfile.GFile(path, "rb").read()).hexdigest() != info.sha256:
            problems.append(f"{info.name}: sha256 differs from the manifest")
        else:
            ok.append(info.name)
    return VerifyReport(ok, problems)
