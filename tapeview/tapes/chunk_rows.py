"""One packed chunk's entries as the index's readers see them: a `Row` each, and the `Match`
filters a question narrows them by, applied to a chunk's tally (without opening it) or to its
arrays."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import numpy as np

from .packing import ANCHOR, CONTEXT, ERROR, HAS_ID, NO_DATE, NO_ID, READABLE, Chunk, from_micros, micros


@dataclass(frozen=True, slots=True)
class Row:
    """One entry's place in its file (offset, length) and what the indexer saw of it."""

    pos: int
    offset: int
    length: int
    entry_id: int | None
    kind: str
    name: str
    date: datetime | None
    readable: bool
    is_error: bool
    context: bool


@dataclass(frozen=True)
class Match:
    """What a row must be; an empty Match matches every row. Fields left at their default ask nothing."""

    kinds: tuple[str, ...] = ()
    not_kinds: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    ids: tuple[int, ...] = ()  # the agent's entry ids
    name_prefix: str = ""
    name_contains: str = ""
    errors: bool | None = None
    readable: bool | None = None
    context: bool | None = None
    longer_than: int | None = None  # length in bytes
    at_most: int | None = None  # length in bytes
    has_id: bool | None = None
    anchored: bool | None = None  # an anchor of the tape, of any kind (packing.ANCHOR)
    min_id: int | None = None
    since: datetime | None = None  # dated at or after (undated rows never match)

    def by_words(self) -> bool:
        """Whether a chunk's tally alone answers this Match (no length, id or date in it)."""
        return (self.longer_than, self.at_most, self.min_id, self.since) == (None,) * 4 and not self.ids

    def allows(self, kind: str, name: str, flag: int) -> bool:
        """Whether entries of this kind, name and flags can be this Match (all of it, when by_words)."""
        if not self._kind_ok(kind):
            return False
        if not self._name_ok(name):
            return False
        return all(want is None or bool(flag & bit) == want for want, bit in self._flags())

    def mask(self, chunk: Chunk) -> np.ndarray:
        """Which of a chunk's entries are this Match."""
        c = chunk.columns
        kinds = [i for i, k in enumerate(chunk.kinds) if self._kind_ok(k)]
        keep = np.isin(c["kind"], kinds)
        if self.names or self.name_prefix or self.name_contains:
            keep &= np.isin(c["name"], [i for i, n in enumerate(chunk.names) if self._name_ok(n)])
        for want, bit in self._flags():
            if want is not None:
                keep &= ((c["flags"] & bit) != 0) == want
        if self.longer_than is not None:
            keep &= c["length"] > self.longer_than
        if self.at_most is not None:
            keep &= c["length"] <= self.at_most
        if self.ids:
            keep &= np.isin(c["entry_id"], list(self.ids))
        if self.min_id is not None:
            keep &= (c["entry_id"] >= self.min_id) & (c["entry_id"] != NO_ID)
        if self.since is not None:
            keep &= (c["date"] >= micros(self.since)) & (c["date"] != NO_DATE)
        return keep

    def _flags(self) -> tuple[tuple[bool | None, int], ...]:
        return (
            (self.errors, ERROR),
            (self.readable, READABLE),
            (self.context, CONTEXT),
            (self.has_id, HAS_ID),
            (self.anchored, ANCHOR),
        )

    def _kind_ok(self, kind: str) -> bool:
        return (not self.kinds or kind in self.kinds) and kind not in self.not_kinds

    def _name_ok(self, name: str) -> bool:
        return (
            (not self.names or name in self.names)
            and name.startswith(self.name_prefix)
            and self.name_contains in name
        )


def split_key(key: str) -> tuple[str, str, int]:
    kind, name, flag = key.split("\t")
    return kind, name, int(flag)


def rows_of(chunk: Chunk, picked: np.ndarray) -> list[Row]:
    if not len(picked):
        return []
    c, kinds, names = chunk.columns, chunk.kinds, chunk.names
    columns = zip(
        c["pos"][picked].tolist(),
        c["offset"][picked].tolist(),
        c["length"][picked].tolist(),
        c["entry_id"][picked].tolist(),
        c["date"][picked].tolist(),
        c["kind"][picked].tolist(),
        c["name"][picked].tolist(),
        c["flags"][picked].tolist(),
        strict=True,
    )
    return [
        Row(
            pos,
            offset,
            length,
            None if entry_id == NO_ID else entry_id,
            kinds[kind],
            names[name],
            from_micros(date),
            bool(flag & READABLE),
            bool(flag & ERROR),
            bool(flag & CONTEXT),
        )
        for pos, offset, length, entry_id, date, kind, name, flag in columns
    ]
