"""A simulated Bub agent for the concurrency tests: real session lines, appended as Bub appends them."""

from __future__ import annotations

import json
import os
from itertools import cycle, islice
from pathlib import Path

from tapeview.sources.bub import parse_line
from tapeview.sources.bub_append import is_terminal

SESSION = Path(__file__).parent.parent / "fixtures" / "bub" / "session_realistic.jsonl"


def agent_lines(count: int, first_id: int = 1) -> list[str]:
    """`count` lines of a real session (repeated as needed), ids renumbered, each ending in `\\n`."""
    entries = [json.loads(line) for line in SESSION.read_text().splitlines()]
    lines = []
    for n, entry in enumerate(islice(cycle(entries), count)):
        # Bub's own encoding: default separators, raw UTF-8, keys in the order they were written.
        lines.append(json.dumps({**entry, "id": first_id + n}, ensure_ascii=False) + "\n")
    return lines


def append_line(path: Path, line: str) -> None:
    """One line, one write() on a fresh O_APPEND descriptor, as Bub's file store writes."""
    data = line.encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        assert os.write(fd, data) == len(data)
    finally:
        os.close(fd)


def ends_a_turn(line: str) -> bool:
    """After this line the agent writes nothing until its next turn: a guest may hand off."""
    return is_terminal(parse_line(line.encode().rstrip(b"\n"), 1, 0))
