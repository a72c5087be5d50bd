"""nanobot's session files: where they are, which session key each holds, what each line is.

Follows ../shared/formats/nanobot.md §1, §2 and §5: 0.3.5 data directories
(`<data-dir>/sessions/<workspace-id>/<base64url(key)>.jsonl`) and the older layouts
(`<workspace>/sessions/`, global `~/.nanobot/sessions/`), lossy names included; one JSON record
per line (split on b"\\n" only: message text may hold U+2028), a metadata record, an optional
opaque provider_state record, then one record per message.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from .model import Entry, TapeFile, unreadable

WORKSPACE_ID = re.compile(r"^[0-9a-f]{32}$")
CHECKPOINT_SUFFIX = ".checkpoint.json"
CONFLICTS_DIR = ".migration-conflicts"
FIRST_LINE_LIMIT = 1 << 20
_WORKSPACE_MARKS = ("memory", "AGENTS.md", "SOUL.md", ".nanobot")
_NOT_LOADED = "nanobot 0.3.5 no longer loads it"
PREVIEW_BYTES = 600
RETRY_HINT = "\n\n[Analyze the error above and try a different approach.]"
_PROVIDER_STATE = re.compile(rb'^\s*\{\s*"_type"\s*:\s*"provider_state"\s*(?:,|\})')
# nanobot's own replay clean-up of assistant text (session/manager.py, _sanitize_assistant_replay_text).
_MESSAGE_TIME_PREFIX = re.compile(r"^\[Message Time: [^\]]+\]\n?")
_LOCAL_IMAGE_BREADCRUMB = re.compile(r"^\[image: (?:/|~)[^\]]+\]\s*$")
_TOOL_CALL_ECHO = re.compile(r"^\s*(?:generate_image|message)\([^)]*\)\s*$")


@dataclass(frozen=True, slots=True)
class _Found:
    """A session file before its label and note are settled."""

    key: str
    path: Path
    where: str  # namespace | lossy | misnamed | conflict | global | workspace
    session_key: str | None
    guessed: bool = False
    detail: str = ""  # a conflict's losing copy (destination | workspace); the key a misnamed file encodes


def detect(root: Path) -> bool:
    """A 0.3.5 data directory (config.json + sessions/) or an older workspace with sessions/ inside."""
    try:
        if not (root / "sessions").is_dir():
            return False
        return (root / "config.json").is_file() or any((root / m).exists() for m in _WORKSPACE_MARKS)
    except OSError:
        return False


def discover(root: Path) -> list[TapeFile]:
    """Every session file of a data directory or an old workspace, loaded by nanobot 0.3.5 or not."""
    if (root / "config.json").is_file():
        found = _data_dir_files(root)
    else:
        found = [_legacy_file(p, _rel(root, p), "workspace") for p in _jsonl(root / "sessions")]
    canonical = {(f.path.parent, f.session_key): f.key for f in found if f.where == "namespace"}
    return sorted((_tape(f, canonical) for f in found), key=lambda t: t.key)


def workspace_of(data_dir: Path) -> Path | None:
    """The workspace config.json names, or the `workspace/` folder beside it when that path is not here."""
    configured = None
    try:
        config = orjson.loads((data_dir / "config.json").read_bytes())
        configured = config["agents"]["defaults"]["workspace"]
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError):
        pass
    candidates = [Path(configured).expanduser()] if isinstance(configured, str) and configured else []
    candidates.append(data_dir / "workspace")
    existing = [c for c in candidates if c.is_dir()]
    namespaces = {p.name for p in _namespaces(data_dir)}
    # A config copied from another host may name this host's own ~/.nanobot/workspace: prefer the
    # workspace whose id matches a namespace of this data directory.
    for candidate in existing:
        if _workspace_id(candidate) in namespaces:
            return candidate
    return existing[0] if existing else None


def storage_key(key: str) -> str:
    return base64.urlsafe_b64encode(key.encode()).decode().rstrip("=")


def key_from_stem(stem: str) -> str | None:
    """The session key a 0.3+ file name encodes; None unless it re-encodes to the same stem."""
    try:
        key = base64.urlsafe_b64decode(stem + "=" * (-len(stem) % 4)).decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    return key if storage_key(key) == stem else None


def first_record_key(path: Path) -> str | None:
    """The `key` of the metadata record on the first line (written since v0.1.4.post1)."""
    try:
        with open(path, "rb") as f:
            record = orjson.loads(f.readline(FIRST_LINE_LIMIT))
    except (OSError, orjson.JSONDecodeError):
        return None
    if isinstance(record, dict) and record.get("_type") == "metadata":
        key = record.get("key")
        return key if isinstance(key, str) and key else None
    return None


def _data_dir_files(root: Path) -> list[_Found]:
    found = []
    for ns in _namespaces(root):
        for path in _jsonl(ns):
            stem_key, meta_key = key_from_stem(path.stem), first_record_key(path)
            if stem_key is not None and meta_key in (None, stem_key):
                found.append(_Found(_rel(root, path), path, "namespace", stem_key))
            elif stem_key is not None:
                found.append(_Found(_rel(root, path), path, "misnamed", meta_key, detail=stem_key))
            else:
                found.append(_legacy_file(path, _rel(root, path), "lossy", meta_key))
        for path in _jsonl(ns / CONFLICTS_DIR):
            # <original stem>.<destination|workspace>.<sha12>.<hex8>.jsonl
            parts = path.stem.rsplit(".", 3)
            stem, side = (parts[0], parts[1]) if len(parts) == 4 else (path.stem, "")
            found.append(_legacy_file(path, _rel(root, path), "conflict", stem=stem, detail=side))
    found += [_legacy_file(p, _rel(root, p), "global") for p in _jsonl(root / "sessions")]
    workspace = workspace_of(root)
    if workspace is not None:
        found += [_legacy_file(p, _rel(root, p), "workspace") for p in _jsonl(workspace / "sessions")]
    return found


def _legacy_file(
    path: Path, key: str, where: str, meta_key: str | None = None, stem: str = "", detail: str = ""
) -> _Found:
    stem = stem or path.stem
    session_key = meta_key or first_record_key(path) or key_from_stem(stem)
    if session_key is not None:
        return _Found(key, path, where, session_key, detail=detail)
    # Before v0.1.4.post1 the key was not written; nanobot itself guessed it like this.
    return _Found(key, path, where, stem.replace("_", ":", 1), guessed=True, detail=detail)


def _tape(f: _Found, canonical: dict) -> TapeFile:
    owner = None
    if f.where in ("lossy", "misnamed"):
        owner = canonical.get((f.path.parent, f.session_key))
    elif f.where == "conflict":
        owner = canonical.get((f.path.parent.parent, f.session_key))
    notes = [_where_note(f)]
    if f.guessed:
        notes.append("session key guessed from the file name")
    checkpoint = f.path.with_name(f.path.stem + CHECKPOINT_SUFFIX)
    if f.where == "namespace" and checkpoint.exists():
        notes.append(f"a turn is running or was interrupted ({checkpoint.name} is present)")
    return TapeFile(
        f.key,
        f.path,
        f.path.stem,
        "archive" if owner else "tape",
        owner,
        label=f.session_key,
        append_only=False,
        note="; ".join(n for n in notes if n),
    )


def _where_note(f: _Found) -> str:
    lossy = key_from_stem(f.path.stem) is None
    if f.where == "lossy":
        return f"legacy file name left by the upgrade: {_NOT_LOADED}"
    if f.where == "misnamed":
        return f"the file name encodes {f.detail!r} but the metadata says another key: {_NOT_LOADED}"
    if f.where == "conflict":
        side = f" (the older {f.detail} copy)" if f.detail else ""
        return f"kept by the 0.3.5 migration after a conflict{side}: nanobot does not load it"
    if f.where == "global":
        return f"global session of nanobot ≤ 0.1.3: {_NOT_LOADED}"
    if f.where == "workspace" and lossy:
        return (
            "old layout (sessions inside the workspace, lossy name): 0.3.5 moves it out, then never loads it"
        )
    if f.where == "workspace":
        return "old layout (sessions inside the workspace): nanobot 0.3.5 moves it out on start"
    return ""


def _namespaces(root: Path) -> list[Path]:
    try:
        return sorted(p for p in (root / "sessions").iterdir() if WORKSPACE_ID.match(p.name) and p.is_dir())
    except OSError:
        return []


def _jsonl(folder: Path) -> list[Path]:
    """Session files of a folder: not dot-files (temp files, locks, caches) nor checkpoint sidecars."""
    try:
        return sorted(
            p for p in folder.iterdir() if p.suffix == ".jsonl" and not p.name.startswith(".") and p.is_file()
        )
    except OSError:
        return []


def _workspace_id(workspace: Path) -> str | None:
    try:
        return (workspace / ".nanobot" / "workspace-id").read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None


def _rel(root: Path, path: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        # The configured workspace lives outside the data directory.
        return f"workspace/sessions/{path.name}"


# What each line holds


def parse_line(raw: bytes, pos: int, offset: int, index: int) -> Entry:
    """One record as nanobot's loader sees it, or an unreadable entry that says why."""
    try:
        record = _loads(raw)
    except UnicodeDecodeError:
        return _unreadable(raw, pos, offset, "invalid UTF-8 (nanobot cannot load this file at all)")
    except (ValueError, RecursionError):
        if not raw.endswith(b"\n"):
            return _unreadable(raw, pos, offset, "malformed JSON: the file ends mid-record (a cut write)")
        return _unreadable(raw, pos, offset, "malformed JSON")
    if not isinstance(record, dict):
        return _unreadable(raw, pos, offset, "not a record: the line is not a JSON object")
    if record.get("_type") == "metadata":
        return _metadata(record, raw, pos, offset)
    if record.get("_type") == "provider_state":
        return Entry(
            pos=pos,
            offset=offset,
            length=len(raw),
            id=None,
            kind="event",
            name="provider_state",
            payload={"_type": "provider_state", "data": _opaque(raw)},
            context=False,
        )
    return _message(record, raw, pos, offset, index)


def _loads(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        # nanobot reads with the standard json module, which also takes NaN, lone surrogates and
        # integers wider than 64 bits.
        return json.loads(raw.decode("utf-8"))


def _metadata(record: dict, raw: bytes, pos: int, offset: int) -> Entry:
    date, problem = _local_time(record.get("updated_at"))
    archived, consolidated = record.get("last_archived"), record.get("last_consolidated")
    if is_int(archived) and is_int(consolidated) and archived != consolidated:
        problem = problem or "last_archived and last_consolidated differ (nanobot uses last_archived)"
    meta = record.get("metadata") if isinstance(record.get("metadata"), dict) else {}
    usage = meta.get("_last_usage") if isinstance(meta.get("_last_usage"), dict) else {}
    key = record.get("key")
    return Entry(
        pos=pos,
        offset=offset,
        length=len(raw),
        id=None,
        kind="metadata",
        name=key if isinstance(key, str) else "",
        date=date,
        payload=record,
        problem=problem,
        prompt_tokens=_int_or_none(usage.get("input_tokens")),
        cached_tokens=_int_or_none(usage.get("cache_read_tokens")),
        context=False,
    )


def _message(record: dict, raw: bytes, pos: int, offset: int, index: int) -> Entry:
    role = record.get("role") if isinstance(record.get("role"), str) else ""
    content = record.get("content")
    date, problem = _local_time(record.get("timestamp"))
    is_error = False
    if role == "assistant" and record.get("tool_calls"):
        kind, name = "tool_call", ", ".join(c["name"] for c in tool_calls_of(record))
    elif role == "tool":
        kind, name = "tool_result", record.get("name") if isinstance(record.get("name"), str) else ""
        is_error = is_tool_error(content)
    else:
        kind, name = "message", role
    return Entry(
        pos=pos,
        offset=offset,
        length=len(raw),
        id=index,
        kind=kind,
        name=name,
        date=date,
        payload=record,
        meta={"flags": flags(record)},
        problem=problem,
        is_error=is_error,
        context=not record.get("_command") and not is_empty_assistant(record),
    )


def flags(record: dict) -> list[str]:
    """What a message row is besides a chat turn (formats/nanobot.md §2.3)."""
    marks = {
        "command": record.get("_command") is True,
        "channel_delivery": record.get("_channel_delivery") is True,
        "checkpoint": _is_marker(record.get("_hidden_history")),
        "automation": _is_marker(record.get("_automation_turn")) or record.get("_cron_turn") is True,
        "runtime_context": isinstance(record.get("_runtime_context"), dict),
        "media": bool(record.get("media")),
        "reasoning": bool(record.get("reasoning_content") or record.get("thinking_blocks")),
        "injected_event": bool(record.get("injected_event")),
        "persisted_output": str(record.get("content") or "").startswith("[tool output persisted]"),
        "legacy_tools_used": "tools_used" in record,
        "unknown_type": "_type" in record,
    }
    return [flag for flag, on in marks.items() if on]


def _is_marker(value: object) -> bool:
    return value is True or isinstance(value, dict)


def is_tool_error(content: object) -> bool:
    # nanobot marks a failed call only in the text: "Error…" plus a fixed retry hint.
    return isinstance(content, str) and (content.startswith("Error") or content.endswith(RETRY_HINT))


def is_empty_assistant(record: dict) -> bool:
    """An assistant row that `get_history` skips: blank text and nothing else to replay."""
    content = record.get("content", "")
    if record.get("role") != "assistant" or not isinstance(content, str):
        return False
    if any(key in record for key in ("tool_calls", "reasoning_content", "thinking_blocks")):
        return False
    return not replay_text(content).strip()


def _local_time(value: object) -> tuple[datetime | None, str]:
    """nanobot writes naive local times: read them as this host's local time."""
    if value is None:
        return None, ""
    if not isinstance(value, str):
        return None, "unreadable timestamp (not a string)"
    try:
        parsed = datetime.fromisoformat(value)
        return (parsed if parsed.tzinfo else parsed.astimezone()), ""
    except (ValueError, OverflowError, OSError):
        return None, f"unreadable timestamp {value[:40]!r}"


def _opaque(raw: bytes) -> str:
    return f"opaque provider state ({len(raw):,} bytes): nanobot keeps it private, not shown here"


def _unreadable(raw: bytes, pos: int, offset: int, problem: str) -> Entry:
    preview = _opaque(raw) if _PROVIDER_STATE.match(raw) else _preview(raw)
    return unreadable(pos, offset, len(raw), problem, preview, context=False)


def _preview(raw: bytes) -> str:
    text = raw[:PREVIEW_BYTES].decode("utf-8", errors="replace").rstrip("\n")
    return text + ("…" if len(raw) > PREVIEW_BYTES else "")


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _int_or_none(value: object) -> int | None:
    return value if is_int(value) else None


def replay_text(content: str) -> str:
    """Assistant text as replay sends it. nanobot does use splitlines() here (U+2028 breaks a line)."""
    content = _MESSAGE_TIME_PREFIX.sub("", content, count=1)
    lines = [
        line
        for line in content.splitlines()
        if not _LOCAL_IMAGE_BREADCRUMB.match(line) and not _TOOL_CALL_ECHO.match(line)
    ]
    return "\n".join(lines).strip()


def tool_calls_of(record: dict) -> list[dict]:
    """`[{"id", "name", "arguments"}]` of an assistant row, arguments as stored (a JSON string)."""
    calls = record.get("tool_calls")
    out = []
    for call in calls if isinstance(calls, list) else []:
        call = call if isinstance(call, dict) else {}
        fn = call.get("function") if isinstance(call.get("function"), dict) else {}
        name = fn.get("name") if isinstance(fn.get("name"), str) else ""
        out.append({"id": call.get("id"), "name": name or "?", "arguments": fn.get("arguments")})
    return out
