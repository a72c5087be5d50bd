"""`tapeview index [SOURCE ...]`: bring the index up to date, with a progress bar on a terminal."""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from tapeview.sources import SourceSpecError, parse_sources
from tapeview.tapes import discovery, signals


def sources_from(args: list[str]) -> list:
    try:
        return parse_sources(args) if args else discovery.configured_sources()
    except SourceSpecError as exc:
        raise CommandError(str(exc)) from None


def run_index(specs: list, stdout) -> discovery.SyncReport:
    total = discovery.pending_bytes(specs)
    with tqdm(
        total=total, unit="B", unit_scale=True, desc="indexing", disable=not sys.stderr.isatty()
    ) as bar:
        report = discovery.sync(specs, progress=bar.update)
    # The memory app brings its stores up to date too: a version seen now is kept, so history
    # survives the agent's rewrites.
    signals.sources_indexed.send(sender=discovery.SyncReport, specs=specs)
    for problem in report.problems:
        stdout.write(f"problem: {problem}")
    stdout.write(f"{report.tapes} tapes, {report.indexed} indexed, {report.removed} gone")
    return report


class Command(BaseCommand):
    help = "Index the tapes of the given sources (default: the configured ones)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("sources", nargs="*", help="[LABEL=]KIND:PATH, e.g. bub:~/.bub/tapes")

    def handle(self, *args, sources: list[str], **options) -> None:
        run_index(sources_from(sources), self.stdout)
