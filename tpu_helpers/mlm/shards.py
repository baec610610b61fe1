"""TFRecord shards of 128-token blocks with a JSON manifest (counts, sha256): written atomically (local or gs://),
verified, inspected, and healed on a re-run."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import posixpath
import re
import shutil
import struct
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np

from tpu_helpers.core.frameworks import import_tensorflow
from tpu_helpers.core.tempdirs import course_temp_dir
from tpu_helpers.mlm.errors import (
    EmptyCorpusError,
    ManifestError,
    ShardBlockSizeError,
    ShardError,
    ShardVerificationError,
)
from tpu_helpers.mlm.tokenizer import BLOCK_SIZE

MANIFEST_NAME = "manifest.json"
MANIFEST_FORMAT = "tpu-course/mlm-shards/v1"
FEATURE = "input_ids"


_SHARD_RE = re.compile(r"^(?P<prefix>.+)-(?P<index>\d{5})-(?P<records>\d+)\.tfrecord$")


def shard_name(prefix: str, index: int, records: int) -> str:
    """``train-00003-1000.tfrecord``: index and record count in the name (the seed's ``-\\d+-(\\d+)`` pattern)."""
    if "/" in prefix or not prefix:
        raise ValueError(f"bad shard prefix {prefix!r}")
    return f"{prefix}-{index:05d}-{records}.tfrecord"


def records_in_name(name: str) -> int | None:
    """The record count written in a shard's name, or None if the name does not follow `shard_name`."""
    m = _SHARD_RE.match(posixpath.basename(name))
    return int(m.group("records")) if m else None


@dataclass
class ShardInfo:
    name: str
    records: int
    bytes: int
    sha256: str


@dataclass
class Manifest:
    """What a shard folder holds: the source of truth for counts and checksums (names are a convenience)."""

    block_size: int
    records_per_shard: int
    prefix: str
    shards: list[ShardInfo] = field(default_factory=list)
    complete: bool = False
    metadata: dict = field(default_factory=dict)
    format: str = MANIFEST_FORMAT
    feature: str = FEATURE
    dtype: str = "int64"

    @property
    def total_records(self) -> int:
        return sum(s.records for s in self.shards)

    @property
    def total_tokens(self) -> int:
        return self.total_records * self.block_size

    def to_json(self) -> str:
        d = dataclasses.asdict(self)
        d["total_records"], d["total_tokens"] = self.total_records, self.total_tokens
        return json.dumps(d, indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "Manifest":
        d = json.loads(text)
        if not isinstance(d, dict):
            raise ManifestError(f"not a tpu-course shard manifest (a JSON {type(d).__name__}, not an object)")
        if d.get("format") != MANIFEST_FORMAT:
            raise ManifestError(f"not a tpu-course shard manifest (format {d.get('format')!r})")
        d.pop("total_records", None)
        d.pop("total_tokens", None)
        d["shards"] = [ShardInfo(**s) for s in d["shards"]]
        return cls(**d)


@dataclass
class ShardReport:
    """What `write_shards` did."""

    out_dir: str
    manifest: Manifest
    written: list[str]
    skipped: list[str]
    removed: list[str]
    seconds: float
    foreign: list[str] = field(default_factory=list)  # files in the folder this write does not own: left alone

    def __str__(self) -> str:
        m = self.manifest
        text = (f"{len(m.shards)} shards in {self.out_dir} ({m.total_records:,} records of {m.block_size} tokens = "
                f"{m.total_tokens:,} tokens): {len(self.written)} written, {len(self.skipped)} already verified, "
                f"{len(self.removed)} stale files removed, {self.seconds:.1f} s")
        if self.foreign:
            text += f"; left alone: {len(self.foreign)} other files ({', '.join(self.foreign[:3])}...)"
        return text


def _join(base: str, name: str) -> str:
    return posixpath.join(base, name) if base.startswith("gs://") else os.path.join(base, name)


def _write_text_atomic(path: str, text: str) -> None:
    tf = import_tensorflow()
    tmp = f"{path}.partial-{uuid.uuid4().hex[:8]}"
    with tf.io.gfile.GFile(tmp, "w") as f:
        f.write(text)
    tf.io.gfile.rename(tmp, path, overwrite=True)


def _iter_shard_blocks(blocks: np.ndarray | Iterable[np.ndarray], per_shard: int) -> Iterator[np.ndarray]:
    if isinstance(blocks, np.ndarray):
        blocks = [blocks]
    pending: list[np.ndarray] = []
    count = 0
    width = None
    for arr in blocks:
        arr = np.asarray(arr)
        if arr.ndim != 2:
            raise ShardBlockSizeError(f"blocks must be a 2-D array (records, block_size); got shape {arr.shape}")
        if width is not None and arr.shape[1] != width:
            raise ShardBlockSizeError(f"blocks of {arr.shape[1]} tokens after blocks of {width}: all records of "
                                      "one shard folder must have the same length")
        width = arr.shape[1]
        start = 0
        while start < arr.shape[0]:
            take = min(per_shard - count, arr.shape[0] - start)
            pending.append(arr[start: start + take])
            count += take
            start += take
            if count == per_shard:
                yield np.concatenate(pending)
                pending, count = [], 0
    if count:
        yield np.concatenate(pending)


def _serialize(rows: np.ndarray) -> Iterator[bytes]:
    tf = import_tensorflow()
    for row in rows:
        feature = tf.train.Feature(int64_list=tf.train.Int64List(value=row.tolist()))
        yield tf.train.Example(features=tf.train.Features(feature={FEATURE: feature})).SerializeToString()


def write_shards(blocks: np.ndarray | Iterable[np.ndarray], out_dir: str | os.PathLike[str], *,
                 prefix: str = "train", records_per_shard: int = 1000, metadata: Mapping[str, Any] | None = None,
                 progress: bool = True, manifest_every_s: float = 30.0,
                 _publish_hook: Callable[[str], None] | None = None) -> ShardReport:
    """Write blocks to TFRecord shards of `records_per_shard` records in `out_dir` (local or ``gs://``).

    Each shard is serialised to a local temporary file, hashed, copied to ``<name>.partial-<id>`` in `out_dir`
    and renamed to its final name, so a crash never leaves a truncated file under a final name (on GCS the
    rename is a server-side copy plus delete: the final object appears whole or not at all). The manifest
    (``manifest.json``, written the same way) is marked ``complete: false`` before any shard is touched,
    checkpointed every `manifest_every_s` seconds (0: after every shard) and finalised at the end, so readers
    refuse a folder whose writing run did not finish; bad input (no blocks, not 2-D) fails before the manifest is
    touched, so a complete folder stays readable. On a re-run a shard is skipped when its manifest entry
    has the checksum of the bytes it would write now and its file has the recorded size; stale shards of this
    `prefix` and ``.partial`` leftovers are removed at the end, and nothing else: other files (a bucket root) are
    left alone and listed in the report. One folder holds one prefix: writing another one into it is refused. `blocks`: one array ``(records, block_size)`` or an iterable
    of them (streamed). Returns a `ShardReport`.
    """
    tf = import_tensorflow()
    out_dir = str(out_dir).rstrip("/")
    if records_per_shard < 1:
        raise ValueError("records_per_shard must be positive")
    tf.io.gfile.makedirs(out_dir)
    manifest_path = _join(out_dir, MANIFEST_NAME)
    manifest = Manifest(block_size=0, records_per_shard=records_per_shard, prefix=prefix,
                        metadata=dict(metadata or {}))
    previous: dict[str, ShardInfo] = {}
    if tf.io.gfile.exists(manifest_path):
        try:
            old = Manifest.from_json(tf.io.gfile.GFile(manifest_path).read())
        except (ManifestError, ValueError, KeyError, TypeError, AttributeError):
            old = None  # unreadable: rebuilt by this run (our shards are found again by their names)
        if old is not None and old.prefix != prefix and old.shards:
            raise ShardError(
                f"{out_dir} already holds the {old.prefix!r} shards of another write ({len(old.shards)} shards in its "
                f"manifest); writing {prefix!r} shards here would replace that manifest. Write each split into its "
                f"own folder, e.g. {_join(out_dir, prefix)}")
        previous = {s.name: s for s in old.shards} if old is not None else {}

    def checkpoint() -> None:  # new entries so far + old ones not yet superseded (a skip cache for a re-run)
        done = {s.name for s in manifest.shards}
        cache = dataclasses.replace(manifest, shards=manifest.shards + [s for n, s in previous.items()
                                                                         if n not in done], complete=False)
        _write_text_atomic(manifest_path, cache.to_json())

    start = last_checkpoint = time.perf_counter()
    started = False  # the manifest is marked incomplete only once the first shard is known to be good
    written, skipped = [], []
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(desc=f"shards -> {out_dir}", unit="shard")
    tmpdir = course_temp_dir("shard", remove_at_exit=False)  # a killed run's is removed by the next course process
    try:
        for index, rows in enumerate(_iter_shard_blocks(blocks, records_per_shard)):
            manifest.block_size = manifest.block_size or int(rows.shape[1])
            if not started:  # from here on the folder is being (re)written: readers refuse it until the end
                checkpoint()
                started = True
            name = shard_name(prefix, index, rows.shape[0])
            local = os.path.join(tmpdir, name)
            with tf.io.TFRecordWriter(local) as writer:
                for record in _serialize(rows):
                    writer.write(record)
            data = Path(local).read_bytes()
            info = ShardInfo(name, int(rows.shape[0]), len(data), hashlib.sha256(data).hexdigest())
            final = _join(out_dir, name)
            old = previous.get(name)
            if (old is not None and old.sha256 == info.sha256 and tf.io.gfile.exists(final)
                    and tf.io.gfile.stat(final).length == info.bytes):
                skipped.append(name)
            else:
                partial = f"{final}.partial-{uuid.uuid4().hex[:8]}"
                tf.io.gfile.copy(local, partial, overwrite=True)
                if _publish_hook is not None:  # tests: simulate a crash between upload and rename
                    _publish_hook(partial)
                tf.io.gfile.rename(partial, final, overwrite=True)
                written.append(name)
            os.remove(local)
            manifest.shards.append(info)
            if time.perf_counter() - last_checkpoint >= manifest_every_s:
                checkpoint()
                last_checkpoint = time.perf_counter()
            if bar is not None:
                bar.update(1)
                bar.set_postfix(records=manifest.total_records)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    if bar is not None:
        bar.close()
    if not manifest.shards:
        raise EmptyCorpusError("no blocks to write: the corpus produced no complete block")
    keep = {s.name for s in manifest.shards} | {MANIFEST_NAME}
    removed, foreign = [], []
    for path in tf.io.gfile.glob(_join(out_dir, "*")):
        base = posixpath.basename(path.rstrip("/"))
        if base in keep:
            continue
        if _owned(base, prefix):  # a stale shard of this prefix, or a .partial leftover of one (or of the manifest)
            tf.io.gfile.remove(path)
            removed.append(base)
        else:
            foreign.append(base)
    manifest.complete = True
    _write_text_atomic(manifest_path, manifest.to_json())
    return ShardReport(out_dir, manifest, written, skipped, removed, time.perf_counter() - start, foreign)


def _owned(base: str, prefix: str) -> bool:
    """Is this file name one that `write_shards(prefix=prefix)` writes (and so may remove when it is stale)?"""
    name = base.split(".partial-", 1)[0] if ".partial-" in base else base
    if name == MANIFEST_NAME:
        return ".partial-" in base
    m = _SHARD_RE.match(name)
    return bool(m and m.group("prefix") == prefix)


def read_manifest(shard_dir: str | os.PathLike[str]) -> Manifest:
    """The folder's manifest; `ManifestError` if it is missing or unreadable."""
    tf = import_tensorflow()
    path = _join(str(shard_dir).rstrip("/"), MANIFEST_NAME)
    if not tf.io.gfile.exists(path):
        raise ManifestError(f"no {MANIFEST_NAME} in {shard_dir}: write the shards with write_shards() (which "
                            "records counts and checksums), or pass manifest=False to trust the file names")
    try:
        return Manifest.from_json(tf.io.gfile.GFile(path).read())
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise ManifestError(f"{path} is not a valid manifest ({e}); rerun write_shards() to rebuild it") from None


def count_tfrecords(data: bytes) -> int:
    """Count the records in TFRecord bytes by walking the framing; `ShardVerificationError` if truncated."""
    pos, count, n = 0, 0, len(data)
    while pos < n:
        if pos + 12 > n:
            raise ShardVerificationError(f"truncated record header at byte {pos} of {n}")
        (length,) = struct.unpack_from("<Q", data, pos)
        end = pos + 12 + length + 4
        if end > n:
            raise ShardVerificationError(f"record {count} needs {end} bytes, the file has {n}: truncated")
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

    def raise_for_problems(self) -> None:
        if self.problems:
            raise ShardVerificationError(f"{len(self.problems)} problem(s) in {self.shard_dir}:\n  - "
                                         + "\n  - ".join(self.problems)
                                         + "\nFix: rerun write_shards() (it rewrites only what does not verify).")

    def __str__(self) -> str:
        state = "all verified" if self.all_ok else f"{len(self.problems)} problem(s)"
        return f"{len(self.ok)} shards, {self.total_records:,} records in {self.shard_dir}: {state}"


def verify_shards(shard_dir: str | os.PathLike[str], *, deep: bool = True) -> VerifyReport:
    """Check every shard against the manifest: present, same size, and (`deep`) same sha256 and record count.

    Also reports an incomplete manifest (an interrupted run), ``.tfrecord`` files the manifest does not list,
    and ``.partial`` leftovers.
    """
    tf = import_tensorflow()
    shard_dir = str(shard_dir).rstrip("/")
    manifest = read_manifest(shard_dir)
    ok, problems = [], []
    if not manifest.complete:
        problems.append("the manifest is incomplete: the run that wrote these shards did not finish")
    listed = {s.name for s in manifest.shards}
    present = {posixpath.basename(p) for p in tf.io.gfile.glob(_join(shard_dir, "*"))}
    for name in sorted(present - listed - {MANIFEST_NAME}):
        if name.endswith(".tfrecord"):
            problems.append(f"{name}: not in the manifest (stale or foreign shard; a glob would read it)")
        elif ".partial-" in name:
            problems.append(f"{name}: leftover of an interrupted write")
    for info in manifest.shards:
        path = _join(shard_dir, info.name)
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
            except ShardVerificationError as e:
                problems.append(f"{info.name}: {e}")
                continue
            if n != info.records or records_in_name(info.name) not in (None, n):
                problems.append(f"{info.name}: {n} records, the manifest says {info.records}")
                continue
        ok.append(info.name)
    return VerifyReport(shard_dir, ok, problems, manifest.total_records)


@dataclass
class ShardSet:
    """The shards a pipeline will read, after the checks of `inspect_shards`."""

    files: list[str]
    total_records: int
    block_size: int
    manifest: Manifest | None
    pattern: str | list[str] = ""  # what `make_mlm_dataset` hands to tf.data.Dataset.list_files


def _first_record_length(path: str) -> int:
    tf = import_tensorflow()
    for raw in tf.data.TFRecordDataset(path).take(1):
        example = tf.train.Example.FromString(raw.numpy())
        if FEATURE not in example.features.feature:
            raise ShardBlockSizeError(f"{path}: its records have no {FEATURE!r} feature "
                                      f"(features: {sorted(example.features.feature)})")
        return len(example.features.feature[FEATURE].int64_list.value)
    return -1  # empty file


def inspect_shards(shards: str | Sequence[str], *, block_size: int = BLOCK_SIZE, manifest: bool = True,
                   peek: int = 8) -> ShardSet:
    """Glob the shards and check them before a pipeline reads them, with a clear error for each problem.

    `shards`: a folder (``gs://bucket/mlm/train`` or local; its ``*.tfrecord``), a glob pattern, or a list
    of files. With `manifest` the folder's manifest gives the counts and must list exactly the globbed files,
    be complete and have `block_size`. The first record of up to `peek` shards (spread over the list) is read
    to check its length, so shards of another block length are caught even without a manifest.
    """
    tf = import_tensorflow()
    if isinstance(shards, (str, os.PathLike)):
        pattern = str(shards)
        is_glob = any(c in pattern for c in "*?[")
        folder = posixpath.dirname(pattern) if is_glob else pattern.rstrip("/")
        if not is_glob:
            pattern = _join(folder, "*.tfrecord")
        files = sorted(tf.io.gfile.glob(pattern))
    else:
        files = sorted(str(f) for f in shards)
        folder = posixpath.dirname(files[0]) if files else ""
        pattern = files
    if not files:
        raise ShardError(f"no .tfrecord shards match {pattern} (wrong path or bucket? write them first with "
                         "write_shards())")
    dirs = {posixpath.dirname(f) for f in files}
    man = None
    if manifest:
        if len(dirs) > 1:
            raise ManifestError(f"the shards come from {len(dirs)} folders ({sorted(dirs)}); one manifest covers "
                                "one folder: pass one folder, or manifest=False")
        man = read_manifest(dirs.pop())
        if not man.complete:
            raise ManifestError(f"the manifest in {folder} is incomplete: the run writing these shards was "
                                "interrupted. Rerun write_shards() to finish them.")
        if man.block_size != block_size:
            raise ShardBlockSizeError(f"the shards in {folder} hold {man.block_size}-token blocks but the pipeline "
                                      f"expects {block_size}: rewrite them with block_size={block_size}, or use "
                                      f"block_size={man.block_size} here (and in the model).")
        listed = {s.name: s for s in man.shards}
        names = [posixpath.basename(f) for f in files]
        extra = [n for n in names if n not in listed]
        missing = [n for n in listed if n not in names]
        if extra or missing:
            raise ManifestError(f"the files in {folder} do not match its manifest: "
                                + (f"not listed: {extra[:5]} " if extra else "")
                                + (f"missing: {missing[:5]} " if missing else "")
                                + "(stale shards from another run?). Rerun write_shards() into a clean folder.")
        total = sum(listed[n].records for n in names)
    else:
        counts = [records_in_name(f) for f in files]
        if None in counts:
            bad = [f for f, c in zip(files, counts) if c is None][:3]
            raise ManifestError(f"without a manifest the record count must be in the name "
                                f"(<prefix>-<index>-<count>.tfrecord); these are not: {bad}")
        total = int(sum(counts))
    if peek:
        picks = sorted({round(i * (len(files) - 1) / max(1, min(peek, len(files)) - 1))
                        for i in range(min(peek, len(files)))})
        lengths = {files[i]: _first_record_length(files[i]) for i in picks}
        wrong = {posixpath.basename(f): n for f, n in lengths.items() if n != block_size}
        if wrong:
            seen = sorted(set(lengths.values()))
            raise ShardBlockSizeError(f"shards with blocks of {seen} tokens where {block_size} is expected: {wrong}. "
                                      "All shards of one pipeline need the same block length: rewrite the odd "
                                      "ones or point the pipeline at one folder.")
    return ShardSet(files, total, block_size, man, pattern)
