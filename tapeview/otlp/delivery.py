"""A tape's turns read through the index, turned into spans, and sent to an OTLP/HTTP collector.

`everything` is what `tapeview export` sends or writes: every turn, the last one even unfinished.
`pending` is what the indexer's export sends: the complete turns after those it has sent (`Sent`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult

from tapeview.sources import Entry, reader
from tapeview.tapes import copy_reader, timeline
from tapeview.tapes import turns as tape_turns
from tapeview.tapes.models import Tape
from tapeview.tapes.turns import Position, Turn

from .models import Sent
from .spans import Session, spans

BATCH = 500  # entries read from the index at a time
TURNS_PER_REQUEST = 100  # a request's turns: a few hundred spans, far below a collector's size limit
TIMEOUT = 5.0  # seconds one send may take, its own retries included (then the caller backs off)


class CollectorDown(Exception):
    """The collector did not take the spans (unreachable, or it answered with an error)."""


def endpoint(url: str) -> str:
    """The traces URL of a collector named by its base URL (http://host:4318) or by the full one."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"{url!r} is no http:// or https:// URL of an OTLP/HTTP collector")
    return url.strip() if parts.path.strip("/") else url.strip().rstrip("/") + "/v1/traces"


def exporter(url: str) -> OTLPSpanExporter:
    return OTLPSpanExporter(endpoint=endpoint(url), timeout=TIMEOUT)


def send(out: OTLPSpanExporter, batch: list[ReadableSpan]) -> None:
    if batch and out.export(batch) is not SpanExportResult.SUCCESS:
        raise CollectorDown(f"the collector at {out._endpoint} did not take {len(batch)} spans")


def session(tape: Tape, generation: str) -> Session:
    return Session(
        host=tape.host,
        source=tape.source,
        rel=tape.rel,
        kind=tape.kind,
        name=tape.name,
        label=tape.label,
        key=tape.key,
        generation=generation,
        fallback=tape.last_at or tape.indexed_at,
    )


def entries(tape: Tape, after: int = 0) -> Iterator[Entry]:
    """The tape's indexed entries after position `after`, in file order, a batch at a time."""
    while True:
        rows = timeline.find_rows(tape, after=after, limit=BATCH)
        if not rows:
            return
        yield from sorted(timeline.read_rows(tape, rows), key=lambda e: e.pos)
        after = rows[-1].pos


PROGRESS = ("generation", "turns", "next_pos", "phase", "model")  # the fields of Sent that a batch moves


@dataclass
class Batch:
    """Turns to send as one request, and where the tape's sending stands once they are sent."""

    spans: list[ReadableSpan]
    turns: int
    progress: dict


def everything(tape: Tape, content: bool) -> Iterator[list[ReadableSpan]]:
    """Every turn of the tape as spans, TURNS_PER_REQUEST turns at a time."""
    with copy_reader.reading(tape.host):
        found = tape_turns.read(reader(tape.kind), entries(tape))
        first = next(found, None)
        if first is None:
            return
        meta = session(tape, _generation(tape, first))
        chunk: list[Turn] = [first]
        for turn in found:
            chunk.append(turn)
            if len(chunk) == TURNS_PER_REQUEST:
                yield spans(meta, chunk, content)
                chunk = []
        if chunk:
            yield spans(meta, chunk, content)


def pending(tape: Tape, sent: Sent, content: bool) -> Iterator[Batch]:
    """The complete turns not sent yet, TURNS_PER_REQUEST at a time, each with the state after it.

    An append-only tape is read from where its first unsent turn begins; a file that the agent
    rewrites is read whole (its positions may move) and its sent turns passed over."""
    state = Sent(**{name: getattr(sent, name) for name in PROGRESS})
    with copy_reader.reading(tape.host):
        source = reader(tape.kind)
        if tape.append_only:
            if state.generation != tape.head:  # a reset (or a first look): from the first turn
                state.generation, state.turns, state.next_pos, state.phase, state.model = (
                    tape.head,
                    0,
                    1,
                    "",
                    "",
                )
            at = Position(state.turns, state.phase, state.model)
            found = tape_turns.read(source, entries(tape, after=state.next_pos - 1), at)
        else:
            found = tape_turns.read(source, entries(tape))
            first = next(found, None)
            if first is None:
                return
            generation = first.fingerprint
            if state.generation != generation:
                state.generation, state.turns = generation, 0
            found = (t for t in [first, *found] if t.number > state.turns)
        meta = session(tape, state.generation)
        chunk: list[Turn] = []
        for turn in found:
            if not turn.complete:
                break
            chunk.append(turn)
            if len(chunk) == TURNS_PER_REQUEST:
                yield _batch(meta, chunk, state, content)
                chunk = []
        if chunk:
            yield _batch(meta, chunk, state, content)


def _batch(meta: Session, chunk: list[Turn], state: Sent, content: bool) -> Batch:
    last = chunk[-1]
    state.turns, state.next_pos, state.phase, state.model = (
        last.number,
        last.last_pos + 1,
        last.phase_after,
        last.model,
    )
    return Batch(spans(meta, chunk, content), len(chunk), {name: getattr(state, name) for name in PROGRESS})


def _generation(tape: Tape, first: Turn) -> str:
    return tape.head if tape.append_only else first.fingerprint


def content() -> bool:
    return bool(settings.TAPEVIEW_OTLP_CONTENT)
