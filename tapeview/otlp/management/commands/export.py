"""`tapeview export`: tapes sent once to an OTLP/HTTP collector, or one tape written as JSONL, Markdown, OTLP.

tapeview export --otlp URL [SOURCE|TAPE ...]
tapeview export TAPE --format jsonl|md|otlp [--output FILE]
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from tapeview.otlp import delivery
from tapeview.otlp.spans import otlp_json
from tapeview.sources import SourceSpec, SourceSpecError, TapeNotFound, parse_sources
from tapeview.tapes import discovery, export, index
from tapeview.tapes.management.commands._schema import migrate
from tapeview.tapes.models import Tape, this_host

FORMATS = ("jsonl", "md", "otlp")


class Command(BaseCommand):
    help = "Send tapes to an OTLP/HTTP collector as traces (--otlp), or write one tape as jsonl, md or otlp."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "targets",
            nargs="*",
            metavar="SOURCE|TAPE",
            help="a configured source's label, a [LABEL=]KIND:PATH, or a tape's key or name",
        )
        parser.add_argument("--otlp", metavar="URL", help="the collector, e.g. http://localhost:4318")
        parser.add_argument("--format", choices=FORMATS, help="write the one TAPE in this format")
        parser.add_argument("--output", metavar="FILE", help="write to FILE instead of standard output")

    def handle(
        self, *args, targets: list[str], otlp: str | None, format: str | None, output: str | None, **_
    ) -> None:
        migrate()
        if otlp and (format or output):
            raise CommandError("--otlp sends to a collector: --format and --output write a file instead")
        if otlp:
            self._send(otlp, targets)
            return
        if len(targets) != 1:
            raise CommandError("name one tape to write (its key or name), or send tapes with --otlp URL")
        tape = _tape(targets[0])
        if tape is None:
            raise CommandError(f"no tape has the key or name {targets[0]!r}")
        self._write(tape, format or "jsonl", output)

    def _send(self, url: str, targets: list[str]) -> None:
        try:
            out = delivery.exporter(url)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        turns = spans = 0
        tapes = list(_tapes(targets))
        try:
            for tape in tapes:
                for batch in delivery.everything(tape, delivery.content()):
                    delivery.send(out, batch)
                    spans += len(batch)
                    turns += sum(1 for s in batch if s.parent is None)
        except delivery.CollectorDown as exc:
            raise CommandError(f"{exc} ({turns} turns sent before)") from None
        finally:
            out.shutdown()
        self.stdout.write(
            f"{len(tapes)} tapes: {turns} turns, {spans} spans sent to {delivery.endpoint(url)}"
        )

    def _write(self, tape: Tape, fmt: str, output: str | None) -> None:
        try:
            chunks = _otlp_lines(tape) if fmt == "otlp" else export.export(tape, fmt).chunks
            if output:
                _write_file(Path(output), chunks)
            else:
                stream = getattr(self.stdout._out, "buffer", None)
                for chunk in chunks:
                    if stream is not None:
                        stream.write(chunk)
                    else:
                        self.stdout.write(chunk.decode(errors="replace"), ending="")
                if stream is not None:
                    stream.flush()
        except TapeNotFound as exc:
            raise CommandError(f"{tape.label}: {exc.detail}") from None
        except OSError as exc:
            raise CommandError(f"{output}: {exc.strerror or exc}") from None


def _otlp_lines(tape: Tape) -> Iterator[bytes]:
    for batch in delivery.everything(tape, delivery.content()):
        yield otlp_json(batch)


def _write_file(path: Path, chunks: Iterable[bytes]) -> None:
    """Written beside the file and renamed over it: an export that fails leaves no half file."""
    part = path.with_name(f".{path.name}.part")
    try:
        with part.open("wb") as f:
            for chunk in chunks:
                f.write(chunk)
        os.replace(part, path)
    finally:
        part.unlink(missing_ok=True)


def _tape(name: str) -> Tape | None:
    """This host's tape with this key, or else the one with this name; indexed up to date."""
    mine = Tape.objects.filter(host=this_host())
    found = mine.filter(key=name).first() or mine.filter(name=name).order_by("pk").first()
    if found is None and not mine.exists():
        # Nothing indexed yet: index the configured sources, then look again.
        for spec in _specs([]):
            _indexed(spec)
        found = mine.filter(key=name).first() or mine.filter(name=name).order_by("pk").first()
    if found is not None:
        index.refresh(found)
    return found


def _tapes(targets: list[str]) -> Iterator[Tape]:
    """The tapes the targets name: every tape of a source (indexed first), or one tape."""
    configured = {s.label: s for s in _specs([])}
    if not targets:
        for spec in configured.values():
            yield from _indexed(spec)
        return
    for target in targets:
        if target in configured:
            yield from _indexed(configured[target])
            continue
        tape = _tape(target)
        if tape is not None:
            yield tape
        elif ":" in target:
            yield from (t for spec in _specs([target]) for t in _indexed(spec))
        else:
            raise CommandError(f"no source or tape is named {target!r} (sources: {', '.join(configured)})")


def _specs(items: list[str]) -> list[SourceSpec]:
    try:
        return parse_sources(items) if items else discovery.configured_sources()
    except SourceSpecError as exc:
        raise CommandError(str(exc)) from None


def _indexed(spec: SourceSpec) -> list[Tape]:
    if not spec.known or not spec.path.exists():
        print(f"{spec.label}: {spec.path} is not read", file=sys.stderr)
        return []
    tapes, _, _, _ = discovery.discover(spec)
    for tape in tapes:
        index.refresh(tape)
    return tapes
