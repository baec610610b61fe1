"""The errors of notebook 04's MLM data path, from the corpus to the shards and the pipeline (their own file, so
`corpus`, `sources`, `tokenizer`, `shards` and `pipeline` all import them without importing each other)."""


class MLMDataError(RuntimeError):
    """Base class: something is wrong with the MLM data; the message says how to fix it."""


class EmptyCorpusError(MLMDataError, ValueError):
    """No text left after filtering (or nothing to chunk)."""


class CorpusTooSmallError(EmptyCorpusError):
    """The corpus does not fill one global batch of blocks."""


class CorpusUnavailableError(MLMDataError):
    """The online corpus cannot be loaded (offline, no cache)."""


class ShardError(MLMDataError):
    """Base class for problems with TFRecord shards."""


class ShardBlockSizeError(ShardError, ValueError):
    """Shards hold blocks of a different length than the pipeline expects (or of several lengths)."""


class ManifestError(ShardError):
    """The manifest is missing, unreadable, incomplete or disagrees with the files."""


class ShardVerificationError(ShardError):
    """A shard is missing, truncated or has the wrong checksum."""
