"""Shapes every API router shares: list paging, and errors (always `{"detail": ...}`, each documented)."""

from __future__ import annotations

from typing import Annotated, Any

from ninja import Field, Schema
from pydantic import BeforeValidator, ConfigDict, StrictInt, model_validator
from pydantic_core import PydanticCustomError

# The widest integer a filter takes: SQLite and PostgreSQL both store 64-bit integers.
BIG = 2**62
# No NUL in strings that reach a query: PostgreSQL refuses them.
TEXT = r"^[^\x00]*$"


def _whole(value: Any) -> Any:
    # JSON Schema's integer: 3096.0 is one (some clients' JSON writes every number so); true, 1.5 and
    # "5" are not (a client's mistake, never read as a number).
    return int(value) if type(value) is float and value.is_integer() else value


# An integer of a JSON body, as JSON Schema has it: a whole number, not a bool or a string.
WholeInt = Annotated[StrictInt, BeforeValidator(_whole)]


class PageIn(Schema):
    """`?limit=` and `?cursor=` of every list; the answer's `next_cursor` fetches the next page."""

    limit: int = Field(50, ge=1, le=500)
    cursor: str | None = Field(None, max_length=1000, pattern=r"^[A-Za-z0-9_-]*$")


class BodyIn(Schema):
    """A JSON request body: an object of known fields. Anything else is a 422 that says so, where
    ninja would read a list or a number as an object without fields, and drop unknown fields."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="wrap")
    @classmethod
    def _an_object(cls, data: Any, handler: Any) -> Any:
        if not isinstance(data, dict | cls):
            raise PydanticCustomError("object_type", "the body must be a JSON object")
        return handler(data)


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
    stopped: bool = Field(
        False, description="the agent looks stopped mid-turn: send confirm_stopped=true to write anyway"
    )


class NotHereYetOut(Schema):
    """503 (a fleet): a part of another host's tape that its copy here lacks yet, on its way. Also
    sent as the Retry-After header."""

    detail: str
    retry_after: int


SHAPES: dict[int, Any] = {422: ValidationErrorOut, 409: BusyOut, 503: NotHereYetOut}


def responses(ok: dict[int, Any], *codes: int) -> dict[int, Any]:
    """An operation's documented responses: its success, 401 and 422 always, and the errors it may give."""
    return {**ok, **{code: SHAPES.get(code, ErrorOut) for code in (401, 422, *codes)}}


def busy_detail(reason: str, retry_after: int, stopped: bool = False) -> str:
    if stopped:
        return f"stopped: {reason}. Nothing was written: to write anyway, send confirm_stopped=true."
    return f"busy: {reason}. Nothing was written: retry after {retry_after} s."
