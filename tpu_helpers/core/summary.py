""""What you measured": `record()` keeps a figure of this run (and appends it to ``TPU_COURSE_FIGURES`` as JSON), `show()`."""
import json
import os
from typing import Any

from tpu_helpers.core.tables import format_table

FIGURES_ENV = "TPU_COURSE_FIGURES"
_FIGURES: dict[str, tuple[Any, str]] = {}


def _plain(value: Any) -> Any:
    """A number, bool, text or None: NumPy/TensorFlow/PyTorch scalars become Python ones."""
    if hasattr(value, "numpy") and not hasattr(value, "item"):  # a TensorFlow tensor
        value = value.numpy()
    if hasattr(value, "item"):
        value = value.item()
    if value is not None and not isinstance(value, (bool, int, float, str)):
        raise TypeError(f"record() keeps a number, a bool or a short text, not {type(value).__name__}")
    return float(f"{value:.4g}") if isinstance(value, float) else value


def record(name: str, value: Any, unit: str = "", *, quiet: bool = False) -> Any:
    """Keep one key figure of this run (re-recording a name replaces it) and return the value."""
    value = _plain(value)
    _FIGURES[name] = (value, unit)
    path = os.environ.get(FIGURES_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"name": name, "value": value, "unit": unit}) + "\n")
    if not quiet:
        print(f"[measured] {name}: {value}{(' ' + unit) if unit else ''}")
    return value


def show(title: str = "What you measured") -> str:
    """Print (and return) this run's figures as a small table."""
    rows = [{"figure": k, "value": f"{v} {u}".strip()} for k, (v, u) in _FIGURES.items()]
    text = format_table(rows, title=title) if rows else f"{title}: nothing recorded yet"
    print(text)
    return text
