"""Files the course writes for other processes to read (framework-free)."""
import json
import os
from typing import Any


def write_json_atomic(path: str | os.PathLike[str], payload: dict[str, Any]) -> None:
    """`payload` as JSON at `path`, through a temporary file and a rename: a reader sees all of it or none."""
    tmp = f"{os.fspath(path)}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(payload, f, indent=1, sort_keys=True)
    os.replace(tmp, path)
