"""Shapes and errors shared by every memory store (plain Python, no Django)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from tapeview.sources.model import TapeBusy


class StoreError(ValueError):
    """An edit that the agent's own rules refuse (empty content, unknown key, ...)."""


class StaleEdit(Exception):
    """The file changed since the editor read it; nothing was written."""

    def __init__(self, current_text: str, current_version: str) -> None:
        super().__init__("the file changed since you read it")
        self.current_text = current_text
        self.current_version = current_version


# The most text a page or the API writes to a memory store at once, and why a text is refused, in the
# same words on both: nanobot puts USER.md and MEMORY.md into every turn's prompt, so a store far past
# this is a mistake (a paste of a log), not memory.
MAX_TEXT = 2_000_000


def text_problem(text: str) -> str | None:
    """Why this text is not written to a memory store, in the user's words; None where it may be."""
    if "\x00" in text:
        return (
            "The text contains a NUL character (U+0000, often pasted from a binary file), which is not "
            "saved to a memory file: remove it and save again."
        )
    if len(text) > MAX_TEXT:
        return (
            f"The text is {len(text):,} characters long; a memory store takes at most {MAX_TEXT:,} "
            "characters, as agents read their memory into their prompts. Shorten it and save again."
        )
    return None


def not_text(data: bytes | None) -> str:
    """Why a file's bytes are not text Tapeview rewrites, in the user's words; "" where they are.

    A file that is not UTF-8 (or holds a NUL: a binary file, which a browser's form turns into
    U+FFFD) cannot go through a text editor and back unchanged: rewriting it would replace the bytes
    the editor never saw, so such a file is shown, not rewritten.
    """
    if not data:
        return ""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"byte {exc.start:,} (0x{data[exc.start]:02X}) is not UTF-8"
    nul = data.find(b"\x00")
    return f"byte {nul:,} is a NUL (0x00): a binary file" if nul >= 0 else ""


def not_text_note(title: str, why: str) -> str:
    """What the page and the API say of a file that is not text, and why it is not rewritten."""
    return (
        f"{title} is not UTF-8 text ({why}). It is shown with U+FFFD where bytes are not UTF-8, and "
        "Tapeview will not rewrite it, so the file keeps its bytes as they are."
    )


def edit_problem(title: str, snap: Snapshot) -> str:
    """Why the edit page does not open this text (not text, or past MAX_TEXT); "" where it does."""
    if snap.not_text:
        return not_text_note(title, snap.not_text)
    if len(snap.text) > MAX_TEXT:
        return (
            f"{title} is {len(snap.text):,} characters long, past the {MAX_TEXT:,} a memory store is edited "
            "up to here: it is shown, not edited. Download it from its page, or restore an earlier version."
        )
    return ""


# One "busy, retry" error for tapes and memory files alike.
StoreBusy = TapeBusy


@dataclass(frozen=True)
class StoreRef:
    """One memory store found in a source: a file (or a zone) the operator can read and edit."""

    key: str  # stable within the source, e.g. "workspace/memory/MEMORY.md"
    kind: str  # the KIND of the store module that found it, e.g. nanobot.memory
    title: str  # what the user sees, e.g. "MEMORY.md"
    owner: str  # the workspace, session or tape it belongs to
    path: Path
    editable: bool = True
    note: str = ""


@dataclass(frozen=True)
class Snapshot:
    """A store's content as read at one moment: its text for diffs and the version an edit must carry."""

    version: str  # sha256 of the file's bytes (first 16 hex), or "missing"
    text: str  # a canonical text rendering (for diffs, search and restore)
    items: list = field(default_factory=list)  # kind-specific parsed items (entries, kv pairs, ...)
    not_text: str = ""  # why the file is not text Tapeview rewrites (not_text); "" where it is


def version_of(data: bytes | None) -> str:
    return "missing" if data is None else hashlib.sha256(data).hexdigest()[:16]
