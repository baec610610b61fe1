"""Notebook 04's tokenizer, config and blocks, defined in its cells (``lesson_cells``); importable here as well."""
from tpu_helpers.mlm.lesson_cells import (  # noqa: F401
    ROBERTA_BASE,
    SPECIAL_TOKENS,
    BlockChunker,
    ChunkStats,
    check_config_matches_tokenizer,
    check_enough_blocks,
    roberta_config,
    tokenize_and_chunk,
    train_unigram_tokenizer,
)

BLOCK_SIZE = 128  # the seed's --max_length
