"""The adapter of yachiyo's memory.json."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from tapeview.tapes import rows as index_rows
from tapeview.tapes.models import Tape
from tapeview.tapes.timeline import read_rows

from ..history import LineOrigin, Source
from ..models import MemoryStore
from ..stores import yachiyo_memory
from ..stores.model import Snapshot
from ..stores.yachiyo_memory import MemoryEntry
from .base import StoreKind, parse_time


class YachiyoMemory(StoreKind):
    """yachiyo's memory.json: entries added, edited and deleted by the gateway's own rules."""

    names = (yachiyo_memory.KIND,)
    partial = "memory_admin/_yachiyo.html"

    def read(self, store: MemoryStore) -> Snapshot:
        return yachiyo_memory.read(store.ref())

    def line_origins(self, store: MemoryStore, snap: Snapshot) -> list[LineOrigin | None]:
        """Each entry's lines by its own record: the session and trace of the `memory_write` that wrote it.

        The gateway never changes an entry's content after adding it (a merge only adds keywords and
        moves updated_at), so its content lines date from created_at and its keywords from updated_at.
        A merge also replaces the session and trace: they name the entry's last write.
        """
        traces = _Traces(store.source)
        out: list[LineOrigin | None] = []
        for n, (entry, block) in enumerate(yachiyo_memory.blocks(store.ref())):
            source, note = traces.call_of(entry)
            made = LineOrigin(parse_time(entry.created_at), source, note)
            # An entry comes with the blank line before it (blocks are a blank line apart).
            out += [made] * (len(block.splitlines()) - 1 + (n > 0))
            out.append(LineOrigin(parse_time(entry.updated_at), source, note))
        return out

    def export_content(self, snap: Snapshot) -> dict:
        fields = ("id", "content", "created_at", "updated_at", "source_session_id", "source_trace_id")
        return {
            "entries": [
                {**{f: getattr(e, f) for f in fields}, "keywords": list(e.keywords)} for e in snap.items
            ]
        }

    def apply(self, store: MemoryStore, action: str, base_version: str, **params) -> None:
        ref, now = store.ref(), datetime.now(UTC)
        operations: dict[str, Callable[[], object]] = {
            "add": lambda: yachiyo_memory.add_entry(
                ref, params["content"], params["keywords"], base_version, now=now
            ),
            "edit": lambda: yachiyo_memory.edit_entry(
                ref, params["entry_id"], params["content"], params["keywords"], base_version, now=now
            ),
            "delete": lambda: yachiyo_memory.delete_entry(ref, params["entry_id"], base_version, now=now),
        }
        operations[action]()


class _Traces:
    """The `memory_write` tool calls of yachiyo's sessions, as the tape index has them (read once each)."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.calls: dict[str, tuple[Tape | None, list]] = {}

    def call_of(self, entry: MemoryEntry) -> tuple[Source | None, str]:
        sid = entry.source_session_id
        if not sid:
            return None, "yachiyo recorded no session for this entry"
        if sid not in self.calls:
            self.calls[sid] = self._read(sid)
        tape, calls = self.calls[sid]
        if tape is None:
            return None, f"memory_write in session {sid} (not in the tape index)"
        wanted = entry.metadata.get("call_id")
        for call in calls:
            if call.meta.get("trace_id") == entry.source_trace_id and (
                not wanted or wanted in (call.meta.get("call_ids") or ())
            ):
                return Source(tape.key, call.pos), f"memory_write in session {sid}"
        return Source(tape.key), f"memory_write in session {sid} (its trace is not in the session)"

    def _read(self, sid: str) -> tuple[Tape | None, list]:
        tapes = Tape.objects.filter(kind="yachiyo", name=sid)
        tape = tapes.filter(source=self.source).first() or tapes.first()
        if tape is None:
            return None, []
        rows = index_rows.of(tape).where(kinds=("tool_call",), name_contains="memory_write")
        return tape, read_rows(tape, rows.all())
