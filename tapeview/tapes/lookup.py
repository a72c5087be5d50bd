"""Finding what a URL names: a tape by its key (indexed up to date), one of its entries by position."""

from __future__ import annotations

from django.conf import settings
from django.http import Http404

from . import copy_reader, index, rows
from .models import Tape
from .rows import Row

# The widest position a query takes: a position is a 32-bit integer on PostgreSQL.
MAX_POS = 2**31 - 1
KEY_LENGTH = 32  # the max_length of Tape.key and MemoryStore.key


class NoSuchTape(Http404, LookupError):
    """No tape has this key, or its file is gone.

    An Http404 as well, so that a page and the API (tapeview/api.py maps Http404) both answer
    404 with this text without a handler of their own.
    """


class NoSuchEntry(Http404, LookupError):
    """The tape has no entry at this position."""


def is_key(key: str) -> bool:
    """Could be a tape's or a store's key: anything else never reaches the database."""
    return key.isascii() and key.isalnum() and len(key) <= KEY_LENGTH


def find_tape(key: str) -> Tape:
    """The tape with this key, its index brought up to date with its file."""
    tape = Tape.objects.filter(key=key).first() if is_key(key) else None
    if tape is None:
        raise NoSuchTape("no such tape")
    copy_reader.read_from_host(tape.host)  # another host's tape: its file's copy
    if settings.TAPEVIEW_WEB_INDEXES:  # else another process keeps the index (serve --no-index)
        index.refresh(tape)
    if tape.problem == "file missing":
        raise NoSuchTape("this tape's file is gone")
    if tape.problem.endswith(": not read"):  # the path policy refused it (see sources.paths)
        raise NoSuchTape(f"this tape's file is {tape.problem}")
    return tape


def find_row(tape: Tape, pos: int) -> Row:
    """Where the entry at `pos` sits in the tape's file."""
    row = rows.at(tape, pos) if 1 <= pos <= MAX_POS else None
    if row is None:
        raise NoSuchEntry(f"no entry {pos} on this tape")
    return row
