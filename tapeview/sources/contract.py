"""The reader contract: what every source kind's module provides, so callers never probe with hasattr."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Protocol, runtime_checkable

from .model import ContextMessage, Entry, TapeFile


# A module satisfies this Protocol structurally: bub, nanobot, yachiyo and araliya each define
# every member at module level (tests/sources/test_contract.py checks names and signatures).
@runtime_checkable
class Reader(Protocol):
    """One source kind's reader. Tapes are read by byte span or whole; readers never raise on bad input."""

    KIND: str  # the kind's name in a source specification ("bub", "nanobot", ...)

    def detect(self, root: Path) -> bool:
        """Whether a folder holds this kind's files (used when a source names no kind)."""

    def discover(self, root: Path) -> list[TapeFile]:
        """Every file under a source root that reads as a tape, with its role, owner and notes."""

    def scan(self, path: Path, start: int = 0, first_pos: int = 1) -> Iterator[Entry]:
        """Entries from byte `start` on (kinds that rewrite files wholesale always read from 0)."""

    def read_entries(self, path: Path, spans: Iterable[tuple[int, int, int]]) -> list[Entry]:
        """The entries at known (pos, offset, length) places, as `scan` gave them."""

    def unfinished_tail(self, path: Path, offset: int, pos: int) -> Entry | None:
        """The bytes after the last complete entry shown as unreadable, or None when there are none."""

    def read_raw(self, path: Path, offset: int, length: int, chunk: int = 1 << 20) -> Iterator[bytes]:
        """The raw bytes of a byte span of the file, streamed in blocks of at most `chunk` bytes."""

    def session_label(self, tape_name: str, entry: Entry) -> str | None:
        """A human label for the tape that this entry reveals, or None."""

    def context_messages(self, entries: Iterable[Entry]) -> list[ContextMessage]:
        """The chat messages the agent would hand the model for these entries."""

    def tool_calls(self, entry: Entry) -> list[dict]:
        """The calls of a tool_call entry: `[{"id", "name", "arguments"}]`."""

    def tool_results(self, entry: Entry) -> list[dict]:
        """The results of a tool_result entry: `[{"call_id", "content", "is_error"}]`."""

    def pointer(self, metadata: dict | None, messages: int) -> int:
        """How many of a session's `messages` are archived, per its metadata record (0: none)."""
