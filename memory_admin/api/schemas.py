"""The memory API's schemas: what goes in, and what comes out (the out schemas decide what leaks)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from ninja import Field, Schema
from pydantic import StrictBool, field_validator
from pydantic_core import PydanticCustomError

from tapeview.tapes.api.schemas import TEXT, BodyIn, PageIn, WholeInt

from ..diff import COMPARED_CHARS, COMPARED_LINES, too_large, unified
from ..stores.model import MAX_TEXT, StaleEdit, text_problem
from ..versions import DiffPair

BASE_VERSION = r"^[\w:.-]+$"


class ConflictOut(Schema):
    """409 stale: the store changed since `base_version`; nothing was written.

    `diff` is a unified diff from the current content to the content sent: what the edit would
    change if sent again with `base_version` = `current_version`.
    """

    detail: str
    current_version: str
    current_content: str
    diff: str


def conflict(stale: StaleEdit, sent: str) -> ConflictOut:
    return ConflictOut(
        detail="the store changed since base_version: nothing was written",
        current_version=stale.current_version,
        current_content=stale.current_text,
        diff=unified(stale.current_text, sent, f"current@{stale.current_version}", "sent"),
    )


class StoreOut(Schema):
    id: str = Field(description="opaque and URL-safe: the {store_id} of the store's other endpoints")
    source: str
    kind: str = Field(
        description="bub.zone, nanobot.memory, nanobot.file, nanobot.history, yachiyo.memory, ..."
    )
    title: str
    owner: str
    editable: bool
    note: str
    size_bytes: int = Field(
        description="the bytes the store holds, as its page shows them: a Bub zone's memory (long-term "
        "text and notes, UTF-8), not the tape file that holds it; another store's file"
    )
    file_size_bytes: int = Field(
        description="the file that holds the store: a Bub zone's tape (or memory sidecar) file"
    )
    changed_at: datetime | None = Field(
        description="its last change, as its page shows it: a Bub zone's newest version's date (the "
        "tape file's time moves with every entry the agent appends); another store's file's time"
    )
    version: str = Field(description="the version last seen; GET the store for the current one")
    tape_id: str | None = Field(description="the tape a Bub memory zone belongs to")
    source_configured: bool = Field(
        description="false: the source is no longer configured; the store is kept with its versions "
        '(GET .../versions), its file is not read (GET the store: 400, "source no longer configured")'
    )
    long_term: bool = Field(description="whether PUT .../long-term applies to this store")
    prune: bool = Field(description="whether POST .../prune applies to this store")


class StoreDetailOut(StoreOut):
    content: str = Field(description="the whole store as text (for a Bub zone: long-term, then the notes)")
    not_text: str | None = Field(
        None,
        description="why the file is not UTF-8 text (which byte), where it is not: `content` is it decoded "
        "(U+FFFD for bytes that are not UTF-8) and Tapeview does not rewrite it (`long_term` is false)",
    )
    long_term_text: str | None = Field(description="what PUT .../long-term replaces, where it applies")
    daily: dict[str, str] | None = Field(description="a Bub zone's notes by day")
    as_of: datetime | None = Field(
        None, description="with ?as_of=: the time asked for; `version` and the content are those of then"
    )


class VersionOut(Schema):
    version: str
    label: str
    date: datetime | None = Field(description="when it was written or first seen; null where nothing says")
    summary: str = Field(description="what changed, as the store page says it")


class DiffExtentOut(Schema):
    first_line: int = Field(description="the first line that differs (1-based)")
    old_lines: int = Field(description="lines of `from_version` from there to the lines both end with")
    new_lines: int = Field(description="lines of `to_version` from there to the lines both end with")
    old_bytes: int = Field(description="the size of `from_version`, in UTF-8 bytes")
    new_bytes: int = Field(description="the size of `to_version`, in UTF-8 bytes")


class DiffOut(Schema):
    from_version: str | None = Field(description="null: from nothing (the first version)")
    to_version: str
    diff: str = Field(description="a unified diff (empty where `too_large`)")
    too_large: bool = Field(
        description=f"the versions differ in more lines than are compared ({COMPARED_LINES:,}, or "
        f"{COMPARED_CHARS:,} characters, between the lines both start and end with): no diff is given, "
        "`extent` says how far they differ"
    )
    extent: DiffExtentOut | None = Field(
        description="where `too_large`: where and how far the versions differ"
    )


def diff_out(pair: DiffPair, title: str) -> dict:
    """The diff API's answer: the diff of two versions, or how far they differ where they are too large
    to compare."""
    if found := too_large(pair.old, pair.new):
        return {
            "from_version": pair.frm,
            "to_version": pair.to,
            "diff": "",
            "too_large": True,
            "extent": found.extent,
        }
    text = unified(pair.old, pair.new, f"{title}@{pair.frm or 'empty'}", f"{title}@{pair.to}")
    return {"from_version": pair.frm, "to_version": pair.to, "diff": text, "too_large": False, "extent": None}


class ExportIn(Schema):
    format: Literal["json", "md"] = Field(
        "json",
        description="json: id, kind, title, owner, source, version, date and the content's fields "
        "(text; long_term and daily; entries; pairs; history); md: the same as a readable document",
    )


class ExportOut(Schema):
    """The JSON export (documented only: the endpoint answers the export module's document as it is)."""

    id: str
    kind: str
    title: str
    owner: str
    source: str
    version: str
    date: datetime | None = Field(description="when the current version was written; null where unknown")
    content: dict = Field(
        description="by kind: text; long_term and daily (notes by date); entries; pairs (key, value); history"
    )


class LongTermIn(BodyIn):
    content: str = Field(max_length=MAX_TEXT, pattern=TEXT)
    base_version: str = Field(min_length=1, max_length=64, pattern=BASE_VERSION)

    @field_validator("content", mode="before")
    @classmethod
    def writable(cls, content: object) -> object:
        # The edit page's limit and words (text_problem), before pydantic's own checks say theirs.
        if isinstance(content, str) and (problem := text_problem(content)):
            kind = "string_pattern_mismatch" if "\x00" in content else "string_too_long"
            raise PydanticCustomError(kind, problem)
        return content


class PruneIn(BodyIn):
    # Strict: `true` or "5" is a mistake in the client, not a number of days to prune by.
    older_than_days: WholeInt = Field(ge=0, le=36500)
    # Strict too: "no" would read as false, and prune for real.
    dry_run: StrictBool = True
    base_version: str | None = Field(
        None, max_length=64, pattern=BASE_VERSION, description="default: the version the dry run sees now"
    )


class PruneOut(Schema):
    dry_run: bool
    removed: list[str] = Field(description="the days whose notes go (or went)")
    version: str = Field(description="the zone's version after the prune (now, for a dry run)")


class AsOfIn(Schema):
    as_of: datetime | None = Field(
        None, description="ISO 8601 (UTC where it names no offset): the store as it was then"
    )


class LineSourceOut(Schema):
    """Where a line came from, as far as the files tell (each field null where they do not)."""

    tape_id: str | None = Field(description="the tape holding the entry that wrote it")
    pos: int | None = Field(description="that entry: the memory_save tool call, the memory/seal, the trace")
    commit: str | None = Field(description="nanobot's git commit (Dream's, or Tapeview's own)")
    audit_id: int | None = Field(description="the audit row of a write made through Tapeview")


class BlameLineOut(Schema):
    text: str
    version: str = Field(description="the version that introduced the line (diff it with ?to=)")
    date: datetime | None = Field(description="when; null where the files record no time")
    author: str = Field(description="`agent`, or the Tapeview user who wrote it")
    source: LineSourceOut | None = Field(description="null: nothing records where the line came from")


class BlamePageOut(Schema):
    items: list[BlameLineOut]
    next_cursor: str | None


class StorePageOut(Schema):
    items: list[StoreOut]
    next_cursor: str | None


class VersionPageOut(Schema):
    items: list[VersionOut]
    next_cursor: str | None


class StoreFilters(PageIn):
    source: str | None = Field(None, max_length=100, pattern=TEXT)
    kind: str | None = Field(None, max_length=40, pattern=TEXT, description="a kind or its family: nanobot")
