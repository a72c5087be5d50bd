"""bub-acp-server's `$BUB_HOME/acp-sessions.json`: the title and working folder of each session it drives.

bub-contrib `packages/bub-acp-server` (`agent.py`): a JSON list, `json.dumps(indent=2,
sort_keys=True)` written to a temp file and renamed, of `{"session_id", "cwd",
"additional_directories", "runtime", "title", "updated_at"}`; an item without a `session_id` or
`cwd` string is skipped, as the server's `ACPSession.from_json` skips it. Its tapes are Bub's own
(formats/bub.md §1): `md5(cwd)[:16] + "__" + md5("<channel>:<session_id>")[:16]`, with the
server's default channel `acp-server` (the cwd it keeps is already resolved).

The file sits in `$BUB_HOME`, the parent of the tapes folder a source reads: it is read there (or in
the source's folder itself) only where the path policy lets it, never through a link out of the
folder. A missing, refused or unreadable file names nothing, so the tapes keep their labels.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from pathlib import Path

from . import documents, paths, python_json
from .documents import DocumentUnreadable
from .model import TapeFile

NAME = "acp-sessions.json"
CHANNEL = "acp-server"  # ACPServerSettings.channel_name's default
LIMIT = 16 * 1024 * 1024
TITLE_LENGTH = 300  # characters of a title kept as a label
FOLDER_LENGTH = 1000  # Tape.workdir's max_length


@dataclass(frozen=True, slots=True)
class AcpSession:
    session_id: str
    cwd: str
    title: str | None
    updated_at: str


def tape_name(session_id: str, cwd: str, channel: str = CHANNEL) -> str:
    """The name of the tape the server drives for this session (its `_session_tape_name`)."""
    workspace = hashlib.md5(cwd.encode("utf-8"), usedforsecurity=False).hexdigest()[:16]
    session = hashlib.md5(f"{channel}:{session_id}".encode(), usedforsecurity=False).hexdigest()[:16]
    return f"{workspace}__{session}"


def sessions(root: Path) -> dict[str, AcpSession]:
    """The sessions of the acp-sessions.json beside a Bub tapes folder, by their tape's name."""
    for folder in (root, root.parent):
        path = folder / NAME
        if paths.refusal(folder, path) is None and path.is_file():
            return _read(path)
    return {}


def labelled(root: Path, found: list[TapeFile]) -> list[TapeFile]:
    """The tapes of a Bub tapes folder, each the server drives with its title and working folder."""
    known = sessions(root)
    if not known:
        return found
    out = []
    for tape in found:
        session = known.get(tape.name) if tape.role == "tape" else None
        if session is not None:
            tape = replace(tape, label=session.title or tape.label, workdir=session.cwd)
        out.append(tape)
    return out


def _read(path: Path) -> dict[str, AcpSession]:
    try:
        raw = documents.read_bytes(path, LIMIT)
        items = documents.parse(raw, lone_surrogates=True)
    except (OSError, DocumentUnreadable):
        return {}
    if not isinstance(items, list):
        return {}
    found: dict[str, AcpSession] = {}
    for item in items:
        session = _session(item)
        if session is None:
            continue
        name = tape_name(session.session_id, session.cwd)
        if name not in found or session.updated_at >= found[name].updated_at:
            found[name] = session
    return found


def _session(item: object) -> AcpSession | None:
    if not isinstance(item, dict):
        return None
    sid, cwd, title, updated = (item.get(k) for k in ("session_id", "cwd", "title", "updated_at"))
    if not (isinstance(sid, str) and sid and isinstance(cwd, str) and cwd):
        return None
    # One the server cannot hash into a tape name (a lone surrogate), or a folder the index could
    # keep only cut short (another folder then) or altered (a NUL): no tape is labelled by it.
    if not (_utf8(sid) and _utf8(cwd)) or len(cwd) > FOLDER_LENGTH or "\x00" in cwd:
        return None
    title = _title(title) if isinstance(title, str) and title.strip() else None
    return AcpSession(sid, cwd, title, updated if isinstance(updated, str) else "")


def _title(text: str) -> str:
    """A title as a label: no NUL, no lone surrogate, one line, bounded."""
    text = " ".join(python_json.without_lone_surrogates(text).replace("\x00", "\ufffd").split())
    return text if len(text) <= TITLE_LENGTH else text[: TITLE_LENGTH - 1] + "…"


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
