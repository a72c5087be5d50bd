"""A run of a tape's entries packed as arrays: where each sits in the file and what it is.

The offset index keeps no database row per entry (at a few microseconds a row, the rows alone cost
more than parsing the file): it keeps chunks of up to `CHUNK` consecutive entries, each a handful
of arrays in one blob, the kinds and names its codes stand for, and a tally of its entries by
(kind, name, flags) that answers most counts and "is there any" without opening the arrays.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import orjson

CHUNK = 4096
NO_ID = np.iinfo(np.int64).min  # an entry without an id (an unreadable line)
NO_DATE = np.iinfo(np.int64).min  # an entry without a time
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MAX_NAME = 200

# Flag bits of an entry. ANCHOR: an anchor of the tape, as the Anchor table holds it (any family's:
# Bub's anchor lines, nanobot's summary checkpoints and archive pointer, which stay messages).
READABLE, ERROR, CONTEXT, HAS_ID, ANCHOR = 1, 2, 4, 8, 16

# The arrays of a chunk, in blob order: name, dtype.
LAYOUT = (
    ("pos", np.int32),
    ("offset", np.int64),
    ("length", np.int64),
    ("entry_id", np.int64),
    ("date", np.int64),  # microseconds since the epoch, UTC
    ("kind", np.uint16),  # a code into Chunk.kinds
    ("name", np.uint16),  # a code into Chunk.names
    ("flags", np.uint8),
)


def micros(value: datetime | None) -> int:
    """A date as microseconds since the epoch, NO_DATE for none."""
    if value is None:
        return NO_DATE
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    # The float is within 0.2 µs of the time for any date before 2200, so the rounding is exact.
    return round(value.timestamp() * 1_000_000)


def from_micros(value: int) -> datetime | None:
    return None if value == NO_DATE else EPOCH + timedelta(microseconds=int(value))


def flags(readable: bool, is_error: bool, context: bool, has_id: bool, anchor: bool = False) -> int:
    return (
        (READABLE if readable else 0)
        | (ERROR if is_error else 0)
        | (CONTEXT if context else 0)
        | (HAS_ID if has_id else 0)
        | (ANCHOR if anchor else 0)
    )


@dataclass
class Chunk:
    """Consecutive entries of one tape (positions ascending; a blank line's position has no entry)."""

    kinds: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    columns: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def count(self) -> int:
        return len(self.columns["pos"]) if self.columns else 0

    def tally(self) -> dict[str, int]:
        """Entries by kind, name and flags: "kind\\tname\\tflags" -> how many."""
        if not self.count:
            return {}
        c = self.columns
        keys = (c["kind"].astype(np.int64) << 24) | (c["name"].astype(np.int64) << 8) | c["flags"]
        found, counts = np.unique(keys, return_counts=True)
        return {
            f"{self.kinds[k >> 24]}\t{self.names[(k >> 8) & 0xFFFF]}\t{k & 0xFF}": int(n)
            for k, n in zip(found.tolist(), counts.tolist(), strict=True)
        }

    def vocab(self) -> str:
        return orjson.dumps({"kinds": self.kinds, "names": self.names}).decode()

    def blob(self) -> bytes:
        return b"".join(np.ascontiguousarray(self.columns[name], dtype).tobytes() for name, dtype in LAYOUT)

    def extended(self, batch: Batch) -> Chunk:
        """This chunk with a batch's entries after its own."""
        kinds, names = list(self.kinds), list(self.names)
        kind_at = {k: i for i, k in enumerate(kinds)}
        name_at = {n: i for i, n in enumerate(names)}
        new_kinds, new_names, new = batch.packed()
        # a long name is kept as its first MAX_NAME characters
        kind_codes = np.array([_code(kind_at, kinds, kind) for kind in new_kinds], dtype=np.uint16)
        name_codes = np.array([_code(name_at, names, name[:MAX_NAME]) for name in new_names], dtype=np.uint16)
        new["kind"], new["name"] = kind_codes[new["kind"]], name_codes[new["name"]]
        if self.count:
            new = {name: np.concatenate([self.columns[name], new[name]]) for name, _ in LAYOUT}
        return Chunk(kinds, names, new)

    def sliced(self, start: int, stop: int) -> Chunk:
        return Chunk(self.kinds, self.names, {k: v[start:stop] for k, v in self.columns.items()})


def decode(blob: bytes, vocab: str) -> Chunk:
    words = orjson.loads(vocab)
    n = len(blob) // sum(np.dtype(dtype).itemsize for _, dtype in LAYOUT)
    columns, at = {}, 0
    for name, dtype in LAYOUT:
        size = n * np.dtype(dtype).itemsize
        columns[name] = np.frombuffer(blob, dtype, n, at)
        at += size
    return Chunk(words["kinds"], words["names"], columns)


class Batch:
    """Entries gathered by the indexer before they go into chunks: a plain list per column (the
    Python lane appends to them directly), and the lines a compiled lane took meanwhile
    (tapes.blocklane), turned into arrays and codes once per batch."""

    def __init__(self) -> None:
        self.pos: list[int] = []
        self.offset: list[int] = []
        self.length: list[int] = []
        self.entry_id: list[int | None] = []
        self.date: list[int] = []  # micros()
        self.kind: list[str] = []
        self.name: list[str] = []
        self.flags: list[int] = []  # flags()
        self.lane: Any = None  # a tapes._lane.Lane: what it took since its last drain() is ours too

    def __len__(self) -> int:
        return len(self.pos) + (self.lane.pending if self.lane is not None else 0)

    def add(
        self,
        pos: int,
        offset: int,
        length: int,
        entry_id: int | None,
        kind: str,
        name: str,
        date: int,
        flag: int,
    ) -> None:
        """One entry; `date` in microseconds (micros()), `flag` from flags()."""
        self.pos.append(pos)
        self.offset.append(offset)
        self.length.append(length)
        self.entry_id.append(entry_id)
        self.date.append(date)
        self.kind.append(kind)
        self.name.append(name)
        self.flags.append(flag)

    def packed(self) -> tuple[list[str], list[str], dict[str, np.ndarray]]:
        """The batch's kinds and names, and its columns in position order, kind and name as codes
        into those two lists."""
        kinds, names = list(dict.fromkeys(self.kind)), list(dict.fromkeys(self.name))
        columns = {
            "pos": np.array(self.pos, dtype=np.int32),
            "offset": np.array(self.offset, dtype=np.int64),
            "length": np.array(self.length, dtype=np.int64),
            "entry_id": _ids(self.entry_id),
            "date": np.array(self.date, dtype=np.int64),
            "kind": _codes(self.kind, kinds),
            "name": _codes(self.name, names),
            "flags": np.array(self.flags, dtype=np.uint8),
        }
        if self.lane is None or not self.lane.pending:
            return kinds, names, columns
        drained = zip(LANE_COLUMNS, LANE_TYPES, self.lane.drain(), strict=True)
        taken = {name: np.frombuffer(column, dtype) for name, dtype, column in drained}
        kind_at, name_at = {k: i for i, k in enumerate(kinds)}, {n: i for i, n in enumerate(names)}
        # Only the kinds and names these entries have: a chunk's words are those of its entries.
        lane_kinds = np.zeros(len(LANE_KINDS), dtype=np.uint16)
        for code in _present(taken["kind"]):
            lane_kinds[code] = _code(kind_at, kinds, LANE_KINDS[code])
        lane_names, lane_words = np.zeros(len(self.lane.names), dtype=np.uint16), self.lane.names
        for code in _present(taken["name"]):
            lane_names[code] = _code(name_at, names, lane_words[code])
        taken["kind"], taken["name"] = lane_kinds[taken["kind"]], lane_names[taken["name"]]
        return kinds, names, _merged(columns, taken)


# The columns of tapes._lane.Lane.drain(), their types, and the kinds its codes stand for.
LANE_COLUMNS = ("pos", "offset", "length", "entry_id", "date", "kind", "name", "flags")
LANE_TYPES = (np.int32, np.int64, np.int64, np.int64, np.int64, np.uint8, np.uint16, np.uint8)
LANE_KINDS = ("message", "tool_call", "tool_result", "event", "system", "error")


def _merged(ours: dict[str, np.ndarray], lane: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Both lanes' columns in file order: each in file order already, ours go in between the lane's
    (in a third of the time of sorting them together)."""
    at = np.searchsorted(lane["pos"], ours["pos"]) + np.arange(len(ours["pos"]))
    theirs = np.ones(len(ours["pos"]) + len(lane["pos"]), dtype=bool)
    theirs[at] = False
    merged = {}
    for name, column in ours.items():
        merged[name] = np.empty(len(theirs), dtype=np.result_type(column, lane[name]))
        merged[name][at], merged[name][theirs] = column, lane[name]
    return merged


def _present(codes: np.ndarray) -> list[int]:
    """The codes found in `codes`, ascending (np.unique's, by counting: a tenth of its time)."""
    return np.flatnonzero(np.bincount(codes)).tolist()


def _code(at: dict[str, int], words: list[str], word: str) -> int:
    """`word`'s code in `words`, added at the end if it is new."""
    if word not in at:
        at[word] = len(words)
        words.append(word)
    return at[word]


def _codes(values: list[str], words: list[str]) -> np.ndarray:
    at = {w: i for i, w in enumerate(words)}
    return np.array([at[v] for v in values], dtype=np.uint16)


def _ids(ids: list[int | None]) -> np.ndarray:
    """The agent's ids as 64-bit integers; none (or one past 64 bits, a hand-edited file) is NO_ID."""
    try:
        return np.array(ids, dtype=np.int64)
    except (TypeError, OverflowError):
        return np.array([NO_ID if i is None or not NO_ID < i < 2**63 else i for i in ids], dtype=np.int64)
