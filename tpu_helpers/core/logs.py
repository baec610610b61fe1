"""The one way the course hides a library's log line: a filter for exact message starts."""
import logging


class DropMessages(logging.Filter):
    """Drops the records whose message starts with one of `prefixes`; lets everything else through."""

    def __init__(self, *prefixes: str):
        super().__init__()
        self.prefixes = prefixes

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(self.prefixes)
