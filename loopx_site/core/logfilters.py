"""Logging filters (imported by the LOGGING setting, so kept free of Django imports)."""

import logging


class NoTraceback(logging.Filter):
    """Keep the record, drop its traceback (for refusals that are expected)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.exc_info = None
        record.exc_text = None
        return True
