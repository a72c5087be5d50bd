"""Line diffs with the changed parts of each changed line marked (plain Python)."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass

# difflib's matcher slows far faster than its texts grow where lines repeat (two versions of a
# pretty-printed memory.json, 4,000 lines each, took 38 s; tens of thousands never ended) and a page
# showed every row: past these, two versions are not compared and the page says how far they differ,
# as GitHub's "Large diffs are not rendered by default". The lines both versions start and end with
# are set aside first (in linear time), so one edit in a huge file is still shown.
COMPARED_LINES = 2_000  # of both versions, between their common head and tail (0.7 s at worst measured)
COMPARED_CHARS = 1_000_000  # characters of those lines, which a page shows as rows
# Characters compared to mark the changed part of a changed line, a version's against the other's
# (after their common start and end): past them, a line's changed part is marked whole.
MARKED_CELLS = 10_000_000


@dataclass(frozen=True)
class Span:
    text: str
    changed: bool


@dataclass(frozen=True)
class DiffLine:
    op: str  # "same", "del", "add"
    old_no: int | None
    new_no: int | None
    spans: tuple[Span, ...]

    @property
    def text(self) -> str:
        return "".join(s.text for s in self.spans)


@dataclass(frozen=True)
class Extent:
    """Where two versions differ: from line `first_line` (1-based), `old_lines` of one against
    `new_lines` of the other; and the versions' sizes in UTF-8 bytes."""

    first_line: int
    old_lines: int
    new_lines: int
    old_bytes: int
    new_bytes: int


class TooLarge(ValueError):
    """Two versions too far apart to compare (past COMPARED_LINES or COMPARED_CHARS)."""

    def __init__(self, extent: Extent) -> None:
        self.extent = extent
        e = extent
        super().__init__(
            f"These versions differ from line {e.first_line:,} on, in {e.old_lines:,} lines against "
            f"{e.new_lines:,} ({e.old_bytes:,} → {e.new_bytes:,} bytes): the diff is too large to show here "
            f"(Tapeview compares at most {COMPARED_LINES:,} changed lines)."
        )


def too_large(old: str, new: str) -> TooLarge | None:
    """Why these two versions are not compared, or None where they are."""
    a, b = old.splitlines(), new.splitlines()
    head, tail = _common_ends(a, b)
    old_mid, new_mid = a[head : len(a) - tail], b[head : len(b) - tail]
    chars = sum(map(len, old_mid)) + sum(map(len, new_mid))
    if len(old_mid) + len(new_mid) <= COMPARED_LINES and chars <= COMPARED_CHARS:
        return None
    sizes = len(old.encode("utf-8", "surrogatepass")), len(new.encode("utf-8", "surrogatepass"))
    return TooLarge(Extent(head + 1, len(old_mid), len(new_mid), *sizes))


def rows(old: str, new: str) -> list[DiffLine | None] | TooLarge:
    """What a page shows of `new` against `old`: line_diff's rows, or why there are none."""
    return too_large(old, new) or line_diff(old, new)


def line_diff(old: str, new: str, context: int | None = 3) -> list[DiffLine | None]:
    """The lines of `new` against `old`; None marks skipped unchanged lines (with `context`).

    TooLarge past COMPARED_LINES or COMPARED_CHARS.
    """
    if found := too_large(old, new):
        raise found
    a, b = old.splitlines(), new.splitlines()
    out: list[DiffLine | None] = []
    groups = _grouped(a, b, context)
    budget = [MARKED_CELLS]
    for n, group in enumerate(groups):
        if n or (group and (group[0][1] > 0 or group[0][3] > 0)):
            out.append(None)
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out += [
                    DiffLine("same", i + 1, j1 + k + 1, (Span(a[i], False),))
                    for k, i in enumerate(range(i1, i2))
                ]
            elif tag == "replace" and i2 - i1 == j2 - j1:
                for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                    old_spans, new_spans = _within(a[i], b[j], budget)
                    out += [DiffLine("del", i + 1, None, old_spans), DiffLine("add", None, j + 1, new_spans)]
            else:
                out += [DiffLine("del", i + 1, None, (Span(a[i], True),)) for i in range(i1, i2)]
                out += [DiffLine("add", None, j + 1, (Span(b[j], True),)) for j in range(j1, j2)]
    if groups and groups[-1] and (groups[-1][-1][2] < len(a) or groups[-1][-1][4] < len(b)):
        out.append(None)
    return out


def _common_ends(a: Sequence[str], b: Sequence[str]) -> tuple[int, int]:
    """How many items `a` and `b` start with alike, and how many more they end with alike."""
    shorter = min(len(a), len(b))
    head = 0
    while head < shorter and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < shorter - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    return head, tail


class _Trimmed(difflib.SequenceMatcher):
    """A matcher that sets the common head and tail aside before it matches (difflib does not)."""

    def get_opcodes(self) -> list[tuple[str, int, int, int, int]]:
        if self.opcodes is None:
            a, b = self.a, self.b
            head, tail = _common_ends(a, b)
            inner = difflib.SequenceMatcher(
                a=a[head : len(a) - tail], b=b[head : len(b) - tail], autojunk=False
            )
            codes = [
                (t, i1 + head, i2 + head, j1 + head, j2 + head) for t, i1, i2, j1, j2 in inner.get_opcodes()
            ]
            if head:
                codes.insert(0, ("equal", 0, head, 0, head))
            if tail:
                codes.append(("equal", len(a) - tail, len(a), len(b) - tail, len(b)))
            self.opcodes = _joined(codes)
        return self.opcodes


def _joined(codes: list[tuple[str, int, int, int, int]]) -> list[tuple[str, int, int, int, int]]:
    """Opcodes without empty runs, neighbouring equal runs made one, as difflib gives them."""
    out: list[tuple[str, int, int, int, int]] = []
    for code in codes:
        if code[1] == code[2] and code[3] == code[4]:
            continue
        if out and out[-1][0] == code[0] == "equal":
            out[-1] = ("equal", out[-1][1], code[2], out[-1][3], code[4])
        else:
            out.append(code)
    return out


def _grouped(a: list[str], b: list[str], context: int | None) -> list[list[tuple[str, int, int, int, int]]]:
    matcher = _Trimmed(a=a, b=b, autojunk=False)
    return list(matcher.get_grouped_opcodes(context)) if context is not None else [matcher.get_opcodes()]


def _within(old: str, new: str, budget: list[int]) -> tuple[tuple[Span, ...], tuple[Span, ...]]:
    """The parts of two versions of a line that differ, character by character (their changed middle
    marked whole once `budget`, the characters left to compare, is spent)."""
    start, end = _common_ends(old, new)
    cells = (len(old) - start - end) * (len(new) - start - end)
    if cells > budget[0]:
        return _marked(old, start, end), _marked(new, start, end)
    budget[0] -= cells
    matcher = _Trimmed(a=old, b=new, autojunk=False)
    olds, news = [], []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if i2 > i1:
            olds.append(Span(old[i1:i2], tag != "equal"))
        if j2 > j1:
            news.append(Span(new[j1:j2], tag != "equal"))
    return tuple(olds), tuple(news)


def _marked(line: str, start: int, end: int) -> tuple[Span, ...]:
    parts = (
        Span(line[:start], False),
        Span(line[start : len(line) - end], True),
        Span(line[len(line) - end :], False),
    )
    return tuple(s for s in parts if s.text)


def unified(old: str, new: str, old_name: str = "before", new_name: str = "after") -> str:
    """A unified diff as text, for the audit log and the API (past COMPARED_LINES: a line saying so)."""
    if found := too_large(old, new):
        return f"--- {old_name}\n+++ {new_name}\n# {found}\n"
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    out: list[str] = []
    for group in _grouped(a, b, 3):
        out += [] if out else [f"--- {old_name}\n", f"+++ {new_name}\n"]
        out.append(f"@@ -{_range(group[0][1], group[-1][2])} +{_range(group[0][3], group[-1][4])} @@\n")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out += [" " + line for line in a[i1:i2]]
            else:
                out += ["-" + line for line in a[i1:i2]] + ["+" + line for line in b[j1:j2]]
    return "".join(line if line.endswith("\n") else line + "\n" for line in out)


def _range(start: int, stop: int) -> str:
    """A hunk's lines as a unified diff's header gives them (as difflib does)."""
    length = stop - start
    first = start + 1 if length else start
    return str(first) if length == 1 else f"{first},{length}"


def changed(lines: list[DiffLine | None]) -> bool:
    return any(line is not None and line.op != "same" for line in lines)
