"""Bub tapes: discover the files of a tapes directory, read entries tolerantly, build context.

Follows ../shared/formats/bub.md: one JSONL line per entry, only newline-terminated lines
are entries, file order is the truth, anchors cut the model's context.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from urllib.parse import unquote

import orjson

from . import bub_acp, bub_lines, bub_next, bub_next_lines
from .bub_lines import (
    DISPLAY_PARSE_LIMIT,
    PREVIEW_BYTES,
    is_tool_error,
    preview,
    too_big,
)
from .bub_lines import parse_line as parse_line  # the 0.5.1 line reader, for the memory zone's writer
from .model import (
    DISPLAY_PREVIEW_BYTES,
    SCAN_PARSE_LIMIT,
    ContextMessage,
    Entry,
    TapeFile,
    TapeNotFound,
    shown_call,
    unreadable,
)
from .raw_bytes import open_file, skip_line
from .raw_bytes import read_raw as read_raw  # the contract's byte reader, the same for every kind

KIND = "bub"
_ARCHIVE = re.compile(r"^(?P<base>.+)\.jsonl\.(?P<stamp>\d{8}T\d{6}Z)\.bak$")
_CHANNEL = re.compile(r"sender_id=[^|\n\\]*\|channel=\$?([^|\n\\]+)\|chat_id=([^\s|\\]+)")
_FIXED_SESSIONS = ("cli:local", "cli_session")
# Bub 0.2's names (the workspace's whole md5, the tape's name quoted: `<32hex>__bub%3A<16hex>.jsonl`):
# Bub 0.3 on names its tapes anew, so it never opens these again (formats/bub.md §9).
_NAMED_BY_0_2 = re.compile(r"[0-9a-f]{32}__[^_]*%3A[0-9a-f]{16}\.jsonl")


def discover(root: Path) -> list[TapeFile]:
    """Every tape-like name directly in a Bub tapes directory (subdirectories are not tapes).

    Names, not files: a FIFO, a folder or a link named like a tape is listed too, so that the
    path policy (sources.paths) refuses it where the user sees why.
    """
    found = []
    try:
        names = sorted(p.name for p in root.iterdir())
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
    tapes = [t if t.owner is None or t.owner in keys else _orphan(t) for t in found]
    return bub_acp.labelled(root, tapes)  # the sessions bub-acp-server drives: their titles and folders


def named_by_0_2(path: Path) -> bool:
    """A tape named by Bub 0.2, which Bub 0.3 and later never open again: they name their tapes anew."""
    return _NAMED_BY_0_2.fullmatch(path.name) is not None


def _orphan(tape: TapeFile) -> TapeFile:
    return TapeFile(
        tape.key, tape.path, tape.name, tape.role, None, note=f"{tape.role} of a tape that is gone"
    )


BLOCK = 1 << 20  # bytes read at a time by lines() and blocks()


def scan(path: Path, start: int = 0, first_pos: int = 1) -> Iterator[Entry]:
    """Entries of complete lines from byte `start` on; an unfinished last line is left alone. Each
    file is read in its own format, 0.5.1's or the next release's (sources.bub_next)."""
    fmt = bub_next.file_format(path)
    for pos, offset, line in lines(path, start, first_pos, fmt):
        yield line if isinstance(line, Entry) else bub_next.parse(fmt, line + b"\n", pos, offset)


def lines(
    path: Path, start: int = 0, first_pos: int = 1, fmt: str = ""
) -> Iterator[tuple[int, int, bytes | Entry]]:
    """(pos, offset, line) of the complete lines from byte `start` on, blank ones passed over: a
    line is its bytes without the newline, or, too long to parse, the Entry its head makes (in the
    file's format `fmt`, sources.bub_next.file_format). For the indexer's bulk path: the file is read
    a block at a time (`blocks`), as `scan` would read it by line."""
    big_line = _big_line(fmt)
    pos = first_pos
    for offset, data, end in blocks(path, start):
        if end < 0:
            yield pos, offset, big_line(data, pos, offset, -end)
            pos += 1
            continue
        for line in data[: end - 1].split(b"\n"):
            length = len(line) + 1
            if length > SCAN_PARSE_LIMIT:
                yield pos, offset, big_line(line[:DISPLAY_PREVIEW_BYTES], pos, offset, length)
            elif line.strip():
                yield pos, offset, line
            offset += length
            pos += 1


def _big_line(fmt: str):
    """What reads a line too long to read whole, from its head, in format `fmt`."""
    return bub_next_lines.big_line if fmt == bub_next_lines.FORMAT else bub_lines.big_line


def blocks(path: Path, start: int = 0) -> Iterator[tuple[int, bytes, int]]:
    """(offset, data, end) of the file from byte `start` on, a block at a time (for `lines`, and
    for the indexer's compiled lane, tapes.blocklane, which counts the lines' positions and passes
    over blank lines itself): the first `end` bytes of data are whole lines, each with its newline,
    the first at `offset` (what follows them is the start of a line still to come); or, with `end`
    negative, data is the head of one line of -end bytes, too long to read whole (`big_line`)."""
    with open_file(path) as f:
        f.seek(start)
        offset, rest = start, b""
        while block := f.read(BLOCK):
            data = rest + block
            end = data.rfind(b"\n") + 1
            if end:
                yield offset, data, end
                offset += end
            rest = data[end:]
            if len(rest) >= SCAN_PARSE_LIMIT:
                # A line too long to parse whole: read on to its end keeping only its head, so
                # memory stays bounded whatever the agent wrote (formats: a 50 MB payload).
                more, ended = skip_line(f)
                if not ended:
                    return
                length = len(rest) + more
                yield offset, rest[:DISPLAY_PREVIEW_BYTES], -length
                offset, rest = offset + length, b""


def unfinished_tail(path: Path, offset: int, pos: int) -> Entry | None:
    """The bytes after the last complete line, shown as unreadable: a write in flight or a crash."""
    try:
        with open_file(path) as f:
            f.seek(offset)
            rest = f.read(PREVIEW_BYTES + 1)
            size = f.seek(0, 2)
    except (OSError, TapeNotFound):
        return None
    if not rest:
        return None
    problem = "unfinished last line (being written, or cut by a crash)"
    return unreadable(pos, offset, size - offset, problem, preview(rest))


def read_entries(path: Path, spans: Iterable[tuple[int, int, int]]) -> list[Entry]:
    """Entries at known (pos, offset, length) places, reading only those bytes."""
    spans = sorted(spans, key=lambda s: s[1])
    if not spans:
        return []
    out, fmt = [], bub_next.file_format(path)
    big_line = _big_line(fmt)
    with open_file(path) as f:
        for pos, offset, length in spans:
            f.seek(offset)
            if length > SCAN_PARSE_LIMIT:  # as the index read it, from its head: it says why it is no entry
                out.append(big_line(f.read(DISPLAY_PREVIEW_BYTES), pos, offset, length))
            elif length > DISPLAY_PARSE_LIMIT:
                out.append(too_big(f.read(DISPLAY_PREVIEW_BYTES), pos, offset, length))
            else:
                out.append(bub_next.parse(fmt, f.read(length), pos, offset))
    return out


def session_label(tape_name: str, entry: Entry) -> str | None:
    """The session id behind a tape name, when an entry names a channel whose hash matches."""
    if bub_next.is_next(entry):
        return bub_next.session_label(tape_name, entry)
    wanted = tape_name.rsplit("__", 1)[-1]
    wanted = unquote(wanted).rsplit(":", 1)[-1][:16]
    if len(wanted) != 16:
        return None
    candidates = list(_FIXED_SESSIONS)
    if entry.kind in ("message", "event") and isinstance(entry.payload, dict):
        text = _json_text(entry.payload)[:4000]
        candidates += [f"{ch}:{chat}" for ch, chat in _CHANNEL.findall(text)]
    for session in candidates:
        if hashlib.md5(session.encode()).hexdigest()[:16] == wanted:
            return session
    return None


def context_messages(entries: Iterable[Entry]) -> list[ContextMessage]:
    """Bub's context selector (formats/bub.md §2.3) over the entries after an anchor."""
    entries = list(entries)
    if any(bub_next.is_next(e) for e in entries):
        return bub_next.context_messages(entries)
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
            shown = [shown_call(c) for c in pending]
            messages.append(ContextMessage("assistant", p.get("content") or "", e.pos, tool_calls=shown))
        elif e.kind == "tool_result":
            results = p.get("results") if isinstance(p.get("results"), list) else []
            for i, result in enumerate(results):
                call = pending[i] if i < len(pending) and isinstance(pending[i], dict) else {}
                fn = call.get("function") if isinstance(call.get("function"), dict) else {}
                content = result if isinstance(result, str) else _json_text(result)
                messages.append(
                    ContextMessage("tool", content, e.pos, tool_call_id=call.get("id"), name=fn.get("name"))
                )
        elif e.kind == "anchor":
            state = _json_text(p.get("state") or {})
            messages.append(ContextMessage("assistant", f"[Anchor created: {e.name}]: {state}", e.pos))
    return messages


def _json_text(value: object) -> str:
    # A line may nest up to orjson's 1,024 read levels, but its writer stops at 254: never crash on it.
    try:
        return orjson.dumps(value).decode()
    except orjson.JSONEncodeError:
        return "(not shown: nested too deeply to write as JSON)"


def pointer(metadata: dict | None, messages: int) -> int:
    """0: Bub keeps no archive pointer (anchors cut the context instead)."""
    return 0


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
    """Results in call order: Bub pairs them with the preceding tool_call by position (its next
    release keeps them in the tool_call entry itself, with their call ids)."""
    if bub_next.is_next(entry):
        return bub_next.tool_results(entry)
    results = entry.payload.get("results") if isinstance(entry.payload, dict) else None
    return [
        {"call_id": None, "content": r, "is_error": is_tool_error(r)}
        for r in (results if isinstance(results, list) else [])
    ]
