"""A background loop's failures in a row: pauses that double while they last, and a log that says
the database went and came back in one line each, not a traceback per try."""

from __future__ import annotations

import logging
import time
from datetime import datetime

from django.utils import timezone

RETRY = 2.0  # seconds before the first try again
BACKOFF_MAX = 60.0  # the longest pause between tries while the failures last
UNREACHABLE = ("OperationalError", "InterfaceError")


class Outage:
    def __init__(self, log: logging.Logger, doing: str) -> None:
        self.log, self.doing = log, doing  # `doing`: the loop's work in words ("indexing")
        self.failures = 0
        self.since = 0.0

    def failed(self, exc: Exception) -> float:
        """Log `exc` (a database out of reach: once an outage) and say how long to pause."""
        self.failures += 1
        pause = min(BACKOFF_MAX, RETRY * 2 ** (self.failures - 1))
        if not unreachable(exc):
            # Not the database's absence: a fault of ours, with its traceback every time.
            self.log.error("%s failed; trying again in %.0f s", self.doing, pause, exc_info=exc)
        elif self.failures == 1:
            self.since = time.monotonic()
            reason = " ".join(str(exc).split()) or type(exc).__name__
            self.log.warning(
                "%s: the database cannot be reached (%s); trying again in %.0f s, then less often up to "
                "every %.0f s",
                self.doing,
                reason,
                pause,
                BACKOFF_MAX,
            )
        return pause

    def passed(self) -> None:
        """A round without failure: an outage that was logged ends with a line of its own."""
        if self.failures and self.since:
            self.log.warning(
                "%s: the database is back after %.0f s (%d tries failed)",
                self.doing,
                time.monotonic() - self.since,
                self.failures,
            )
        self.failures, self.since = 0, 0.0


def unreachable(exc: BaseException | None) -> bool:
    """Whether `exc` says the database cannot be reached or its connection broke: Django's errors
    and the driver's own (a LISTEN connection is used without Django), by the DB-API's names."""
    return exc is not None and any(c.__name__ in UNREACHABLE for c in type(exc).__mro__)


def since(then: datetime) -> str:
    """How long ago `then` was, as a page says it: "5 seconds", "3 minutes", "2 days"."""
    seconds = max(0, int((timezone.now() - then).total_seconds()))
    if seconds < 60:
        return f"{seconds} second{'' if seconds == 1 else 's'}"
    minutes = seconds // 60
    if minutes < 120:
        return f"{minutes} minute{'' if minutes == 1 else 's'}"
    hours = minutes // 60
    return f"{hours} hours" if hours < 48 else f"{hours // 24} days"
