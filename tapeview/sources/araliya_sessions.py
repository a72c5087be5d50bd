"""araliya-bot's session list: `sessions.json` of each memory dir, and the session folders it names.

Follows ../shared/formats/araliya.md (§B.2, §B.4). araliya joins a session id into a path without
checking it (its ids are UUIDv7s): an id that is no plain folder name is refused (the Sources page
says so), never listed as a session nor joined into a path.
"""

from __future__ import annotations

import re
from pathlib import Path

from . import araliya_spend, documents
from .documents import DocumentUnreadable
from .model import TapeFile
from .paths import quoted

_NOT_IN_A_NAME = re.compile(r"[/\\\x00-\x1f\x7f]")  # a path's separators, control characters
NAME_MAX = 255  # bytes of a folder name on the file systems an agent runs on
UNSAFE_ID = "a session id that is not a safe name: not read"


def _memory_dirs(root: Path) -> list[Path]:
    """The memory dirs under a source root: itself, an identity dir's, or each identity dir's."""
    if (root / "sessions.json").is_file() or (root / "sessions").is_dir() and root.name == "memory":
        return [root]
    if (root / "memory" / "sessions.json").is_file():
        return [root / "memory"]
    try:
        children = sorted(p for p in root.iterdir() if p.is_dir())
    except OSError:
        return []
    return [p / "memory" for p in children if (p / "memory" / "sessions.json").is_file()]


def detect(root: Path) -> bool:
    return bool(_memory_dirs(root))


def discover(root: Path) -> list[TapeFile]:
    """Every session of each sessions.json (oldest first), then session dirs it does not list."""
    found = []
    for memory in _memory_dirs(root):
        sessions, problem = _read_sessions(memory / "sessions.json")
        listed = sorted(sessions.items(), key=lambda kv: (_scalar(_field(kv[1], "created_at")), kv[0]))
        for sid, info in listed:
            found.append(_tape(root, memory, sid, info, problem))
        # An entry that is not an object is refused, not read: its folder is still shown, as not listed.
        named = {sid for sid, info in sessions.items() if isinstance(info, dict)}
        try:
            extra = sorted(
                p.name for p in (memory / "sessions").iterdir() if p.is_dir() and p.name not in named
            )
        except OSError:
            extra = []
        for sid in extra:
            found.append(_tape(root, memory, sid, {}, problem or "not listed in sessions.json"))
    return found


def _field(info: object, key: str) -> object:
    return info.get(key) if isinstance(info, dict) else None


def _scalar(value: object) -> str:
    # Not str() of a list or object: one nested 1,000 deep would overflow repr's recursion.
    return f"<{type(value).__name__}>" if isinstance(value, (list, dict)) else str(value)


def _tape(root: Path, memory: Path, sid: str, info: object, note: str) -> TapeFile:
    why = refused_id(sid, info)
    if why:  # araliya would join it into a path as it is: named on the Sources page, never joined
        index = memory / "sessions.json"
        return TapeFile(index.relative_to(root).as_posix(), index, sid, refused=why)
    folder = memory / "sessions" / sid
    path = folder / "transcript.md"
    notes = [note] if note else []
    if not folder.is_dir():
        notes.append("its session folder is gone")
    elif not path.is_file():
        notes.append("no transcript.md yet")
    notes.append(_kv_note(folder / "kv.json"))
    notes.append(araliya_spend.read(root, path)[1])
    agent = _field(info, "last_agent")
    label = f"{sid} ({agent if isinstance(agent, str) else 'no agent'})"
    return TapeFile(
        path.relative_to(root).as_posix(),
        path,
        sid,
        label=label,
        append_only=False,
        note="; ".join(n for n in notes if n),
    )


def refused_id(sid: str, info: object) -> str:
    """Why a session of sessions.json is not read ("" when it is): an id that is no plain folder name
    (a path, "..", a control character, more than a name's 255 bytes), or a session that is not an
    object."""
    shown = quoted(sid)
    too_long = len(sid.encode("utf-8", "surrogatepass")) > NAME_MAX
    if sid in ("", ".", "..") or _NOT_IN_A_NAME.search(sid) or too_long:
        return f"session {shown}: {UNSAFE_ID}"
    if not isinstance(info, dict):
        return f"session {shown}: its entry is not an object: not read"
    return ""


def _read_json(path: Path) -> object:
    """A JSON file as araliya's serde_json reads it: strictly (no lone surrogates, no NaN). A
    FileNotFoundError passes through; DocumentUnreadable says why the file cannot be read."""
    try:
        return _parse_file(path)
    except DocumentUnreadable as exc:
        if not exc.torn:
            raise
    # araliya writes with a plain truncate-then-write: a torn read may be a write in flight.
    return _parse_file(path)


def _parse_file(path: Path) -> object:
    try:
        return documents.parse(documents.read_bytes(path))
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise DocumentUnreadable(exc.strerror or str(exc)) from None


def _read_sessions(path: Path) -> tuple[dict, str]:
    try:
        doc = _read_json(path)
    except FileNotFoundError:
        return {}, "no sessions.json"
    except DocumentUnreadable as exc:
        return {}, f"sessions.json is unreadable ({exc.problem})"
    sessions = doc.get("sessions") if isinstance(doc, dict) else None
    return (sessions, "") if isinstance(sessions, dict) else ({}, "sessions.json is unreadable")


def _kv_note(path: Path) -> str:
    try:
        kv = _read_json(path)
    except FileNotFoundError:
        return ""
    except DocumentUnreadable as exc:
        return f"kv.json is unreadable ({exc.problem})"
    entries, values = (kv.get("entries"), kv.get("values")) if isinstance(kv, dict) else (None, None)
    # serde_json wants string keys: anything else is no key araliya could hold.
    if isinstance(entries, list):
        keys = len({e.get("key") for e in entries if isinstance(e, dict) and isinstance(e.get("key"), str)})
    elif isinstance(values, dict):  # the layout of araliya after 447744f (§B.7): kv_get reads `values`
        keys = len(values)
    else:
        return "kv.json is malformed" if isinstance(kv, dict) else "kv.json is unreadable"
    return f"kv: {kv_summary(keys, kv.get('cap'))}"


def kv_summary(keys: int, cap: object) -> str:
    """How a kv.json is counted wherever Tapeview shows one: "3 keys (cap 200)"."""
    return f"{keys} key{'s' * (keys != 1)} (cap {cap if isinstance(cap, int) else '?'})"
