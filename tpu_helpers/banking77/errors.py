"""The error notebook 05's training setup raises (its own file, so `train`, `evaluation` and `replicas` can all
import it without importing each other)."""


class TrainingError(ValueError):
    """The training setup cannot work as given; the message says how to fix it."""
