"""The adapter of an araliya session's kv.json."""

from __future__ import annotations

from collections.abc import Callable

from django import forms

from ..history import LineOrigin
from ..models import MemoryStore
from ..stores import araliya_kv
from ..stores.model import Snapshot
from .base import StoreKind, parse_time

NO_TRACE = "araliya records no trace of the turn that set a key"


class AraliyaKv(StoreKind):
    """An araliya session's kv.json: values set and deleted with the agent's cap and eviction."""

    names = (araliya_kv.KIND,)
    partial = "memory_admin/_kv.html"
    blame_note = (
        f"Each line: author agent, source unknown: {NO_TRACE}. kv.json keeps a value and (in its first "
        "layout only) the time it was set; transcript.md keeps the messages, not which turn called "
        "kv_set. Writes made through Tapeview are named, with their audit row."
    )

    def read(self, store: MemoryStore) -> Snapshot:
        return araliya_kv.read(store.ref())

    def page_context(self, store: MemoryStore, snap: Snapshot, filters: forms.Form) -> dict:
        return {"kv_summary": araliya_kv.summary_of(store.ref())}

    def line_origins(self, store: MemoryStore, snap: Snapshot) -> list[LineOrigin | None]:
        """The lines of each key dated by its `ts`, where kv.json keeps one; never a source."""
        stamps = araliya_kv.stamps(store.ref())
        out: list[LineOrigin | None] = []
        for pair in snap.items:
            origin = LineOrigin(parse_time(stamps.get(pair.key)), None, NO_TRACE)
            out += [origin] * len(araliya_kv.render([pair]).splitlines())
        return out

    def export_content(self, snap: Snapshot) -> dict:
        return {"pairs": [{"key": pair.key, "value": pair.value} for pair in snap.items]}

    def apply(self, store: MemoryStore, action: str, base_version: str, **params) -> None:
        ref = store.ref()
        operations: dict[str, Callable[[], object]] = {
            "set": lambda: araliya_kv.set_value(ref, params["key"], params["value"], base_version),
            "delete": lambda: araliya_kv.delete_value(ref, params["key"], base_version),
        }
        operations[action]()
