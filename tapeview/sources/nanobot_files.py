"""nanobot's session files: where they are and which session key each holds.

Follows ../shared/formats/nanobot.md §1 and §5: 0.3.5 data directories
(`<data-dir>/sessions/<workspace-id>/<base64url(key)>.jsonl`) and the older layouts
(`<workspace>/sessions/`, global `~/.nanobot/sessions/`), lossy names included.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass, replace
from pathlib import Path

import orjson

from . import nanobot_config
from .model import TapeFile
from .nanobot_config import ModelConfig

WORKSPACE_ID = re.compile(r"^[0-9a-f]{32}$")
CHECKPOINT_SUFFIX = ".checkpoint.json"
CONFLICTS_DIR = ".migration-conflicts"
FIRST_LINE_LIMIT = 1 << 20
_WORKSPACE_MARKS = ("memory", "AGENTS.md", "SOUL.md", ".nanobot")
_NOT_LOADED = "nanobot 0.3.5 no longer loads it"


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
    config = ModelConfig()
    if (root / "config.json").is_file():
        found = _data_dir_files(root)
        config = nanobot_config.read(root)
    else:
        found = [_legacy_file(p, _rel(root, p), "workspace") for p in _jsonl(root / "sessions")]
    canonical = {(f.path.parent, f.session_key): f.key for f in found if f.where == "namespace"}
    tapes = (replace(_tape(f, canonical), model=config.model, window=config.window) for f in found)
    return sorted(tapes, key=lambda t: t.key)


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
