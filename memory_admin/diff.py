"""Line diffs with the changed parts of each changed line marked (plain Python)."""

from __future__ import annotations

import difflib
from dataclasses import dataclass


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


def line_diff(old: str, new: str, context: int | None = 3) -> list[DiffLine | None]:
    """The lines of `new` against `old`; None marks skipped unchanged lines (with `context`)."""
    a, b = old.splitlines(), new.splitlines()
    out: list[DiffLine | None] = []
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    groups = list(matcher.get_grouped_opcodes(context)) if context is not None else [matcher.get_opcodes()]
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
                    old_spans, new_spans = _within(a[i], b[j])
                    out += [DiffLine("del", i + 1, None, old_spans), DiffLine("add", None, j + 1, new_spans)]
            else:
                out += [DiffLine("del", i + 1, None, (Span(a[i], True),)) for i in range(i1, i2)]
                out += [DiffLine("add", None, j + 1, (Span(b[j], True),)) for j in range(j1, j2)]
    if groups and groups[-1] and (groups[-1][-1][2] < len(a) or groups[-1][-1][4] < len(b)):
        out.append(None)
    return out


def _within(old: str, new: str) -> tuple[tuple[Span, ...], tuple[Span, ...]]:
    """The parts of two versions of a line that differ, character by character."""
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    olds, news = [], []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if i2 > i1:
            olds.append(Span(old[i1:i2], tag != "equal"))
        if j2 > j1:
            news.append(Span(new[j1:j2], tag != "equal"))
    return tuple(olds), tuple(news)


def unified(old: str, new: str, old_name: str = "before", new_name: str = "after") -> str:
    """A unified diff as text, for the audit log and the API."""
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), old_name, new_name
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def changed(lines: list[DiffLine | None]) -> bool:
    return any(line is not None and line.op != "same" for line in lines)
