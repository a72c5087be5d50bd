"""Log filters: a refused request is one line in the log, not a traceback, saying who asked for what."""

from __future__ import annotations

import logging


class OneLineClientErrors(logging.Filter):
    """A 4xx answer (a 403 for a viewer, a failed CSRF check, a 404) is the client's mistake: one line,
    `403 POST /memory/3/edit by vera: Forbidden (Permission denied)`, no traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        if not (isinstance(status, int) and 400 <= status < 500):
            return True
        record.exc_info = None
        record.exc_text = None
        request = getattr(record, "request", None)
        # Once per record: logging set up twice (a settings override) puts the filter on twice.
        if request is None or not hasattr(request, "method") or getattr(record, "one_line", False):
            return True
        record.one_line = True
        path = _one_line(request.path)
        reason = record.getMessage().removesuffix(f": {path}")
        record.msg, record.args = (
            "%s %s %s by %s: %s",
            (status, _one_line(request.method), path, _who(request), reason),
        )
        return True


def _who(request: object) -> str:
    try:
        # An API call names the caller its authentication found: a token by its name, id and shown
        # prefix (a token's request has no user, so it would read "anonymous"), or a person.
        caller = getattr(request, "auth", None)
        if callable(getattr(caller, "log_name", None)):
            return _one_line(caller.log_name())
        # A failed CSRF check comes before anything read the user: this reads the session (a 4xx, rare).
        user = getattr(request, "user", None)
        if user is None:
            return "(no session)"
        if user.is_authenticated:
            return _one_line(user.get_username())
        refused = getattr(request, "refused_token", None)  # a 401: the token it was, if it was one
        return f"anonymous (refused token {_one_line(refused)})" if refused else "anonymous"
    except Exception:  # a log line must never fail the answer it reports
        return "(unknown)"


def _one_line(text: str) -> str:
    # As Django's log_response escapes the path: a newline in a URL must not start a forged log line.
    return text.encode("unicode_escape").decode("ascii")
