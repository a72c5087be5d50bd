"""Normalized, family-independent shapes of what the source readers find on disk."""

from __future__ import annotations

import errno
import json
import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

# A line longer than this is never parsed whole: it is indexed and shown from its head, so memory
# stays bounded whatever an agent wrote.
SCAN_PARSE_LIMIT = 4 * 1024 * 1024
DISPLAY_PREVIEW_BYTES = 64 * 1024  # the head of such a line that is shown

UNREADABLE = "cannot be read: permission denied"

# What a row an agent wrote in the user's place is (`Entry.aside`): never a turn of the user's
# (nanobot's is_hidden_history_message, formats/nanobot.md §2.3).
CHECKPOINT = "checkpoint"  # the context was compacted here: the turn it falls in goes on after it
AUTOMATION = "automation"  # a schedule or trigger started a run of the agent's own here


class TapeNotFound(LookupError):
    """The tape file is gone (deleted, reset or never there)."""

    detail = "this tape's file is gone"  # what a user is told


class FileUnreadable(PermissionError):
    """A source file this process may not read (its mode, its owner): nothing of it can be shown."""

    def __init__(self, path: str | Path) -> None:
        super().__init__(errno.EACCES, "permission denied", str(path))
        self.detail = f"{_name(path)} {UNREADABLE}"  # what a user is told


class FileChanging(OSError):
    """A file rewritten in place (truncated, then written) changed at every read: no whole version
    was caught. Reading it again in a moment gives the writer's."""

    retry_after = 1

    def __init__(self, path: str | Path) -> None:
        super().__init__(errno.EAGAIN, "changed while it was read", str(path))
        self.detail = f"{_name(path)} changed while it was read (its agent is rewriting it): try again"


def _name(path: str | Path) -> str:
    return os.fsencode(Path(path).name).decode("utf-8", "backslashreplace")  # as paths.shown_name


class TapeBusy(Exception):
    """The agent is mid-turn or writing: nothing was written. Try again after `retry_after` seconds."""

    def __init__(self, reason: str, retry_after: float = 2.0) -> None:
        super().__init__(reason)
        self.retry_after = retry_after


class TapeMoved(Exception):
    """The tape's last entry is not the one the writer was told to write after: nothing was written."""

    def __init__(self, seen: int, now: int) -> None:
        super().__init__(f"the tape ends at id {now}, not {seen}")
        self.seen, self.now = seen, now


class AgentStopped(TapeBusy):
    """The agent stopped mid-turn long ago, or looks so: nothing was written.

    Waiting cannot tell a crash from a very long model call (formats/bub.md §4), so an operator
    may confirm the write explicitly (`allow_stopped=True`), and that confirmation is audited.
    """


class WriteFailed(OSError):
    """A write to a tape failed or fell short (a full disk, an I/O error).

    With `rolled_back` the tape was cut back to its size before the write: nothing was written.
    Without, some of the bytes could not be taken back; the message says how many.
    """

    def __init__(self, message: str, *, errno: int | None = None, rolled_back: bool = True) -> None:
        super().__init__(message)
        self.errno = errno
        self.rolled_back = rolled_back


@dataclass(frozen=True, slots=True)
class AppendState:
    """Whether a guest may append to a live tape now: "idle", "busy" (retry later) or "stopped".

    "stopped": the agent is not idle but has been quiet for long, as after a crash mid-turn; an
    operator may confirm a write (`allow_stopped=True`).
    """

    status: Literal["idle", "busy", "stopped"]
    reason: str
    retry_after: float = 0.0  # seconds to wait before asking again (busy, stopped)

    @property
    def idle(self) -> bool:
        return self.status == "idle"


@dataclass(frozen=True, slots=True)
class TapeFile:
    """One file a source holds that reads as a tape (a session log)."""

    key: str  # path relative to the source root, unique within the source
    path: Path
    name: str  # the tape's own name (file stem for Bub)
    role: str = "tape"  # tape | sidecar | archive | fork
    owner: str | None = None  # key of the tape a sidecar/archive/fork belongs to
    label: str | None = None  # a human label known from the name alone
    append_only: bool = True  # False: the agent rewrites the file wholesale
    note: str = ""  # what the user should know about this file (e.g. "no longer loaded")
    refused: str = ""  # why it is not read at all (the Sources page names it): an id that is no safe name
    # What the agent's files beside it say: the model and context window its config names, the
    # folder the session worked in.
    model: str = ""
    window: int | None = None
    workdir: str = ""


# Not frozen: a frozen dataclass's __init__ costs three times as much, and indexing builds
# one Entry per line (see bench/). Treat it as immutable all the same.
@dataclass(slots=True)
class Entry:
    """One entry of a tape, or one unreadable line, at a known place in the file."""

    pos: int  # 1-based line number in the file (the entry's position)
    offset: int  # byte offset of the line
    length: int  # bytes of the line, newline included
    id: int | None
    kind: str  # the agent's kind, or "unreadable"
    name: str = ""  # anchor or event name, or message role
    date: datetime | None = None
    payload: Any = None
    meta: dict = field(default_factory=dict)
    readable: bool = True
    problem: str = ""  # why a line is unreadable, or what is odd about it
    preview: str = ""  # a safe, bounded text of an unreadable line
    is_error: bool = False
    tokens: int = 0  # total tokens the provider reported for this entry
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    context: bool = True  # False: operational, never shown to the model
    phase: bool = False  # an anchor that starts a phase (not memory/* or spill/*)
    truncated: bool = False  # the payload was too big to parse for display
    # The phase anchor this entry starts while staying what it is: nanobot marks its archive
    # pointer and summary checkpoints on the message rows there, not on lines of their own.
    anchor: str = ""
    aside: str = ""  # CHECKPOINT or AUTOMATION: a row the agent wrote in the user's place

    @property
    def is_anchor(self) -> bool:
        return self.kind == "anchor" and self.readable

    @property
    def anchor_only(self) -> bool:
        """An anchor and nothing more: it starts no turn and is no entry of the phase it starts. An
        anchor line, or a checkpoint its reader made an anchor (nanobot's summary checkpoints; the
        message nanobot's archive pointer names is an anchor that stays a message)."""
        return self.is_anchor or (self.aside == CHECKPOINT and bool(self.anchor))

    @property
    def starts_turn(self) -> bool:
        """A message the user sent: a turn of the user's starts here."""
        return self.kind == "message" and self.name == "user" and self.readable and not self.aside

    @property
    def reports_usage(self) -> bool:
        """Whether the agent recorded token usage here (a run's usage, nanobot's last turn)."""
        return self.prompt_tokens is not None or self.tokens > 0


def unreadable(pos: int, offset: int, length: int, problem: str, preview: str, **extra: Any) -> Entry:
    """A line (or document) the agent's own reader would skip, kept so the user sees it."""
    return Entry(
        pos=pos, offset=offset, length=length, id=None, kind="unreadable",
        readable=False, problem=problem, preview=preview, **extra,
    )  # fmt: skip


@dataclass(frozen=True, slots=True)
class ContextMessage:
    """One chat message as the agent would hand it to the model."""

    role: str
    content: Any
    source_pos: int
    tool_calls: list | None = None
    tool_call_id: str | None = None
    name: str | None = None

    @property
    def chars(self) -> int:
        return len(content_text(self.content)) + sum(map(_arguments_chars, self.tool_calls or []))


MALFORMED_CALL = "(malformed tool call)"  # the name a call no model could have been sent is shown by


def shown_call(call: Any) -> Any:
    """A tool call as the context shows it: one that is not an object whose function is an object
    with a name (null, a number, `"function": "x"` in a hand-edited file) is named MALFORMED_CALL,
    what was written in its place (the call, or its function) shown as its arguments."""
    fn = call.get("function") if isinstance(call, dict) else None
    if isinstance(fn, dict) and isinstance(fn.get("name"), str):
        return call
    written = fn if isinstance(call, dict) else call
    ident = call_id(call.get("id")) if isinstance(call, dict) else None
    shown = {"name": MALFORMED_CALL, "arguments": json_text(written)}
    return {"id": ident, "type": "function", "function": shown}


def json_text(value: Any) -> str:
    """A value as JSON text for display and counting, never raising (a nesting too deep says so)."""
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (RecursionError, ValueError):  # nested past what the encoder follows, or a cycle
        return "(not shown: nested too deeply to write as JSON)"


def _arguments_chars(call: Any) -> int:
    fn = call.get("function") if isinstance(call, dict) else None
    arguments = fn.get("arguments") if isinstance(fn, dict) else None
    return len(arguments) if isinstance(arguments, str) else len(json_text(arguments)) if arguments else 0


def call_id(value: Any) -> str | int | None:
    """A tool call's id as the timeline pairs by it: a string or a number; anything else (a list or
    an object in a hand-edited file) pairs nothing."""
    return value if isinstance(value, str | int) and not isinstance(value, bool) and value != "" else None


def content_text(content: Any) -> str:
    """The text of a message content: a string, or the text parts of a list of parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, str):
                parts.append(part)
        return "\n".join(parts)
    try:
        return str(content)
    except RecursionError:  # an object nested ~1,000 deep (a hostile file): never crash on it
        return "(not shown: nested too deeply)"
