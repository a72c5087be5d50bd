"""araliya-bot's `sessions/{id}/spend.json`: a session's token totals and cost, as araliya reports them.

Written by araliya after every model call (crates/araliya-memory `accumulate_spend`: read, add,
`fs::write`, so not atomic) as the pretty JSON of `SessionSpend`: `total_input_tokens`,
`total_output_tokens`, `total_cached_tokens` (u64), `total_cost_usd` (f64, priced by araliya at
its configured rates), `last_updated` (`YYYY-MM-DDTHH:MM:SSZ`). serde needs every field: a file
without one is one araliya cannot read either.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

from . import documents, paths
from .documents import DocumentUnreadable
from .python_json import is_count

NAME = "spend.json"
LIMIT = 64 * 1024  # the file holds five fields: anything bigger is no spend file
COUNTS = ("total_input_tokens", "total_output_tokens", "total_cached_tokens")


@dataclass(frozen=True, slots=True)
class Spend:
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    cost_usd: float
    updated: str

    @property
    def tokens(self) -> int:
        """The session's tokens as araliya's own API totals them (input + cached + output)."""
        return self.input_tokens + self.cached_tokens + self.output_tokens


def path_of(transcript: Path) -> Path:
    """The spend file of the session whose transcript this is."""
    return transcript.parent / NAME


def identity(root: Path, transcript: Path) -> str:
    """What tells one version of the session's spend file from another ("" when there is none to
    read: missing, or refused by the path policy)."""
    path = path_of(transcript)
    if paths.refusal(root, path):
        return ""
    try:
        st = os.stat(path)
    except OSError:
        return ""
    return f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"


def read(root: Path, transcript: Path) -> tuple[Spend | None, str]:
    """The session's spend, or None with why not ("" when there is simply no spend file)."""
    path = path_of(transcript)
    why = paths.refusal(root, path)
    if why:
        return None, f"spend.json is {why}"
    for attempt in range(2):
        try:
            doc = _parse(path)
            break
        except FileNotFoundError:
            return None, ""
        except DocumentUnreadable as exc:
            # araliya truncates, then writes: a torn read may be a write in flight, read again once.
            if not exc.torn or attempt:
                return None, f"spend.json is unreadable ({exc.problem})"
    spend = parse(doc)
    return (spend, "") if spend else (None, "spend.json is malformed: araliya cannot read it either")


def _parse(path: Path) -> object:
    """FileNotFoundError passes through; DocumentUnreadable says why the file cannot be read."""
    try:
        return documents.parse(documents.read_bytes(path, LIMIT))
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise DocumentUnreadable(exc.strerror or str(exc)) from None


def parse(doc: object) -> Spend | None:
    """A SessionSpend as serde reads it: every field present and of its type."""
    if not isinstance(doc, dict):
        return None
    counts = [doc.get(key) for key in COUNTS]
    cost, updated = doc.get("total_cost_usd"), doc.get("last_updated")
    if not all(is_count(c) for c in counts) or not isinstance(updated, str):
        return None
    if type(cost) not in (int, float) or not math.isfinite(cost) or cost < 0:
        return None
    return Spend(*counts, float(cost), updated)
