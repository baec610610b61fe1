"""Checking TFRecord shards against their manifest (size, record framing, sha256): `verify_shards`."""
from __future__ import annotations

import hashlib
import os
import posixpath
import struct
from dataclasses import dataclass

from tpu_helpers.core.frameworks import import_tensorflow
from tpu_helpers.mlm.lesson_cells import MANIFEST_NAME, SHARD_NAME, read_manifest


def records_in_name(name: str) -> int | None:
    """The record count written in a shard's name, or None."""
    m = SHARD_NAME.match(posixpath.basename(name))
    return int(m.group("records")) if m else None


def count_tfrecords(data: bytes) -> int:
    """Count the records in TFRecord bytes by walking the framing; `RuntimeError` if truncated."""
    pos, count, n = 0, 0, len(data)
    while pos < n:
        if pos + 12 > n:
            raise RuntimeError(f"truncated record header at byte {pos} of {n}")
        end = pos + 12 + struct.unpack_from("<Q", data, pos)[0] + 4
        if end > n:
            raise RuntimeError(f"record {count} needs {end} bytes, the file has {n}: truncated")
        pos, count = end, count + 1
    return count


@dataclass
class VerifyReport:
    shard_dir: str
    ok: list[str]
    problems: list[str]
    total_records: int

    @property
    def all_ok(self) -> bool:
        return not self.problems

    def __str__(self) -> str:
        state = "all verified" if self.all_ok else f"{len(self.problems)} problem(s)"
        return f"{len(self.ok)} shards, {self.total_records:,} records in {self.shard_dir}: {state}"


def verify_shards(shard_dir: str | os.PathLike[str], *, deep: bool = True) -> VerifyReport:
    """Check every shard against the manifest (present, size, sha256, records), and report strays."""
    tf = import_tensorflow()
    shard_dir = str(shard_dir).rstrip("/")
    manifest = read_manifest(shard_dir)
    ok, problems = [], []
    if not manifest.complete:
        problems.append("the manifest is incomplete: the run that wrote these shards did not finish")
    listed = {s.name for s in manifest.shards}
    present = {posixpath.basename(p) for p in tf.io.gfile.glob(posixpath.join(shard_dir, "*"))}
    for name in sorted(present - listed - {MANIFEST_NAME}):
        if name.endswith(".tfrecord"):
            problems.append(f"{name}: not in the manifest (stale or foreign shard; a glob would read it)")
        elif ".partial-" in name:
            problems.append(f"{name}: leftover of an interrupted write")
    for info in manifest.shards:
        path = posixpath.join(shard_dir, info.name)
        if info.name not in present:
            problems.append(f"{info.name}: missing")
            continue
        size = tf.io.gfile.stat(path).length
        if size != info.bytes:
            problems.append(f"{info.name}: {size} bytes, the manifest says {info.bytes} (truncated or replaced)")
            continue
        if deep:
            data = tf.io.gfile.GFile(path, "rb").read()
            if hashlib.sha256(data).hexdigest() != info.sha256:
                problems.append(f"{info.name}: sha256 differs from the manifest")
                continue
            try:
                n = count_tfrecords(data)
            except RuntimeError as e:
                problems.append(f"{info.name}: {e}")
                continue
            if n != info.records or records_in_name(info.name) not in (None, n):
                problems.append(f"{info.name}: {n} records, the manifest says {info.records}")
                continue
        ok.append(info.name)
    return VerifyReport(shard_dir, ok, problems, manifest.total_records)
