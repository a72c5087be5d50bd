"""Bring one tape's index up to date from its file: incremental by byte offset, one indexer at a time."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import suppress
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from tapeview.sources import Entry as FileEntry
from tapeview.sources import FileUnreadable, TapeNotFound, araliya_spend, bub_next, paths, reader, yachiyo
from tapeview.sources.bub_next_lines import FORMAT as NEXT_FORMAT
from tapeview.sources.model import UNREADABLE
from tapeview.sources.raw_bytes import head

from . import blocklane, bulk, costs, fastlane, nextlane, signals
from .bulk import AnchorRow
from .lease import POLL, LeaseLost, indexer_fields, lease_of, release, save
from .models import Anchor, EntryChunk, PhaseUsage, Tape, Turn, state_preview
from .packing import Batch, flags, micros
from .phase_tally import PhaseTally, anchor_only, anchor_state
from .turn_tally import TurnTally

# Entries written at once: 16 chunks (packing.CHUNK), one transaction and one save of the tape. Fewer,
# larger batches than 10,000 made a cold index 4-30% faster (each batch's transaction, save and
# statements cost the same however many entries it holds). A batch's writes hold SQLite's write lock
# for up to ~0.1 s (a tape with an anchor every 24 entries), as a search pass's batch does; readers
# never wait for it (WAL).
BATCH = 65_536
LABEL_TRIES = 50
REREAD_TRIES = 3
REREAD_PAUSE = 0.05
AFTER_WRITE = 5.0  # seconds a writer waits for another indexer of its tape: its answer shows the write
Progress = Callable[[int], None]
# A rewritten file that reads as damaged (caught mid-write) keeps the index of its last good read.
DAMAGED = "the file reads as damaged"
log = logging.getLogger("tapeview.index")


def refresh(tape: Tape, progress: Progress | None = None, *, wait: float = 0) -> bool:
    """Index what changed in a tape's file since last time; True if anything was read.

    Index writes for a tape have one owner at a time (a lease in its row). A tape that another
    request or process is indexing is left to it: this returns False at once (or after `wait`
    seconds of asking again), and `tape` shows what is indexed so far. A fleet's copy of the file
    is not kept here: a copy pass follows the index (tapes.filecopy.keep_tapes), off its path."""
    return _refresh(tape, progress, wait=wait)


def behind(tape: Tape) -> bool:
    """Whether the tape's file changed since the index last read it: the next refresh has work."""
    st = _stat(tape.path)
    return st is not None and not _unchanged(tape, st)


def _refresh(tape: Tape, progress: Progress | None, *, wait: float) -> bool:
    st = _stat(tape.path)
    if st is None and tape.problem == "file missing":
        return False
    if st is not None and tape.indexed_at and _unchanged(tape, st):
        return False
    lease = lease_of(tape)
    deadline = time.monotonic() + wait
    while lease is None and time.monotonic() < deadline:
        time.sleep(POLL)
        lease = lease_of(tape)
    if lease is None:
        return False
    try:
        # The previous owner may have indexed past what this request loaded: go on from its offset.
        tape.refresh_from_db()
        start = tape.next_pos
        changed = _refresh_owned(tape, lease, progress)
    except (LeaseLost, Tape.DoesNotExist):
        with suppress(Tape.DoesNotExist):
            tape.refresh_from_db()  # forget the batches that were not ours to write
        return False
    finally:
        release(tape, lease)
    if tape.next_pos - start >= bulk.ANALYZE_AFTER:
        bulk.analyze()
    return changed


def _refresh_owned(tape: Tape, lease: str, progress: Progress | None) -> bool:
    refused = _refusal(tape)
    if refused:
        # The file became a link out of its source (or a FIFO...) since discovery: not read.
        if tape.problem != refused:
            tape.problem = refused
            save(tape, lease)
        return False
    st = _stat(tape.path)
    if st is None:
        if tape.problem != "file missing":
            tape.problem = "file missing"
            save(tape, lease)
        return False
    if tape.indexed_at and _unchanged(tape, st):
        return False
    try:
        if tape.append_only:
            _read_appended(tape, st, lease, progress)
        else:
            _reread(tape, st, lease, progress)
    except TapeNotFound:
        tape.problem = "file missing"
    except FileUnreadable as exc:
        # What was indexed stays; the file is read again once it changes (its mode fixed or not).
        log.warning("%s: %s", tape.path, exc.detail)
        tape.problem = UNREADABLE
    if tape.kind == "araliya":
        _read_spend(tape)
    tape.indexed_at = timezone.now()
    costs.settle(tape)
    save(tape, lease)
    return True


def _refusal(tape: Tape) -> str | None:
    """The path policy again at read time: the source root is the tape's path less its place in it."""
    root = _root(tape)
    return None if root is None else paths.refusal(root, Path(tape.path))


def _root(tape: Tape) -> Path | None:
    if not tape.rel or not tape.path.endswith(tape.rel):
        return None
    return Path(tape.path[: -len(tape.rel)] or ".")


def _companion(tape: Tape) -> str:
    """The identity of the file beside the tape that its figures also come from ("" where none)."""
    root = _root(tape)
    if tape.kind != "araliya" or root is None:
        return ""
    return araliya_spend.identity(root, Path(tape.path))


def _read_spend(tape: Tape) -> None:
    """An araliya session's token totals and cost, from its spend.json (araliya's transcript has none)."""
    root = _root(tape)
    tape.companion = _companion(tape)
    spend = araliya_spend.read(root, Path(tape.path))[0] if root is not None else None
    tape.tokens = spend.tokens if spend else None
    tape.reported_cost = spend.cost_usd if spend else None


def _unchanged(tape: Tape, st: os.stat_result) -> bool:
    return _identity(st) == _indexed_identity(tape) and _companion(tape) == tape.companion


def _stat(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except OSError:
        return None


def _identity(st: os.stat_result) -> tuple[int, int, int, int]:
    return st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns


def _indexed_identity(tape: Tape) -> tuple[int | None, int | None, int, int]:
    return tape.inode, tape.device, tape.size, tape.mtime_ns


def _read_appended(tape: Tape, st: os.stat_result, lease: str, progress: Progress | None) -> None:
    # Bub's own rule: a new inode or a shrink means the tape was reset or replaced. A reset unlinks
    # the file and makes it again, and the new file can get the old inode back (ext4 reuses it at
    # once) and outgrow the old offset before we look: a different first line says so too.
    replaced = (
        (tape.inode is not None and (st.st_ino, st.st_dev) != (tape.inode, tape.device))
        or st.st_size < tape.indexed_offset
        or (tape.head and head(tape.path) != tape.head)
    )
    fmt = bub_next.file_format(tape.path) if tape.kind == "bub" else ""
    # A file read so far in another format (or as 0.5.1 before its first line was whole) is read again.
    reformat = fmt != tape.line_format and (tape.line_format != "" or fmt == NEXT_FORMAT)
    # phase_count -1: indexed before phase statistics existed (migration 0005): count them all again.
    if replaced or reformat or tape.phase_count < 0:
        _reset(tape, lease)
    tape.line_format = fmt
    tape.device, tape.inode, tape.problem = st.st_dev, st.st_ino, ""
    if not tape.head:
        # Taken before the lines are read: a reset in between shows as another head next time.
        tape.head = head(tape.path)
    if fmt == NEXT_FORMAT:  # Bub's next format: its own bulk path (tapes.nextlane)
        lines, lane = nextlane.read(Path(tape.path), tape.indexed_offset, tape.next_pos), nextlane
    elif tape.kind == "bub":  # the bulk path: most lines are only counted (tapes.blocklane, fastlane)
        lines, lane = blocklane.read(Path(tape.path), tape.indexed_offset, tape.next_pos), blocklane
    else:
        lines = _as_lines(reader(tape.kind).scan(Path(tape.path), tape.indexed_offset, tape.next_pos))
        lane = fastlane
    _index_lines(tape, lines, lease, progress, lane)
    # Only now: an indexer killed halfway leaves the old size, so the next one sees work left.
    _set_identity(tape, st)


def _reread(tape: Tape, st: os.stat_result, lease: str, progress: Progress | None) -> None:
    """A file the agent rewrites wholesale: read it all again, but never trade a good read for a torn one."""
    source = reader(tape.kind)
    for attempt in range(REREAD_TRIES):
        entries = list(source.scan(Path(tape.path)))
        bad = next((e for e in entries if not e.readable), None)
        if bad is None:
            break
        # Caught mid-write (an agent without atomic renames): wait for the writer and look again.
        time.sleep(REREAD_PAUSE * (attempt + 1))
        st = os.stat(tape.path)
    _set_identity(tape, st)
    if bad is not None and tape.entries and not tape.unreadable:
        tape.problem = f"{DAMAGED} ({bad.problem}); showing the last good read"
        return
    _reset(tape, lease)
    _index_lines(tape, _as_lines(entries), lease, progress)
    _set_identity(tape, st)  # only now, as for an appended file


def _set_identity(tape: Tape, st: os.stat_result) -> None:
    tape.device, tape.inode, tape.size, tape.mtime_ns = st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns
    tape.problem = ""


def _reset(tape: Tape, lease: str) -> None:
    """Forget a tape's entries and statistics; its identity in the index (key, label) stays."""
    fresh = Tape()
    for f in indexer_fields():
        if f.name != "label":  # the session's label outlives a reset, as Bub's session does
            setattr(tape, f.attname, getattr(fresh, f.attname))
    with transaction.atomic():
        save(tape, lease)
        EntryChunk.objects.filter(tape=tape).delete()
        signals.tape_reset.send(sender=Tape, tape_id=tape.pk)
        Anchor.objects.filter(tape=tape).delete()
        PhaseUsage.objects.filter(tape=tape).delete()
        Turn.objects.filter(tape=tape).delete()


def _as_lines(entries: Iterable[FileEntry]) -> Iterator[tuple[int, int, FileEntry]]:
    return ((e.pos, e.offset, e) for e in entries)


class _Run:
    """One indexing run of a tape: the batch being gathered, written out every `size` entries."""

    size = bulk.whole_chunks(BATCH)  # so a cold index writes every chunk once, never grows one

    def __init__(self, tape: Tape, lease: str, progress: Progress | None) -> None:
        self.tape, self.lease, self.progress = tape, lease, progress
        self.tally = PhaseTally(tape)
        self.turns = TurnTally(tape)
        self.rows, self.anchors = Batch(), []
        self.start = tape.indexed_offset
        self.last: bulk.Last | None = None  # the tape's last chunk as this run wrote it
        costs.begin(tape)

    def full(self, pos: int, offset: int, line: bytes | FileEntry, parsed: object) -> None:
        """One line read as the agent's reader reads it, and accounted."""
        if type(line) is not bytes:
            e = line
        else:
            e = bub_next.parse(self.tape.line_format, line + b"\n", pos, offset, parsed)
        flag = flags(e.readable, e.is_error, e.context, e.id is not None, bool(e.is_anchor or e.anchor))
        self.rows.add(e.pos, e.offset, e.length, e.id, e.kind, e.name, micros(e.date), flag)
        _account(self.tape, e, self.anchors, self.tally)
        self.tape.indexed_offset, self.tape.next_pos = e.offset + e.length, e.pos + 1
        if len(self.rows) >= self.size:
            self.flush()

    def flush(self) -> None:
        tape, anchors = self.tape, self.anchors
        self.tally.settle()
        costs.settle(tape)
        with transaction.atomic():
            bulk.unsynced()
            # First, so a batch is written only by the tape's owner, together with its progress.
            save(tape, self.lease)
            costs.write(tape)
            self.last = bulk.append(tape, self.rows, self.last, self.turns.add)
            self.turns.write()
            signals.entries_indexed.send(sender=Tape, tape=tape)
            bulk.insert_anchors(tape.pk, anchors)
            self.tally.write(anchors)
        if self.progress and tape.indexed_offset > self.start:
            self.progress(tape.indexed_offset - self.start)
        self.rows, self.anchors, self.start = Batch(), [], tape.indexed_offset

    def wants_label(self) -> bool:
        return _wants_label(self.tape)


def _index_lines(tape: Tape, lines: Iterable, lease: str, progress: Progress | None, lane=fastlane) -> None:
    """Index (pos, offset, line): a line's bytes go through the fast lane (tapes.fastlane, or its
    compiled form, tapes.blocklane, for blocks of them), which hands what it does not take to the
    full path; an Entry already read takes the full path."""
    run = _Run(tape, lease, progress)
    lane.index_lines(run, lines)
    run.flush()


def _wants_label(tape: Tape) -> bool:
    return tape.label == tape.name and tape.role == "tape" and tape.label_tries < LABEL_TRIES


def _account(tape: Tape, e: FileEntry, anchors: list[AnchorRow], tally: PhaseTally) -> None:
    anchor = None
    name = e.anchor or e.name
    # An anchor line, or a line that is also an anchor (nanobot's context cuts: e.anchor).
    if e.is_anchor or e.anchor:
        anchor = AnchorRow(e.pos, name[:300], e.date, e.phase, state_preview(anchor_state(e)))
        anchors.append(anchor)
        if e.phase:
            tape.phase_anchor_pos = e.pos
    tally.add(e, anchor)
    costs.count(tape, tally.current, e)
    if not e.readable:
        tape.unreadable += 1
        if tape.foreign_line is None and bub_next.other_format(e):
            tape.foreign_line = e.pos
        return
    tape.entries += 1
    tape.last_id = e.id
    if e.date:
        tape.first_at = min(tape.first_at, e.date) if tape.first_at else e.date
        tape.last_at = max(tape.last_at, e.date) if tape.last_at else e.date
    tape.errors += e.is_error
    if e.reports_usage:
        # A metadata record's usage is a snapshot (nanobot's last turn, the last record wins): never summed.
        tape.tokens = e.tokens if e.kind == "metadata" else (tape.tokens or 0) + e.tokens
    if e.prompt_tokens:
        tape.last_prompt_tokens, tape.last_cached_tokens = e.prompt_tokens, e.cached_tokens
    if e.is_anchor or e.anchor:
        # nanobot's anchors cut the context as Bub's do (formats/nanobot.md §2.5): counted alike.
        tally.anchored(e.pos, name)
        # The message nanobot's archive pointer names stays one of the context's (its phase's too).
        tape.entries_since_anchor += not anchor_only(e)
        if e.phase and not e.anchor:
            return
    else:
        tape.entries_since_anchor += 1
    if _wants_label(tape) and (e.kind == "message" or e.name == "loop.start"):
        tape.label_tries += 1
        tape.label = reader(tape.kind).session_label(tape.name, e) or tape.label
    if tape.kind == "yachiyo" and not tape.first_message:  # also where index.json gave the label
        tape.first_message = yachiyo.first_message(e) or ""
