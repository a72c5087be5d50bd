"""araliya-bot's per-session kv.json: read in the agent's order, edited by its own kv_set/kv_delete rules.

Follows ../shared/formats/araliya.md (§B.3, §B.5, §B.7). Two layouts exist and neither reads the
other: `{"cap", "entries": [{"key", "value", "ts"}]}` (the seed's version, c70cf58) and
`{"cap", "order": [...], "values": {...}}` (from 447744f). Both are capped FIFO by position
against the `cap` stored in the file; only a set evicts. The file is rewritten as serde_json's
`to_string_pretty` writes it (2 spaces, raw non-ASCII, no trailing newline), so rewriting an
unchanged document gives the same bytes. transcript.md is never touched here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

from tapeview.sources import araliya as araliya_source
from tapeview.sources.python_json import LONE_SURROGATE

from . import locks, nesting
from .files import read_bytes, replace_if_unchanged
from .model import Snapshot, StaleEdit, StoreError, StoreRef, version_of

KIND = "araliya.kv"
KV_FILE = "kv.json"
WORKING_MEMORY = "working_memory"  # what working_memory_read() returns, shown first


class KvPair(NamedTuple):
    key: str
    value: str


@dataclass
class KvFile:
    """kv.json as araliya deserialises it: exactly one of `entries` or `order`+`values` is set."""

    cap: int
    entries: list[tuple[str, str, str]] | None = None  # (key, value, ts), the c70cf58 layout
    order: list[str] | None = None  # the 447744f layout: keys, oldest first
    values: dict[str, str] | None = None

    def pairs(self) -> list[KvPair]:
        """One pair per key, as kv_get reads it, in the agent's order; working_memory first."""
        if self.entries is not None:
            # kv_get returns the last match; kv_set leaves a key only at its last position.
            last = {key: (i, value) for i, (key, value, _) in enumerate(self.entries)}
            ordered = [KvPair(k, v) for k, (_, v) in sorted(last.items(), key=lambda item: item[1][0])]
        else:
            assert self.order is not None and self.values is not None
            positions = {key: i for i, key in enumerate(self.order) if key in self.values}
            keys = sorted(positions, key=positions.__getitem__)
            # A value missing from `order` is still read by kv_get (and never evicted): list it last.
            keys += [k for k in self.values if k not in positions]
            ordered = [KvPair(k, self.values[k]) for k in keys]
        return sorted(ordered, key=lambda pair: pair.key != WORKING_MEMORY)

    def set(self, key: str, value: str, ts: str) -> None:
        """kv_set: drop every entry of the key, append it, then evict from the front while over cap."""
        if self.entries is not None:
            self.entries = [e for e in self.entries if e[0] != key] + [(key, value, ts)]
            del self.entries[: max(0, len(self.entries) - self.cap)]
            return
        assert self.order is not None and self.values is not None
        self.order = [k for k in self.order if k != key] + [key]
        self.values[key] = value
        while len(self.order) > self.cap:
            self.values.pop(self.order.pop(0), None)

    def delete(self, key: str) -> bool:
        """kv_delete: whether anything was removed."""
        if self.entries is not None:
            kept = [e for e in self.entries if e[0] != key]
            removed, self.entries = len(kept) < len(self.entries), kept
            return removed
        assert self.order is not None and self.values is not None
        if key not in self.values:  # the newer code looks only at `values`
            return False
        del self.values[key]
        self.order = [k for k in self.order if k != key]
        return True

    def dump(self) -> bytes:
        if self.entries is not None:
            rows = [{"key": k, "value": v, "ts": ts} for k, v, ts in self.entries]
            doc: dict = {"cap": self.cap, "entries": rows}
        else:
            doc = {"cap": self.cap, "order": self.order, "values": self.values}
        return json.dumps(doc, ensure_ascii=False, indent=2).encode("utf-8")


def discover(root: Path) -> list[StoreRef]:
    """One store per session that has a kv.json, in the order tapeview lists araliya's sessions."""
    refs = []
    for tape in araliya_source.discover(root):
        path = tape.path.parent / KV_FILE
        if not path.is_file():
            continue
        owner = tape.label or tape.name  # "<session id> (<agent>)"
        refs.append(StoreRef(path.relative_to(root).as_posix(), KIND, KV_FILE, owner, path, note=_note(path)))
    return refs


def _note(path: Path) -> str:
    try:
        kv = parse(path.read_bytes())
    except (OSError, StoreError) as exc:
        return str(exc)
    if kv.entries is not None:
        return summary(kv)
    return f"{summary(kv)}; the order/values layout of araliya after v0.3.0"


def summary(kv: KvFile) -> str:
    """The keys kv_get can read, with the cap: worded as the session index words them."""
    return araliya_source.kv_summary(len(kv.pairs()), kv.cap)


def summary_of(ref: StoreRef) -> str:
    """`summary` of the file as it is now; "" when it is missing or cannot be read."""
    raw = read_bytes(ref.path)
    try:
        return "" if raw is None else summary(parse(raw))
    except StoreError:
        return ""


def read(ref: StoreRef) -> Snapshot:
    raw = read_bytes(ref.path)
    if raw is None:
        return Snapshot(version_of(None), "", [])
    try:
        kv = parse(raw)
    except StoreError:
        # araliya truncates then writes, with no lock: a bad parse may be a write in flight.
        raw = read_bytes(ref.path)
        if raw is None:
            return Snapshot(version_of(None), "", [])
        kv = parse(raw)
    pairs = kv.pairs()
    return Snapshot(version_of(raw), render(pairs), pairs)


def stamps(ref: StoreRef) -> dict[str, str]:
    """When kv_set last wrote each key (its `ts`), where the file's layout keeps it (c70cf58's does)."""
    raw = read_bytes(ref.path)
    kv = None if raw is None else parse(raw)
    return {key: ts for key, _, ts in kv.entries} if kv is not None and kv.entries is not None else {}


def render(pairs: list[KvPair]) -> str:
    """One `key: value` line per pair; a value's further lines are indented by two spaces."""
    lines = []
    for key, value in pairs:
        first, *rest = value.split("\n")
        lines += [f"{key}: {first}", *(f"  {line}" if line else "" for line in rest)]
    return "".join(line + "\n" for line in lines)


def set_value(
    ref: StoreRef, key: str, value: str, expected_version: str, *, now: datetime | None = None
) -> str:
    """kv_set, with its eviction: over the cap, the entry at the front of the file goes first."""
    _check("key", key, allow_empty=False)
    _check("value", value, allow_empty=True)
    with locks.hold(ref.path):
        kv = _load_for_write(ref, expected_version)
        kv.set(key, value, araliya_ts(now or datetime.now(UTC)))
        return _write(ref, kv, expected_version)


def delete_value(ref: StoreRef, key: str, expected_version: str) -> str:
    with locks.hold(ref.path):
        kv = _load_for_write(ref, expected_version)
        if not kv.delete(key):
            raise StoreError(f"no key {key!r} in this session's kv.json")
        return _write(ref, kv, expected_version)


def araliya_ts(now: datetime) -> str:
    """araliya's hand-rolled UTC stamp: seconds, no fraction, `Z` (a naive datetime is UTC)."""
    utc = now.astimezone(UTC) if now.tzinfo else now.replace(tzinfo=UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse(raw: bytes) -> KvFile:
    """kv.json as serde reads it; anything araliya would call "malformed" is a StoreError."""
    try:
        doc = nesting.parse(raw, KV_FILE)
    except StoreError:
        raise  # too deep: already worded
    except ValueError as exc:
        raise StoreError(f"kv.json is not valid JSON ({exc})") from exc
    if LONE_SURROGATE.search(raw) and _holds_lone_surrogate(doc):
        # serde_json refuses "\ud800" without its pair, so araliya cannot load this file either.
        raise StoreError("kv.json holds a lone surrogate escape: araliya itself cannot use this session")
    if not isinstance(doc, dict) or not _is_usize(doc.get("cap")):
        raise _malformed()
    cap = doc["cap"]
    if "entries" in doc:  # the layout the old code reads (it ignores other fields)
        rows = doc["entries"]
        if not isinstance(rows, list) or not all(_is_entry(r) for r in rows):
            raise _malformed()
        return KvFile(cap, entries=[(r["key"], r["value"], r["ts"]) for r in rows])
    order, values = doc.get("order"), doc.get("values")
    if not (isinstance(order, list) and all(isinstance(k, str) for k in order)):
        raise _malformed()
    if not (isinstance(values, dict) and all(isinstance(v, str) for v in values.values())):
        raise _malformed()
    return KvFile(cap, order=order, values=values)


def _holds_lone_surrogate(doc: object) -> bool:
    try:
        json.dumps(doc, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _malformed() -> StoreError:
    return StoreError("kv.json is malformed: araliya itself cannot use this session")


def _is_usize(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**64


def _is_entry(row: object) -> bool:
    return isinstance(row, dict) and all(isinstance(row.get(f), str) for f in ("key", "value", "ts"))


def _check(name: str, text: object, *, allow_empty: bool) -> None:
    # Values are always strings (JSON goes in as an escaped string); a lone surrogate has no UTF-8.
    if not isinstance(text, str):
        raise StoreError(f"the {name} must be a string")
    if not text and not allow_empty:
        raise StoreError(f"the {name} must not be empty")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise StoreError(f"the {name} is not valid Unicode text") from exc


def _load_for_write(ref: StoreRef, expected_version: str) -> KvFile:
    raw = read_bytes(ref.path)
    if version_of(raw) != expected_version:
        raise _stale(raw)
    if raw is None:
        raise StoreError("this session has no kv.json: araliya cannot set values in it either")
    return parse(raw)


def _write(ref: StoreRef, kv: KvFile, expected_version: str) -> str:
    try:
        data = kv.dump()
    except UnicodeEncodeError:
        raise StoreError(
            "kv.json holds a lone surrogate, which araliya cannot read: nothing was written"
        ) from None
    try:
        return replace_if_unchanged(ref.path, data, expected_version)
    except StaleEdit:
        raise _stale(read_bytes(ref.path)) from None


def _stale(raw: bytes | None) -> StaleEdit:
    """StaleEdit carrying the current canonical text, to diff against the Snapshot's text."""
    try:
        text = "" if raw is None else render(parse(raw).pairs())
    except StoreError:
        text = (raw or b"").decode("utf-8", errors="replace")
    return StaleEdit(text, version_of(raw))
