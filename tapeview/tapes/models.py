"""The derived index of tapes: rebuildable from the files at any time."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import models

from tapeview.sources import python_json
from tapeview.sources.nanobot import ARCHIVED_ANCHOR


def this_host() -> str:
    """The host this process indexes and writes as (TAPEVIEW_HOST): its tapes and stores carry it."""
    return settings.TAPEVIEW_HOST


class Tape(models.Model):
    """One file of a source that reads as a tape, with its statistics and how far it is indexed."""

    key = models.CharField(max_length=32, unique=True)  # opaque, URL-safe id
    # The host whose source holds the file (settings.TAPEVIEW_HOST of the process that indexed it):
    # hosts of a fleet index into one database, and each keeps only its own rows.
    host = models.CharField(max_length=255, db_index=True, default="")
    source = models.CharField(max_length=100, db_index=True)
    kind = models.CharField(max_length=20)
    rel = models.CharField(max_length=1000)  # the file's place within the source
    path = models.CharField(max_length=4096)
    name = models.CharField(max_length=500)
    label = models.CharField(max_length=500)
    role = models.CharField(max_length=10, default="tape")  # tape | sidecar | archive | fork
    owner = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="attachments"
    )
    note = models.CharField(max_length=300, blank=True)
    append_only = models.BooleanField(default=True)  # False: the agent rewrites the file wholesale
    problem = models.CharField(max_length=300, blank=True)

    device = models.BigIntegerField(null=True)
    inode = models.BigIntegerField(null=True)
    size = models.BigIntegerField(default=0)
    mtime_ns = models.BigIntegerField(default=0)
    indexed_offset = models.BigIntegerField(default=0)
    # A fingerprint of the first line (tapes.index): a file unlinked and made again can get the
    # same inode back and grow past the old offset before we look; its first line tells it apart.
    head = models.CharField(max_length=32, blank=True)
    next_pos = models.IntegerField(default=1)
    indexed_at = models.DateTimeField(null=True)
    # The lease of the one process indexing this tape now (tapes.index): who, and until when.
    # Renewed at every batch; a crashed indexer's lease runs out and the next request takes over.
    indexer = models.CharField(max_length=32, blank=True)
    indexing_until = models.DateTimeField(null=True)

    entries = models.IntegerField(default=0)  # what the agent's own reader sees
    unreadable = models.IntegerField(default=0)
    anchors = models.IntegerField(default=0)
    last_anchor = models.CharField(max_length=300, blank=True)
    last_anchor_pos = models.IntegerField(null=True)
    entries_since_anchor = models.IntegerField(default=0)
    phase_anchor_pos = models.IntegerField(null=True)
    first_at = models.DateTimeField(null=True)
    last_at = models.DateTimeField(null=True)
    tokens = models.BigIntegerField(null=True)  # null: the agent recorded no usage in this tape
    errors = models.IntegerField(default=0)
    last_prompt_tokens = models.IntegerField(null=True)
    last_cached_tokens = models.IntegerField(null=True)
    last_id = models.BigIntegerField(null=True)
    label_tries = models.IntegerField(default=0)
    # yachiyo: its first user message, whole up to sources.yachiyo.FIRST_MESSAGE characters, where the
    # label holds only the 40 that yachiyo's title keeps; the session index shows it on hover.
    first_message = models.CharField(max_length=300, blank=True, default="")
    # Phases (tapes.phase_tally): how many phase anchors, and the span before the first one as a
    # dict of phase statistics (null: the tape starts with an anchor). -1: counted before these
    # statistics existed, so the next refresh indexes the tape again (migration 0005).
    phase_count = models.IntegerField(default=0)
    lead_phase = models.JSONField(null=True)
    # The context budget: the model last seen, the prompt tokens the agent last reported since the
    # last anchor (null: none reported yet), and whether the context ever overflowed.
    model = models.CharField(max_length=200, blank=True)
    context_tokens = models.BigIntegerField(null=True)
    overflowed = models.BooleanField(default=False)
    # Bub's line format, from the file's first line (sources.bub_next): "0.5.1", "bub-next" or "" (not
    # known yet, or another agent); and the first line written in the other format (null: none).
    line_format = models.CharField(max_length=10, blank=True, default="")
    foreign_line = models.IntegerField(null=True)
    # What the agent's own files beside the tape say of it (discovery keeps these): the model and
    # context window its config names (nanobot's config.json), the folder it worked in (Bub's
    # acp-sessions.json).
    configured_model = models.CharField(max_length=200, blank=True, default="")
    configured_window = models.BigIntegerField(null=True)
    workdir = models.CharField(max_length=1000, blank=True, default="")
    # The cost the agent reported for the session in USD (araliya's spend.json; null: none), and the
    # identity of the file it came from: a change there reads the tape again (tapes.index).
    cost = models.FloatField(null=True)
    companion = models.CharField(max_length=100, blank=True, default="")
    # Cost (tapes.costs): `cost` above is the session's in USD, "reported" by the agent (araliya's
    # spend.json, Bub-next's step metrics: `reported_cost`) or "priced" by the table (tapes.prices)
    # from the tokens of each model (`model_usage`: model -> [prompt, completion, cached, calls]);
    # `priced_with` is the table's digest, so a changed table reprices the stored costs.
    cost_source = models.CharField(max_length=10, blank=True, default="")
    reported_cost = models.FloatField(null=True)
    model_usage = models.JSONField(default=dict)
    priced_with = models.CharField(max_length=16, blank=True, default="")

    class Meta:
        constraints = [
            # Two hosts may name their sources alike: a file is one tape per host.
            models.UniqueConstraint(fields=["host", "source", "rel"], name="tape_host_source_rel")
        ]
        # last_at alone: the tapes a search's date filter keeps, found without a scan of them all.
        # source with next_pos: each source's entries summed from the index alone (a search's source
        # filter asks at every search: 2.5 -> 0.6 ms over 10,000 tapes on SQLite).
        indexes = [
            models.Index(fields=["role", "last_at"]),
            models.Index(fields=["last_at"]),
            models.Index(fields=["source", "next_pos"], name="tape_source_entries"),
            models.Index(fields=["cost"], name="tape_cost"),
        ]

    def __str__(self) -> str:
        return self.label

    @property
    def cache_hit_rate(self) -> float | None:
        if not self.last_prompt_tokens or self.last_cached_tokens is None:
            return None
        return self.last_cached_tokens / self.last_prompt_tokens

    @property
    def pending_bytes(self) -> int:
        return max(0, self.size - self.indexed_offset)

    @property
    def unfinished_last_line(self) -> bool:
        """Bytes after the last complete line of an append-only tape: a line being written, or cut
        by a crash. It is no entry (and not counted as unreadable); the timeline shows it last."""
        return self.append_only and self.pending_bytes > 0

    @property
    def since_after(self) -> int | None:
        """Where the entries since the last anchor begin after: a message nanobot's archive pointer
        names is the first of them itself (tapes.index counts it among them)."""
        if self.last_anchor_pos and self.last_anchor == ARCHIVED_ANCHOR:
            return self.last_anchor_pos - 1
        return self.last_anchor_pos


class EntryChunk(models.Model):
    """Up to `packing.CHUNK` consecutive entries of a tape, packed (tapes.packing): where each sits
    in the file (offset, length) and what it is, plus a tally of them by kind, name and flags."""

    tape = models.ForeignKey(Tape, on_delete=models.CASCADE, related_name="chunks")
    first_pos = models.IntegerField()
    last_pos = models.IntegerField()
    count = models.IntegerField()
    columns = models.BinaryField()
    vocab = models.TextField()  # JSON: the kinds and names its codes stand for
    tally = models.TextField()  # JSON: "kind\tname\tflags" -> entries

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tape", "first_pos"], name="chunk_tape_first_pos")]


class FileCopy(models.Model):
    """A source file's bytes kept in the database by the watcher of its host (tapes.filecopy), so
    that a web tier on another machine shows its entries and memory without the file (a fleet).

    Derived like the index: the file on its host is the truth, and this copy follows it.
    """

    host = models.CharField(max_length=255)
    path = models.CharField(max_length=4096)
    digest = models.CharField(max_length=32, unique=True)  # of host and path: paths outgrow an index
    tape = models.ForeignKey(Tape, null=True, on_delete=models.CASCADE)  # gone with its tape's row
    size = models.BigIntegerField(default=0)  # bytes copied
    inode = models.BigIntegerField(null=True)
    mtime_ns = models.BigIntegerField(default=0)
    head = models.CharField(max_length=32, blank=True)  # as Tape.head: which generation was copied
    copied_at = models.DateTimeField(null=True)


class FileBlock(models.Model):
    """Consecutive bytes of a copied file, from `start` to `end`; PostgreSQL compresses them (lz4)."""

    copy = models.ForeignKey(FileCopy, on_delete=models.CASCADE, related_name="blocks")
    start = models.BigIntegerField()
    end = models.BigIntegerField()
    data = models.BinaryField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["copy", "start"], name="fileblock_copy_start")]


class Anchor(models.Model):
    """An anchor of a tape; a phase anchor also counts the entries of its phase."""

    # No index of its own: the unique (tape, pos) constraint leads with it (one index less to write).
    tape = models.ForeignKey(Tape, on_delete=models.CASCADE, related_name="anchor_rows", db_index=False)
    pos = models.IntegerField()
    name = models.CharField(max_length=300)
    date = models.DateTimeField(null=True)
    phase = models.BooleanField(default=True)
    state = models.TextField(blank=True)  # a bounded preview of the anchor's state
    entries = models.IntegerField(default=0)  # of a phase anchor: the entries after it in its phase
    # Of a phase anchor, its phase's statistics, kept up to date as batches are indexed
    # (tapes.phase_tally). Tokens stay null where the phase reports no usage.
    phase_index = models.IntegerField(null=True)  # 1, 2, ... in file order (0 is the span before)
    end_pos = models.IntegerField(null=True)
    started_at = models.DateTimeField(null=True)
    ended_at = models.DateTimeField(null=True)
    prompt_tokens = models.BigIntegerField(null=True)
    completion_tokens = models.BigIntegerField(null=True)
    cached_tokens = models.BigIntegerField(null=True)
    tool_calls = models.IntegerField(default=0)
    errors = models.IntegerField(default=0)
    model = models.CharField(max_length=200, blank=True)
    roles = models.JSONField(default=dict)  # messages by role

    class Meta:
        ordering = ["pos"]
        constraints = [models.UniqueConstraint(fields=["tape", "pos"], name="anchor_tape_pos")]
        indexes = [models.Index(fields=["tape", "phase_index"], name="anchor_tape_phase")]


class PhaseUsage(models.Model):
    """The tokens one model used in one phase of a tape, and the cost the agent reported for them
    (tapes.costs): a phase's cost is priced from these at every read, so a new table needs no redo."""

    tape = models.ForeignKey(Tape, on_delete=models.CASCADE, related_name="phase_usage", db_index=False)
    phase_index = models.IntegerField()  # as Anchor.phase_index: 0 is the span before the first anchor
    model = models.CharField(max_length=200, blank=True)  # as the agent named it ("": not named)
    prompt_tokens = models.BigIntegerField(default=0)  # cached ones included
    completion_tokens = models.BigIntegerField(default=0)
    cached_tokens = models.BigIntegerField(default=0)
    calls = models.IntegerField(default=0)
    reported_cost = models.FloatField(null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tape", "phase_index", "model"], name="phaseusage_tape_phase_model"
            )
        ]


class Turn(models.Model):
    """A turn of a tape (tapes.turn_tally): where it starts, and its first and last known times."""

    tape = models.ForeignKey(Tape, on_delete=models.CASCADE, related_name="turn_rows", db_index=False)
    number = models.IntegerField()  # 1, 2, ... in file order
    first_pos = models.IntegerField()
    # Microseconds since the epoch (UTC), as the packed entries keep their dates: thousands of turns a
    # tape are written as plain integers. ended_us null: no dated entry of its own yet.
    started_us = models.BigIntegerField(null=True)
    ended_us = models.BigIntegerField(null=True)
    # What the tally needs of the rows before the next batch (turn_tally.TurnTally): the tape's last
    # turn can go on in the next append.
    carry = models.SmallIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tape", "number"], name="turn_tape_number")]


class SavedView(models.Model):
    """A filter and sort of the session index that one person named: their preference, not derived.

    `query` holds only the index's known parameters, as `TapeListForm.saved_query()` rebuilt them.
    """

    user = models.ForeignKey("auth.User", on_delete=models.CASCADE, related_name="saved_views")
    name = models.CharField(max_length=100)
    query = models.CharField(max_length=2000, blank=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["user", "name"], name="savedview_user_name")]

    def __str__(self) -> str:
        return self.name


class Indexer(models.Model):
    """The heartbeat of `tapeview index --watch` (one row per host): pages leave the scans of their
    host's sources to it while it beats (another host's watcher does not index this host's files).

    Derived like the index. A table rather than a cache, so every process and engine reads it alike.
    """

    # It beats every few seconds, also mid-pass; one this quiet is gone.
    GONE_AFTER = timedelta(seconds=30)

    host = models.CharField(max_length=255, unique=True, default="")
    started_at = models.DateTimeField()
    beat_at = models.DateTimeField(null=True)  # null: stopped cleanly
    pass_at = models.DateTimeField(null=True)  # when it last completed a pass over every source
    mode = models.CharField(max_length=20, blank=True)  # notifications | polling
    pid = models.IntegerField(default=0)


class SourceSize(models.Model):
    """The bytes of a source's tape files as discovery or the watcher last saw them (no stat per page)."""

    host = models.CharField(max_length=255, default="")
    source = models.CharField(max_length=100)
    files = models.IntegerField(default=0)
    total_bytes = models.BigIntegerField(default=0)
    seen_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["host", "source"], name="sourcesize_host_source")]


class SourceFolder(models.Model):
    """The folder a source of a host reads, under the label it has now: a source given another label
    is told by its folder (discovery.follow_relabels), so its rows follow it rather than doubling."""

    host = models.CharField(max_length=255, default="")
    source = models.CharField(max_length=100)
    kind = models.CharField(max_length=20)
    folder = models.CharField(max_length=4096)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["host", "source"], name="sourcefolder_host_source")]


def db_text(value: object) -> object:
    """A value as a database keeps it: U+0000, which a file's JSON may hold ("\\u0000") and
    PostgreSQL's text cannot, made U+FFFD (on SQLite too, so both keep the same)."""
    if type(value) is str and "\x00" in value:
        return value.replace("\x00", "\ufffd")
    return value


STATE_PREVIEW = 300  # characters of an anchor's state kept in its row


def state_preview(state: object) -> str:
    """An anchor's state as its row keeps it: the start of its JSON, "" for none."""
    return python_json.dumps(state).decode()[:STATE_PREVIEW] if state else ""
