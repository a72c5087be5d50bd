"""yachiyo's long-term memory.json: listed as its API lists it, edited by its own addEntry rules.

Follows ../shared/formats/yachiyo.md (§A.2, §A.6, §A.7) and the gateway's LongTermMemoryStore. The
file is rewritten whole as `JSON.stringify(store, null, 2)` does (js_json.stringify), so rewriting an
unchanged document gives the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from uuid import uuid4

from tapeview.sources import yachiyo as yachiyo_source
from tapeview.sources.python_json import without_lone_surrogates

from . import locks, nesting
from .files import read_bytes, replace_if_unchanged
from .js_json import stringify
from .model import Snapshot, StaleEdit, StoreError, StoreRef, version_of

KIND = "yachiyo.memory"
STORE_FILE = "memory.json"
MAX_CONTENT_UNITS = 800  # LongTermMemoryStore's maxContentChars default, in UTF-16 code units
# What JS String.prototype.trim removes. Python's str.strip differs: it also strips \x1c-\x1f and
# \x85, and keeps the BOM.
JS_WHITESPACE = (
    "\t\n\v\f\r \xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + "\u2028\u2029\u202f\u205f\u3000\ufeff"
)


@dataclass(frozen=True)
class MemoryEntry:
    """One entry as the dashboard shows it (lone surrogates, which JS can leave, shown as U+FFFD)."""

    id: str
    content: str
    keywords: tuple[str, ...]
    created_at: str  # as stored: YYYY-MM-DDTHH:MM:SS.sssZ
    updated_at: str
    source_session_id: str | None  # the session whose memory_write made or last merged it
    source_trace_id: str | None  # the run (trace) of that write
    metadata: dict = field(default_factory=dict)  # free-form; the gateway writes step_index, call_id


def discover(root: Path) -> list[StoreRef]:
    """The global memory.json beside the session store (or in the long-term-memory dir given)."""
    folder = _memory_dir(root)
    if folder is None:
        return []
    path = folder / STORE_FILE
    note = "" if path.is_file() else "no memory.json yet: yachiyo creates it when its gateway starts"
    key = path.relative_to(root).as_posix() if path.is_relative_to(root) else path.name
    return [StoreRef(key, KIND, "Long-term memory", "yachiyo", path, note=note)]


def _memory_dir(root: Path) -> Path | None:
    if root.name == "long-term-memory" and root.is_dir():
        return root
    store = yachiyo_source._store(root)  # the session store: its sibling holds the memory
    candidates = [store.parent / "long-term-memory"] if store else []
    candidates += [root / "data" / "long-term-memory", root / "long-term-memory"]
    return next((d for d in candidates if d.is_dir()), None)


def read(ref: StoreRef) -> Snapshot:
    """Entries newest `updated_at` first (as GET /api/memory lists them); text in file order."""
    raw = read_bytes(ref.path)
    if raw is None:
        return Snapshot(version_of(None), "", [])
    entries = _raw_entries(_parse(raw, for_display=True))
    # listEntries: a stable sort on the updated_at strings, descending; ties keep file order.
    listed = sorted(entries, key=lambda e: _js_text(e.get("updated_at")), reverse=True)
    # The text keeps file order: an edit bumps updated_at, and a diff should not show it as a move.
    return Snapshot(version_of(raw), render(entries), [_entry(e) for e in listed])


def render(entries: Iterable[dict]) -> str:
    """One block per entry: its content, then a `keywords:` line; blocks apart by a blank line."""
    blocks = (
        f"{e.content}\nkeywords:{' ' if e.keywords else ''}{', '.join(e.keywords)}\n"
        for e in map(_entry, entries)
    )
    return "\n".join(blocks)


def blocks(ref: StoreRef) -> list[tuple[MemoryEntry, str]]:
    """Each entry in file order with its block of the store's text (the text is these, a blank line apart)."""
    raw = read_bytes(ref.path)
    entries = [] if raw is None else _raw_entries(_parse(raw, for_display=True))
    return [(_entry(e), render([e])) for e in entries]


def add_entry(
    ref: StoreRef,
    content: str,
    keywords: Iterable[object],
    expected_version: str,
    *,
    now: datetime,
    metadata: dict | None = None,
) -> tuple[MemoryEntry, str]:
    """memory_write's addEntry: a new entry at the end, or a merge into the one with the same content."""
    text, words = normalize_content(content), normalize_keywords(keywords)
    with locks.hold(ref.path):
        doc = _load_for_write(ref, expected_version)
        entry = _add(doc, text, words, js_iso(now), metadata)
        return _entry(entry), _write(ref, doc, expected_version)


def _add(doc: dict, text: str, words: list[str], stamp: str, metadata: dict | None) -> dict:
    """The entry addEntry makes, or merges into, in `doc` itself."""
    existing = _same_content(doc, text)
    if existing is not None:
        # The gateway's assignments in its order: a key the entry lacks is appended where JS appends it.
        old = existing.get("keywords")
        existing["keywords"] = _unique([*(old if isinstance(old, list) else []), *words])
        existing["updated_at"] = stamp
        existing["source_session_id"] = existing.get("source_session_id") or None
        existing["source_trace_id"] = existing.get("source_trace_id") or None
        old_meta = existing.get("metadata")
        existing["metadata"] = {**(old_meta if isinstance(old_meta, dict) else {}), **(metadata or {})}
        entry = existing
    else:
        entry = dict(id=f"mem-{uuid4()}", content=text, keywords=words, source_session_id=None)
        entry.update(source_trace_id=None, metadata=dict(metadata or {}), created_at=stamp, updated_at=stamp)
        doc["entries"].append(entry)
    doc["updated_at"] = stamp
    return entry


def edit_entry(
    ref: StoreRef,
    entry_id: str,
    content: str,
    keywords: Iterable[object],
    expected_version: str,
    *,
    now: datetime,
) -> tuple[MemoryEntry, str]:
    """Replace an entry's content and keywords (same rules as an add); it keeps its id and created_at."""
    text, words = normalize_content(content), normalize_keywords(keywords)
    with locks.hold(ref.path):
        doc = _load_for_write(ref, expected_version)
        target = _find(doc, entry_id)
        clash = _same_content(doc, text, besides=target)
        if clash is not None:
            raise StoreError(
                f"entry {clash.get('id')} already holds this content: yachiyo keeps one per content"
            )
        stamp = js_iso(now)
        target.update(content=text, keywords=words, updated_at=stamp)
        doc["updated_at"] = stamp
        return _entry(target), _write(ref, doc, expected_version)


def delete_entry(ref: StoreRef, entry_id: str, expected_version: str, *, now: datetime | None = None) -> str:
    with locks.hold(ref.path):
        doc = _load_for_write(ref, expected_version)
        found = _find(doc, entry_id)
        doc["entries"] = [e for e in doc["entries"] if e is not found]
        doc["updated_at"] = js_iso(now or datetime.now(UTC))
        return _write(ref, doc, expected_version)


def normalize_content(content: object) -> str:
    text = content.strip(JS_WHITESPACE) if isinstance(content, str) else ""
    if not text:
        raise StoreError("content must be a non-empty string")
    return clip_utf16(text, MAX_CONTENT_UNITS)


def clip_utf16(text: str, limit: int) -> str:
    """The first `limit` UTF-16 code units, as JS `slice(0, limit)` counts them.

    Unlike JS, a surrogate pair cut in two is dropped whole: the lone half JS keeps cannot be
    encoded as UTF-8, so the entry would be unreadable to every Python reader of the file.
    """
    units = text.encode("utf-16-le", "surrogatepass")
    if len(units) <= 2 * limit:
        return text
    cut = units[: 2 * limit]
    if 0xD800 <= int.from_bytes(cut[-2:], "little") <= 0xDBFF:
        cut = cut[:-2]
    return cut.decode("utf-16-le", "surrogatepass")


def normalize_keywords(keywords: Iterable[object]) -> list[str]:
    """Each string trimmed and lower-cased, empties and non-strings dropped, duplicates removed."""
    words = (k.strip(JS_WHITESPACE).lower() for k in keywords if isinstance(k, str))
    return _unique([w for w in words if w])


def js_iso(now: datetime) -> str:
    """`new Date().toISOString()`: UTC, milliseconds, `Z` (a naive datetime is taken as UTC)."""
    utc = now.astimezone(UTC) if now.tzinfo else now.replace(tzinfo=UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def _unique(items: list) -> list:
    # Order kept, like JS `Array.from(new Set(items))`; a hand-edited file may hold unhashable keywords.
    out: list = []
    for item in items:
        if item not in out:
            out.append(item)
    return out


def _js_text(value: object) -> str:
    # `String(x || '')` for the values the gateway writes (strings, null, missing).
    return value if isinstance(value, str) else ""


def _parse(raw: bytes, *, for_display: bool = False) -> dict:
    """The document; for display with lone surrogates made U+FFFD, for a rewrite kept as they are."""
    loads = yachiyo_source._loads if for_display else None
    try:
        doc = nesting.parse(raw, STORE_FILE, loads)
    except StoreError:
        raise  # too deep: already worded
    except ValueError as exc:  # UnicodeDecodeError is a ValueError too
        raise StoreError(f"memory.json is not valid JSON ({exc}): yachiyo cannot read it either") from exc
    if not isinstance(doc, dict):
        raise StoreError("memory.json is not a JSON object")
    return doc


def _raw_entries(doc: dict) -> list[dict]:
    entries = doc.get("entries")
    return [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []


def _entry(raw: dict) -> MemoryEntry:
    clean = without_lone_surrogates(raw)  # a lone surrogate JS left becomes U+FFFD for display
    keywords = clean.get("keywords")
    metadata = clean.get("metadata")
    return MemoryEntry(
        id=_js_text(clean.get("id")),
        content=_js_text(clean.get("content")),
        keywords=tuple(k for k in keywords if isinstance(k, str)) if isinstance(keywords, list) else (),
        created_at=_js_text(clean.get("created_at")),
        updated_at=_js_text(clean.get("updated_at")),
        source_session_id=clean.get("source_session_id") or None,
        source_trace_id=clean.get("source_trace_id") or None,
        metadata=dict(metadata) if isinstance(metadata, dict) else {},
    )


def _same_content(doc: dict, text: str, besides: dict | None = None) -> dict | None:
    """The entry yachiyo's dedupe matches: the same content lower-cased (nothing else normalised)."""
    key = text.lower()
    return next(
        (e for e in _raw_entries(doc) if e is not besides and _js_text(e.get("content")).lower() == key), None
    )


def _find(doc: dict, entry_id: str) -> dict:
    found = next((e for e in _raw_entries(doc) if e.get("id") == entry_id), None)
    if found is None:
        raise StoreError(f"no memory entry {entry_id!r}")
    return found


def _load_for_write(ref: StoreRef, expected_version: str) -> dict:
    """The document as it is now (lone surrogates kept), if it is still the version the editor saw."""
    raw = read_bytes(ref.path)
    if version_of(raw) != expected_version:
        raise _stale(raw)
    if raw is None:  # what the gateway writes when it finds no file
        return {"version": 1, "updated_at": "", "entries": []}
    doc = _parse(raw)
    # readStore's repairs, in its order: a missing key is added at the end, as JS adds it.
    if not isinstance(doc.get("entries"), list):
        doc["entries"] = []
    return doc


def _write(ref: StoreRef, doc: dict, expected_version: str) -> str:
    try:
        return replace_if_unchanged(ref.path, stringify(doc).encode("utf-8"), expected_version)
    except StaleEdit:
        raise _stale(read_bytes(ref.path)) from None


def _stale(raw: bytes | None) -> StaleEdit:
    """StaleEdit carrying the current canonical text, to diff against the Snapshot's text."""
    try:
        text = "" if raw is None else render(_raw_entries(_parse(raw, for_display=True)))
    except StoreError:
        text = (raw or b"").decode("utf-8", errors="replace")
    return StaleEdit(text, version_of(raw))
