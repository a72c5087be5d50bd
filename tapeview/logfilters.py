"""Log filters: a refused request is one line in the log, not a traceback, saying who asked for what."""

from __future__ import annotations

import logging

from tapeview.outage import unreachable

# How axes_client names the attempts whose refusal is logged as a request of its own.
ANSWERED = ("an API token", "a sign-in link")


class OneLineClientErrors(logging.Filter):
    """A 4xx answer (a 403 for a viewer, a failed CSRF check, a 404) is the client's mistake: one line,
    `403 POST /memory/3/edit by vera: Forbidden (Permission denied)`, no traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        if status == 503 and record.exc_info and unreachable(record.exc_info[1]):
            # The database out of reach (tapeview.errors answers 503): one line a request, no traceback.
            record.msg = f"{record.msg} (the database cannot be reached: %s)"
            record.args = (*(record.args or ()), " ".join(str(record.exc_info[1]).split())[:200])
            record.exc_info = record.exc_text = None
            return True
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


class OneLineSignInFailures(logging.Filter):
    """django-axes counts every failed sign-in (its lockout needs the count) and logs each one. A
    refused API token or sign-in link already has its line (OneLineClientErrors: the 401 or 403,
    naming the token by its prefix), so axes' line of it is dropped; a wrong password, answered
    with the form again, has only axes' line, said plainly. The attempt that locks a token or link
    out is still answered 401 or 403, so the lockout says so; a password's is answered 429."""

    FAILURES = ("AXES: New login failure", "AXES: Repeated login failure")

    def filter(self, record: logging.LogRecord) -> bool:
        message = str(record.msg)
        attempt = str(record.args[0]) if isinstance(record.args, tuple) and record.args else ""
        if message.startswith(self.FAILURES):
            if attempt.startswith(ANSWERED):
                return False
            record.msg, record.args = "sign-in refused: %s", (attempt,)
        elif message.startswith("AXES: Locking out"):
            if not attempt.startswith(ANSWERED):
                return False  # the password's form is answered 429, logged as a request
            record.msg, record.args = "sign-ins locked out after repeated failures, the last: %s", (attempt,)
        return True


def axes_client(
    username: str | None, ip_address: str, user_agent: str, path_info: object, request: object
) -> str:
    """How django-axes names an attempt in its log lines (AXES_CLIENT_STR_CALLABLE): what was tried,
    from which address (what the lockout counts), on which path; never the username typed (it
    may be a password typed in the wrong field), as axes' own masking."""
    from tapeview.accounts import throttle  # at call time, when the apps are loaded

    tried = {throttle.TOKEN["username"]: ANSWERED[0], throttle.LINK["username"]: ANSWERED[1]}
    path = path_info[0] if isinstance(path_info, tuple | list) and path_info else path_info
    what = tried.get(username or "", "a password")
    return f"{what} from {_one_line(str(ip_address or '?'))} on {_one_line(str(path or '?'))}"


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
