"""`tapeview show TAPE [--from POS | --anchor NAME] [--follow] [--url URL --token T]`: a tape's timeline in
the terminal, one line an entry; `--follow` prints new entries as they are indexed, until Ctrl-C."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from typing import Protocol

from django.core.management.base import BaseCommand
from django.db import DatabaseError, connection

from tapeview.sources import Reader, TapeNotFound, reader
from tapeview.tapes import context, headline, lookup, timeline
from tapeview.tapes.api.entries import entry_out
from tapeview.tapes.context import AnchorNotFound
from tapeview.tapes.models import Tape
from tapeview.tapes.terminal import Remote, add_options, pipe_closed, refuse, remote_from

PAGE = 500
TAIL = 10  # `--follow` alone starts with the last entries, as `tail -f` does
POLL = 0.25  # seconds between looks at the index while following


class Command(BaseCommand):
    help = "Print a tape's timeline: position, time, kind and a one-line summary of each entry."
    requires_system_checks = []  # a reading command: it answers at once

    def add_arguments(self, parser) -> None:
        parser.add_argument("tape", metavar="TAPE", help="a tape id, as `tapeview search` gives it")
        start = parser.add_mutually_exclusive_group()
        start.add_argument("--from", dest="start", type=int, metavar="POS", help="start at this position")
        start.add_argument("--anchor", metavar="NAME", help="start at this anchor (a name or a position)")
        parser.add_argument(
            "--follow", action="store_true", help="keep printing entries as they are appended, until Ctrl-C"
        )
        add_options(parser)

    def handle(
        self, *args, tape: str, start: int | None, anchor: str | None, follow: bool, **options
    ) -> None:
        if start is not None and start < 1:
            raise refuse("--from: a position is 1 or more")
        try:
            remote = remote_from(options)
            entries = RemoteTimeline(remote, tape) if remote else LocalTimeline(tape)
            after = start - 1 if start is not None else entries.anchor(anchor) - 1 if anchor else None
            if after is None and follow:
                after = entries.tail_start()
            after = self.print_from(entries, after)
            while follow:
                time.sleep(POLL)
                after = self.print_from(entries, after)
        except KeyboardInterrupt:
            return  # Ctrl-C is how a follow ends: exit 0, as `tail -f`'s
        except BrokenPipeError:
            pipe_closed()

    def print_from(self, entries: Timeline, after: int | None) -> int | None:
        for entry in entries.entries(after):
            self.stdout.write(headline.line(entries.source, entry))
            after = entry["pos"]
        self.stdout.flush()
        return after


class Timeline(Protocol):
    """A tape's entries shaped as the API's EntryOut, from the local index or a remote's API."""

    source: Reader  # the tape's family's reader: what its tool calls and results hold

    def anchor(self, ref: str) -> int:
        """The position of the anchor `ref` names (a position, or a name: its last occurrence)."""

    def tail_start(self) -> int | None:
        """Where the last TAIL entries start after."""

    def entries(self, after: int | None) -> Iterator[dict]:
        """Every entry after this position, in file order, read a page at a time."""


class LocalTimeline:
    """The local index, kept up to date with the tape's file by this command where no watcher does."""

    def __init__(self, key: str) -> None:
        if Tape._meta.db_table not in _tables():
            raise refuse("no index here yet: run `tapeview index` (or `tapeview serve`) first")
        self.key = key
        self.tape = _local(lambda: lookup.find_tape(key))
        self.source = reader(self.tape.kind)

    def anchor(self, ref: str) -> int:
        return _local(lambda: context.find_anchor(self.tape, ref)).pos

    def tail_start(self) -> int | None:
        last = timeline.find_rows(self.tape, limit=TAIL, last=True)
        return last[0].pos - 1 if last else None

    def entries(self, after: int | None) -> Iterator[dict]:
        tape = _local(lambda: lookup.find_tape(self.key))  # indexes what was appended (index.refresh)
        if after is not None and tape.next_pos - 1 < after:
            self.tape = tape
            sys.stderr.write("tapeview show: the tape was reset; from its start again\n")
            after = None
        while True:
            rows = timeline.find_rows(tape, after=after, limit=PAGE)
            for e in sorted(timeline.read_rows(tape, rows), key=lambda e: e.pos):
                yield entry_out(e, full=False)
            if len(rows) < PAGE:
                return
            after = rows[-1].pos


class RemoteTimeline:
    """Another Tapeview's REST API: the same entries, as its timeline endpoint gives them."""

    def __init__(self, remote: Remote, key: str) -> None:
        self.remote = remote
        self.path = f"tapes/{Remote.part(key)}"
        self.tape = remote.get(self.path)
        self.source = reader(self.tape["kind"])

    def anchor(self, ref: str) -> int:
        found, cursor = None, None
        while True:
            page = self.remote.get(f"{self.path}/anchors", limit=PAGE, cursor=cursor)
            for a in page["items"]:
                if str(a["pos"]) == ref:
                    return a["pos"]
                if a["name"] == ref:
                    found = a["pos"]  # the last anchor of that name, as the local index's
            cursor = page["next_cursor"]
            if cursor is None:
                break
        if found is None:
            raise refuse(f"no anchor {ref!r} on this tape")
        return found

    def tail_start(self) -> int | None:
        # The API counts entries and unreadable lines, not positions: start a little before.
        near = max(0, self.tape["entries"] + self.tape["unreadable"] - 4 * TAIL)
        positions = [e["pos"] for e in self.entries(near or None)]
        return positions[-TAIL] - 1 if len(positions) >= TAIL else near or None

    def entries(self, after: int | None) -> Iterator[dict]:
        cursor = None
        while True:
            page = self.remote.get(f"{self.path}/entries", after=after, limit=PAGE, cursor=cursor)
            yield from page["items"]
            cursor = page["next_cursor"]
            if cursor is None:
                return


def _local(find: Callable):
    """What a lookup finds, or the one line that says what is not there."""
    try:
        return find()
    except (lookup.NoSuchTape, TapeNotFound, AnchorNotFound) as exc:
        raise refuse(str(getattr(exc, "detail", None) or exc)) from None


def _tables() -> list[str]:
    try:
        return connection.introspection.table_names()
    except DatabaseError as exc:
        raise refuse(f"cannot open the index: {exc}") from None
