"""The filter language of the session index (`errors > 0 and kind == "bub"`): parsed by hand, compiled
to a Q over `Tape` whose values are always bound parameters (docs/filters.md)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from django.db.models import Q

MAX_LENGTH = 1000  # characters of an expression
MAX_TERMS = 50  # comparisons in one expression
MAX_DEPTH = 30  # nested parentheses and `not`s: deeper would only exhaust the parser's stack
WHOLE = 2**62  # the widest whole number a column takes (as the API's BIG)
COMPARISONS = ("==", "!=", ">", ">=", "<", "<=")
OPERATORS = (*COMPARISONS, "~", ":")
MAX_AGO = 100 * 366 * 86400  # seconds a duration reaches back at most: past it, no datetime
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


class FilterError(ValueError):
    """An expression that does not parse, or asks what a field cannot answer; says where (1-based)."""

    def __init__(self, position: int, message: str) -> None:
        super().__init__(f"at character {position}: {message}")
        self.position = position
        self.message = message


@dataclass(frozen=True)
class Field:
    """A name of the language: a column of `Tape` of a type (text, whole, number, time), or a lookup
    another app registers (`q` answers the operator and value with a Q)."""

    type: str
    column: str = ""
    help: str = ""
    q: Callable[[str, str], Q] | None = None


FIELDS: dict[str, Field] = {
    "kind": Field("text", "kind", "the agent family: bub, nanobot, yachiyo, araliya"),
    "host": Field("text", "host", "the host whose source holds the tape"),
    "source": Field("text", "source", "the source's label"),
    "session": Field("text", "label", "the session's title, as the index shows it"),
    "name": Field("text", "name", "the file name in its source"),
    "anchor": Field("text", "last_anchor", "the name of the last anchor"),
    "model": Field("text", "model", "the model last seen"),
    "workdir": Field("text", "workdir", "the folder the session worked in"),
    "entries": Field("whole", "entries", "entries"),
    "anchors": Field("whole", "anchors", "anchors"),
    "since_anchor": Field("whole", "entries_since_anchor", "entries since the last anchor"),
    "errors": Field("whole", "errors", "failed tool calls, runs and steps"),
    "unreadable": Field("whole", "unreadable", "unreadable lines"),
    "tokens": Field("whole", "tokens", "the tokens the agent recorded (none: no usage recorded)"),
    "context": Field("whole", "context_tokens", "the prompt tokens last reported since the last anchor"),
    "size": Field("whole", "size", "the file's size in bytes"),
    "cost": Field("number", "cost", "the session's cost in USD (none: no cost known)"),
    "first_at": Field("time", "first_at", "the time of the first entry"),
    "last_at": Field("time", "last_at", "the time of the last entry"),
    "since": Field("range", "last_at", "since:2d, since:2026-12-01: active since then"),
    "until": Field("range", "first_at", "until:1h, until:2026-12-01: active before then"),
}

OPS_BY_TYPE = {
    "text": ("==", "!=", "~", ":"),
    "whole": (*COMPARISONS, ":"),
    "number": (*COMPARISONS, ":"),
    "time": (*COMPARISONS, ":"),
    "range": (":",),
    "lookup": ("==", "!=", "~", ":"),
}


def add_field(name: str, help: str, q: Callable[[str, str], Q]) -> None:
    """A text name answered by another app (reviews: `label`), registered from its AppConfig.ready()."""
    FIELDS[name] = Field("lookup", help=help, q=q)


@dataclass(frozen=True)
class Token:
    kind: str  # name, string, number, duration, op, (, ), end
    text: str
    position: int  # 1-based
    value: object = None


TOKEN = re.compile(
    r"""(?P<space>\s+)
    |(?P<date>\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})?)?)(?![\w.:-])
    |(?P<duration>\d+[smhdw])(?![\w.])
    |(?P<number>-?\d+(?:\.\d+)?)(?![\w.])
    |(?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
    |(?P<op>==|!=|>=|<=|>|<|~|:)
    |(?P<paren>[()])
    |(?P<name>[^\W\d][\w.\-/]*|\d[\w.\-/:+]*)""",
    re.VERBOSE,
)


def tokens(text: str) -> list[Token]:
    if "\x00" in text:  # no query may hold one (PostgreSQL refuses it)
        raise FilterError(text.index("\x00") + 1, "unexpected character NUL")
    out, at = [], 0
    while at < len(text):
        found = TOKEN.match(text, at)
        if found is None:
            if text[at] in "\"'":
                raise FilterError(at + 1, f"the string started here has no closing {text[at]}")
            if text[at] == "=":
                raise FilterError(at + 1, "expected == (a single = compares nothing)")
            raise FilterError(at + 1, f"unexpected character {text[at]!r}")
        kind, piece = found.lastgroup or "", found.group()
        if kind == "string":
            out.append(Token("string", piece, at + 1, re.sub(r"\\(.)", r"\1", piece[1:-1], flags=re.S)))
        elif kind == "paren":
            out.append(Token(piece, piece, at + 1))
        elif kind != "space":
            out.append(Token(kind, piece, at + 1))
        at = found.end()
    out.append(Token("end", "", len(text) + 1))
    return out


# The parsed expression: ("and" | "or", [nodes]), ("not", node), or ("cmp", field, op, value).
Node = tuple


def parse(text: str) -> Node | None:
    """The expression as a tree; None for an empty one. FilterError says where it goes wrong."""
    if len(text) > MAX_LENGTH:
        raise FilterError(MAX_LENGTH + 1, f"a filter is at most {MAX_LENGTH} characters")
    parser = _Parser(tokens(text))
    if parser.peek().kind == "end":
        return None
    node = parser.either(0)
    if parser.peek().kind != "end":
        raise parser.expected('"and", "or" or the end of the filter')
    return node


class _Parser:
    """Recursive descent, lowest precedence first: `or`, then `and`, then `not`, then a comparison
    or parentheses."""

    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.at = 0
        self.terms = 0

    def peek(self) -> Token:
        return self.tokens[self.at]

    def take(self) -> Token:
        token = self.tokens[self.at]
        self.at += 1
        return token

    def keyword(self, word: str) -> bool:
        token = self.peek()
        if token.kind == "name" and token.text.lower() == word:
            self.at += 1
            return True
        return False

    def expected(self, what: str) -> FilterError:
        token = self.peek()
        found = "the end of the filter" if token.kind == "end" else repr(token.text)
        return FilterError(token.position, f"expected {what}, found {found}")

    def either(self, depth: int) -> Node:
        nodes = [self.both(depth)]
        while self.keyword("or"):
            nodes.append(self.both(depth))
        return nodes[0] if len(nodes) == 1 else ("or", nodes)

    def both(self, depth: int) -> Node:
        nodes = [self.unary(depth)]
        while self.keyword("and"):
            nodes.append(self.unary(depth))
        return nodes[0] if len(nodes) == 1 else ("and", nodes)

    def unary(self, depth: int) -> Node:
        if depth >= MAX_DEPTH:
            raise FilterError(self.peek().position, f"a filter nests at most {MAX_DEPTH} deep")
        if self.keyword("not"):
            return ("not", self.unary(depth + 1))
        if self.peek().kind == "(":
            self.take()
            node = self.either(depth + 1)
            if self.peek().kind != ")":
                raise self.expected('")", "and" or "or"')
            self.take()
            return node
        return self.comparison()

    def comparison(self) -> Node:
        token = self.peek()
        if token.kind != "name" or token.text.lower() in ("and", "or", "not"):
            raise self.expected('a field name, "not" or "("')
        name = token.text.lower()
        field = FIELDS.get(name)
        if field is None:
            known = ", ".join(FIELDS)
            raise FilterError(token.position, f"unknown field {token.text!r} (the fields: {known})")
        self.take()
        self.terms += 1
        if self.terms > MAX_TERMS:
            raise FilterError(token.position, f"a filter compares at most {MAX_TERMS} times")
        op = self.peek()
        allowed = OPS_BY_TYPE[field.type]
        if op.kind != "op":
            raise self.expected(f"an operator after {name} ({' '.join(allowed)})")
        if op.text not in allowed:
            raise FilterError(op.position, f"{name} takes {' '.join(allowed)}, not {op.text}")
        self.take()
        value = self.peek()
        if value.kind not in ("string", "number", "duration", "date", "name"):
            raise self.expected(f"a value after {name} {op.text}")
        self.take()
        return ("cmp", name, op.text, _value(name, field, value))


def _value(name: str, field: Field, token: Token) -> object:
    """The token as the field's type takes it, refused with its position when it cannot be one."""
    text = token.value if token.kind == "string" else token.text
    if field.type in ("text", "lookup"):
        return text
    if field.type in ("whole", "number"):
        if token.kind != "number":
            raise FilterError(token.position, f"{name} takes a number, not {token.text}")
        if field.type == "whole":
            if "." in token.text:
                raise FilterError(token.position, f"{name} takes a whole number, not {token.text}")
            number = int(token.text)
            if abs(number) >= WHOLE:
                raise FilterError(token.position, f"{token.text} is past the largest number {name} holds")
            return number
        number = float(token.text)
        if abs(number) >= WHOLE:
            raise FilterError(token.position, f"{token.text} is past the largest number {name} holds")
        return number
    if token.kind == "duration":
        seconds = int(token.text[:-1]) * UNITS[token.text[-1]]
        if seconds > MAX_AGO:
            raise FilterError(token.position, f"{token.text} reaches back more than a hundred years")
        return timedelta(seconds=seconds)
    moment = _moment(str(text))
    if moment is None:
        raise FilterError(
            token.position,
            f"{name} takes a duration (30m, 3h, 2d, 1w) or a date (2026-12-01, 2026-12-01T09:30), "
            f"not {token.text}",
        )
    return moment


def _moment(text: str) -> date | datetime | None:
    """A date (a whole day, UTC) or a moment (UTC unless it names its offset)."""
    try:
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
            day = date.fromisoformat(text)
            return day if 1 < day.year < 9999 else None
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if not 1 < moment.year < 9999:  # a day after it, or its moment in UTC, would be past what datetime holds
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def tape_q(text: str, now: datetime | None = None) -> Q:
    """The expression as a Q over `Tape` (an empty one filters nothing)."""
    node = parse(text)
    return Q() if node is None else to_q(node, now or datetime.now(UTC))


def to_q(node: Node, now: datetime) -> Q:
    if node[0] in ("and", "or"):
        parts = [to_q(n, now) for n in node[1]]
        out = parts[0]
        for part in parts[1:]:
            out = (out & part) if node[0] == "and" else (out | part)
        return out
    if node[0] == "not":
        return ~to_q(node[1], now)
    _, name, op, value = node
    field = FIELDS[name]
    if field.type == "lookup":
        assert field.q is not None
        return field.q(op, str(value))
    if field.type == "range":
        return _range(field.column, name, value, now)
    if op == ":":
        op = "=="
    if field.type == "time":
        return _time(field.column, op, value, now)
    if op == "~":
        return Q(**{f"{field.column}__icontains": value})
    return _compare(field.column, op, value)


def _compare(column: str, op: str, value: object) -> Q:
    if op == "!=":
        return ~Q(**{column: value})
    lookup = {"==": "exact", ">": "gt", ">=": "gte", "<": "lt", "<=": "lte"}[op]
    return Q(**{f"{column}__{lookup}": value})


def _time(column: str, op: str, value: object, now: datetime) -> Q:
    """A duration is that long before now; a date is its whole day (UTC)."""
    if isinstance(value, timedelta):
        return _compare(column, op, now - value)
    if isinstance(value, datetime):
        return _compare(column, op, value)
    assert isinstance(value, date)
    start = datetime(value.year, value.month, value.day, tzinfo=UTC)
    end = start + timedelta(days=1)
    day = Q(**{f"{column}__gte": start, f"{column}__lt": end})
    return {
        "==": day,
        "!=": ~day,
        ">": Q(**{f"{column}__gte": end}),
        ">=": Q(**{f"{column}__gte": start}),
        "<": Q(**{f"{column}__lt": start}),
        "<=": Q(**{f"{column}__lt": end}),
    }[op]


def _range(column: str, name: str, value: object, now: datetime) -> Q:
    """since: active at or after the moment (its last entry); until: active before it (its first),
    as search's since and until bound a tape (a date includes its whole day)."""
    if isinstance(value, timedelta):
        moment = now - value
        return Q(last_at__gte=moment) if name == "since" else Q(first_at__lte=moment)
    if isinstance(value, datetime):
        return Q(last_at__gte=value) if name == "since" else Q(first_at__lte=value)
    assert isinstance(value, date)
    start = datetime(value.year, value.month, value.day, tzinfo=UTC)
    return Q(last_at__gte=start) if name == "since" else Q(first_at__lt=start + timedelta(days=1))
