"""Log filters: a refused request is one line in the log, not a traceback."""

from __future__ import annotations

import logging


class OneLineClientErrors(logging.Filter):
    """Drop the traceback of a 4xx answer (a 403 for a viewer, a 404): it is the client's mistake."""

    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        if isinstance(status, int) and 400 <= status < 500:
            record.exc_info = None
            record.exc_text = None
        return True
