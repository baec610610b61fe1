"""The course's built-in texts for notebook 04 as local .txt files: the Python docs' prose and generated English."""
from __future__ import annotations

import hashlib
import os
import re
import zlib
from pathlib import Path
from typing import Iterable

from tpu_helpers.shared import synthetic_text


def python_docs_paragraphs() -> list[str]:
    """The prose paragraphs of the Python Language Reference (``pydoc_data.topics``), one a line."""
    from pydoc_data import topics

    out = []
    for text in topics.topics.values():
        for paragraph in re.split(r"\n\s*\n", text):
            line = " ".join(paragraph.split())
            prose = sum(c.isalpha() or c == " " for c in line) >= 0.85 * len(line)
            if prose and len(line.split()) >= 8 and not line.startswith(">" * 3):  # not an interactive example
                out.append(line)
    return out


def text_file(recipe: str, paragraphs: Iterable[str]) -> str:
    """Write `paragraphs` once to a train.txt in the course's cache (one in 50 held out); its path."""
    folder = Path(os.environ.get("TPU_COURSE_CACHE", Path.home() / ".cache" / "tpu-course")) / recipe
    train = folder / "train.txt"
    if not train.exists():
        folder.mkdir(parents=True, exist_ok=True)
        tmp = train.with_suffix(f".txt.partial-{os.getpid()}")
        with open(tmp, "w", encoding="utf-8") as f:
            f.writelines(text + "\n" for text in paragraphs if zlib.crc32(text.encode()) % 50)  # the measured runs' data
        os.replace(tmp, train)
    return str(train)


def offline_text_file(max_chars: int | None) -> str:
    """Generated English-like text (`tpu_helpers.shared.synthetic_text`), the same on every machine: a .txt path."""
    chars = 2_000_000 if max_chars is None else max_chars
    key = hashlib.sha256(f"synthetic-v{synthetic_text.VERSION}|{max_chars}|50".encode()).hexdigest()[:10]
    return text_file(f"offline-corpus-{key}", synthetic_text.iter_paragraphs(max_chars=chars))


def python_docs_text_file() -> str:
    """The Python Language Reference's prose (real English that ships with Python): a .txt path."""
    paragraphs = python_docs_paragraphs()
    key = hashlib.sha256("\n".join(paragraphs).encode() + b"|50").hexdigest()[:10]
    return text_file(f"python-docs-{key}", paragraphs)
