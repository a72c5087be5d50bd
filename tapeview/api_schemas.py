"""Shapes every API module shares: list paging, and errors (always `{"detail": ...}`, each documented)."""

from __future__ import annotations

from typing import Any

from ninja import Field, Schema

from memory_admin.diff import unified
from memory_admin.stores.model import StaleEdit

# The widest integer a filter takes: SQLite and PostgreSQL both store 64-bit integers.
BIG = 2**62
# No NUL in strings that reach a query: PostgreSQL refuses them.
TEXT = r"^[^\x00]*$"


class PageIn(Schema):
    """`?limit=` and `?cursor=` of every list; the answer's `next_cursor` fetches the next page."""

    limit: int = Field(50, ge=1, le=500)
    cursor: str | None = Field(None, max_length=1000, pattern=r"^[A-Za-z0-9_-]*$")


class ErrorOut(Schema):
    detail: str


class FieldErrorOut(Schema):
    loc: list[str | int]
    msg: str
    type: str


class ValidationErrorOut(Schema):
    """422: the request's parameters or body, each problem with where it is."""

    detail: list[FieldErrorOut]


class BusyOut(Schema):
    """409 busy: the agent is writing; nothing was written. Also sent as the Retry-After header."""

    detail: str
    retry_after: int


class ConflictOut(Schema):
    """409 stale: the store changed since `base_version`; nothing was written.

    `diff` is a unified diff from the current content to the content sent: what the edit would
    change if sent again with `base_version` = `current_version`.
    """

    detail: str
    current_version: str
    current_content: str
    diff: str


SHAPES: dict[int, Any] = {422: ValidationErrorOut, 409: BusyOut}


def responses(ok: dict[int, Any], *codes: int) -> dict[int, Any]:
    """An operation's documented responses: its success, 401 and 422 always, and the errors it may give."""
    return {**ok, **{code: SHAPES.get(code, ErrorOut) for code in (401, 422, *codes)}}


def conflict(stale: StaleEdit, sent: str) -> ConflictOut:
    return ConflictOut(
        detail="the store changed since base_version: nothing was written",
        current_version=stale.current_version,
        current_content=stale.current_text,
        diff=unified(stale.current_text, sent, f"current@{stale.current_version}", "sent"),
    )


def busy_detail(reason: str, retry_after: int) -> str:
    return f"busy: {reason}. Nothing was written: retry after {retry_after} s."
