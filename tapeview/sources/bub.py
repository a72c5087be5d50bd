"""Bub tapes: discover the files of a tapes directory, read entries tolerantly, build context.

Follows ../shared/formats/bub.md: one JSONL line per entry, only newline-terminated lines
are entries, file order is the truth, anchors cut the model's context.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO
from urllib.parse import unquote

import orjson

from .model import ContextMessage, Entry, TapeFile, TapeNotFound, unreadable

KIND = "bub"
PREVIEW_BYTES = 600
# Entries bigger than this are not parsed for display; their first bytes are shown instead.
DISPLAY_PARSE_LIMIT = 2 * 1024 * 1024
DISPLAY_PREVIEW_BYTES = 64 * 1024
NON_PHASE_PREFIXES = ("memory/", "spill/")
GLUE_MARK = b'{"id": '
_ARCHIVE = re.compile(r"^(?P<base>.+)\.jsonl\.(?P<stamp>\d{8}T\d{6}Z)\.bak$")
_CHANNEL = re.compile(r"sender_id=[^|\n\\]*\|channel=\$?([^|\n\\]+)\|chat_id=([^\s|\\]+)")
_FIXED_SESSIONS = ("cli:local", "cli_session")


def discover(root: Path) -> list[TapeFile]:
    """Every tape-like file directly in a Bub tapes directory (subdirectories are not tapes)."""
    found = []
    try:
        names = sorted(p.name for p in root.iterdir() if p.is_file())
    except OSError:
        return []
    for fname in names:
        path = root / fname
        archive = _ARCHIVE.match(fname)
        if archive:
            base = archive["base"]
            owner = base.split("__sidecar__")[0]
            found.append(TapeFile(fname, path, fname, "archive", owner + ".jsonl"))
        elif fname.endswith(".jsonl"):
            stem = fname[: -len(".jsonl")]
            if "__sidecar__" in stem:
                owner = stem.split("__sidecar__")[0] + ".jsonl"
                found.append(TapeFile(fname, path, stem, "sidecar", owner))
            elif stem.count("__") > 1:
                # A legacy 0.2.x fork copy left behind by a crash: <ws>__<tape>__<uuid8>.
                owner = stem.rsplit("__", 1)[0] + ".jsonl"
                found.append(TapeFile(fname, path, stem, "fork", owner, note="fork copy left by a crash"))
            else:
                note = "" if "__" in stem else "Bub itself does not list this file (no __ in its name)"
                found.append(TapeFile(fname, path, stem, "tape", note=note))
    keys = {t.key for t in found}
    # An attachment whose owner is gone is shown as a tape of its own.
    return [t if t.owner is None or t.owner in keys else _orphan(t) for t in found]


def _orphan(tape: TapeFile) -> TapeFile:
    return TapeFile(
        tape.key, tape.path, tape.name, tape.role, None, note=f"{tape.role} of a tape that is gone"
    )


def scan(path: Path, start: int = 0, first_pos: int = 1) -> Iterator[Entry]:
    """Entries of complete lines from byte `start` on; an unfinished last line is left alone."""
    with _open(path) as f:
        f.seek(start)
        offset, pos = start, first_pos
        for raw in f:
            if not raw.endswith(b"\n"):
                return
            if raw.strip():
                yield parse_line(raw, pos, offset)
            offset += len(raw)
            pos += 1


def unfinished_tail(path: Path, offset: int, pos: int) -> Entry | None:
    """The bytes after the last complete line, shown as unreadable: a write in flight or a crash."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            rest = f.read(PREVIEW_BYTES + 1)
            size = f.seek(0, 2)
    except OSError:
        return None
    if not rest:
        return None
    problem = "unfinished last line (being written, or cut by a crash)"
    return unreadable(pos, offset, size - offset, problem, _preview(rest))


def read_entries(path: Path, spans: Iterable[tuple[int, int, int]]) -> list[Entry]:
    """Entries at known (pos, offset, length) places, reading only those bytes."""
    spans = sorted(spans, key=lambda s: s[1])
    if not spans:
        return []
    out = []
    with _open(path) as f:
        for pos, offset, length in spans:
            f.seek(offset)
            if length > DISPLAY_PARSE_LIMIT:
                out.append(_too_big(f.read(DISPLAY_PREVIEW_BYTES), pos, offset, length))
            else:
                out.append(parse_line(f.read(length), pos, offset))
    return out


def read_raw(path: Path, offset: int, length: int, chunk: int = 1 << 20) -> Iterator[bytes]:
    """The raw bytes of one entry, streamed."""
    with _open(path) as f:
        f.seek(offset)
        while length > 0:
            block = f.read(min(chunk, length))
            if not block:
                return
            length -= len(block)
            yield block


def _open(path: Path) -> BinaryIO:
    try:
        return open(path, "rb")  # noqa: SIM115 - the callers' `with` closes it
    except FileNotFoundError as exc:
        raise TapeNotFound(str(path)) from exc


def parse_line(raw: bytes, pos: int, offset: int) -> Entry:
    """One line as the agent's reader sees it, or an unreadable entry that says why."""
    length = len(raw)
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        return _unreadable(raw, pos, offset, _why_malformed(raw, exc))
    if not isinstance(obj, dict):
        return _unreadable(raw, pos, offset, "not an entry: the line is not a JSON object")
    eid, kind, payload = obj.get("id"), obj.get("kind"), obj.get("payload")
    if not isinstance(eid, int) or isinstance(eid, bool):
        return _unreadable(raw, pos, offset, "not an entry: id is not an integer")
    if not isinstance(kind, str):
        return _unreadable(raw, pos, offset, "not an entry: kind is not a string")
    if not isinstance(payload, dict):
        return _unreadable(raw, pos, offset, "not an entry: payload is not an object")
    meta = obj.get("meta")
    meta = meta if isinstance(meta, dict) else {}
    date, problem = _entry_date(obj)
    name, is_error, phase = "", kind == "error", False
    tokens, prompt_tokens, cached_tokens = 0, None, None
    if kind in ("anchor", "event"):
        name = payload.get("name") if isinstance(payload.get("name"), str) else ""
    if kind == "anchor":
        phase = not name.startswith(NON_PHASE_PREFIXES)
    elif kind == "message":
        role = payload.get("role")
        name = role if isinstance(role, str) else ""
    elif kind == "tool_result":
        results = payload.get("results")
        is_error = isinstance(results, list) and any(is_tool_error(r) for r in results)
    elif kind == "event":
        data = payload.get("data") if isinstance(payload.get("data"), dict) else {}
        is_error = (
            data.get("status") == "error"
            or name.endswith(".error")
            or bool(name == "loop.result" and data.get("error"))
        )
        usage = data.get("usage") if name == "run" else None
        if isinstance(usage, dict):
            tokens = _int(usage.get("total_tokens"))
            prompt_tokens = _int(usage.get("prompt_tokens"))
            details = usage.get("prompt_tokens_details")
            cached_tokens = _int(details.get("cached_tokens")) if isinstance(details, dict) else 0
    return Entry(
        pos=pos,
        offset=offset,
        length=length,
        id=eid,
        kind=kind,
        name=name,
        date=date,
        payload=payload,
        meta=meta,
        problem=problem,
        is_error=is_error,
        tokens=tokens,
        prompt_tokens=prompt_tokens,
        cached_tokens=cached_tokens,
        context=meta.get("context") is not False,
        phase=phase,
    )


def is_tool_error(result: object) -> bool:
    return isinstance(result, dict) and "message" in result and "kind" in result


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _entry_date(obj: dict) -> tuple[datetime | None, str]:
    date, stamp = obj.get("date"), obj.get("timestamp")
    if isinstance(date, str):
        try:
            parsed = datetime.fromisoformat(date)
        except ValueError:
            return None, f"unreadable date {date[:40]!r}"
        return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)), ""
    if isinstance(stamp, (int, float)) and not isinstance(stamp, bool):
        try:
            return datetime.fromtimestamp(stamp, UTC), ""
        except (OverflowError, OSError, ValueError):
            return None, "unreadable timestamp"
    return None, ""


def _why_malformed(raw: bytes, exc: Exception) -> str:
    if "utf-8" in str(exc).lower():
        return "invalid UTF-8"
    if raw.find(GLUE_MARK, 1) > 0:
        return "glued line: an unfinished write was followed by another entry"
    return "malformed JSON"


def salvage(raw_preview: str) -> str:
    """The entry glued onto crash residue, as the formats doc suggests recovering it."""
    at = raw_preview.rfind('{"id": ')
    return raw_preview[at:] if at > 0 else ""


def _unreadable(raw: bytes, pos: int, offset: int, problem: str) -> Entry:
    return unreadable(pos, offset, len(raw), problem, _preview(raw))


def _too_big(head: bytes, pos: int, offset: int, length: int) -> Entry:
    return Entry(
        pos=pos,
        offset=offset,
        length=length,
        id=None,
        kind="",
        truncated=True,
        preview=_preview(head, limit=DISPLAY_PREVIEW_BYTES),
    )


def _preview(raw: bytes, limit: int = PREVIEW_BYTES) -> str:
    text = raw[:limit].decode("utf-8", errors="replace").rstrip("\n")
    return text + ("…" if len(raw) > limit else "")


def session_label(tape_name: str, entry: Entry) -> str | None:
    """The session id behind a tape name, when an entry names a channel whose hash matches."""
    wanted = tape_name.rsplit("__", 1)[-1]
    wanted = unquote(wanted).rsplit(":", 1)[-1][:16]
    if len(wanted) != 16:
        return None
    candidates = list(_FIXED_SESSIONS)
    if entry.kind in ("message", "event") and isinstance(entry.payload, dict):
        text = orjson.dumps(entry.payload).decode()[:4000]
        candidates += [f"{ch}:{chat}" for ch, chat in _CHANNEL.findall(text)]
    for session in candidates:
        if hashlib.md5(session.encode()).hexdigest()[:16] == wanted:
            return session
    return None


def context_messages(entries: Iterable[Entry]) -> list[ContextMessage]:
    """Bub's context selector (formats/bub.md §2.3) over the entries after an anchor."""
    messages: list[ContextMessage] = []
    pending: list = []
    for e in entries:
        if not e.readable or not e.context:
            continue
        p = e.payload
        if e.kind == "message":
            messages.append(ContextMessage(p.get("role", ""), p.get("content"), e.pos))
        elif e.kind == "tool_call":
            pending = p.get("calls") if isinstance(p.get("calls"), list) else []
            messages.append(ContextMessage("assistant", p.get("content") or "", e.pos, tool_calls=pending))
        elif e.kind == "tool_result":
            results = p.get("results") if isinstance(p.get("results"), list) else []
            for i, result in enumerate(results):
                call = pending[i] if i < len(pending) and isinstance(pending[i], dict) else {}
                fn = call.get("function") if isinstance(call.get("function"), dict) else {}
                content = result if isinstance(result, str) else orjson.dumps(result).decode()
                messages.append(
                    ContextMessage("tool", content, e.pos, tool_call_id=call.get("id"), name=fn.get("name"))
                )
        elif e.kind == "anchor":
            state = orjson.dumps(p.get("state") or {}).decode()
            messages.append(ContextMessage("assistant", f"[Anchor created: {e.name}]: {state}", e.pos))
    return messages


def session_tape_name(workspace: str, session_id: str) -> str:
    """The file stem Bub 0.5.1 gives the tape of a session in a workspace."""
    ws = hashlib.md5(workspace.encode()).hexdigest()[:16]
    return f"{ws}__{hashlib.md5(session_id.encode()).hexdigest()[:16]}"


def detect(root: Path) -> bool:
    """A Bub tapes directory holds *.jsonl tapes whose names have a `__`."""
    try:
        return any(p.suffix == ".jsonl" and "__" in p.name for p in root.iterdir())
    except OSError:
        return False


def tool_calls(entry: Entry) -> list[dict]:
    calls = entry.payload.get("calls") if isinstance(entry.payload, dict) else None
    out = []
    for call in calls if isinstance(calls, list) else []:
        call = call if isinstance(call, dict) else {}
        fn = call.get("function") if isinstance(call.get("function"), dict) else {}
        out.append({"id": call.get("id"), "name": fn.get("name") or "?", "arguments": fn.get("arguments")})
    return out


def tool_results(entry: Entry) -> list[dict]:
    """Results in call order: Bub pairs them with the preceding tool_call by position."""
    results = entry.payload.get("results") if isinstance(entry.payload, dict) else None
    return [
        {"call_id": None, "content": r, "is_error": is_tool_error(r)}
        for r in (results if isinstance(results, list) else [])
    ]
