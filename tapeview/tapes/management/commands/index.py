"""`tapeview index [--watch] [SOURCE ...]`: bring the index up to date (a progress bar on a terminal),
and with --watch keep it so as the agents write."""

from __future__ import annotations

import signal
import sys
import threading

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from tapeview.sources import SourceSpecError, parse_sources
from tapeview.tapes import discovery, filecopy, signals
from tapeview.tapes.models import Tape, this_host
from tapeview.tapes.watcher import Watcher

from ._schema import migrate


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
    # A fleet's copies of the files, in a pass of their own behind the index (as the watcher's).
    filecopy.keep_tapes(Tape.objects.filter(host=this_host(), source__in=[s.label for s in specs]))
    # The memory app brings its stores up to date too: a version seen now is kept, so history
    # survives the agent's rewrites.
    signals.sources_indexed.send(sender=discovery.SyncReport, specs=specs)
    signals.indexer_idle.send(sender=discovery.SyncReport, budget=None)  # search catches up: until done
    for problem in report.problems:
        stdout.write(f"problem: {problem}")
    stdout.write(f"{report.tapes} tapes, {report.indexed} indexed, {report.removed} gone")
    return report


class Command(BaseCommand):
    help = "Index the tapes of the given sources (default: the configured ones)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("sources", nargs="*", help="[LABEL=]KIND:PATH, e.g. bub:~/.bub/tapes")
        add_watch_options(parser)
        parser.add_argument(
            "--watch", action="store_true", help="keep indexing as the files change, until Ctrl-C"
        )

    def handle(
        self, *args, sources: list[str], watch: bool, polling: bool, full_every: float, **options
    ) -> None:
        specs = sources_from(sources)
        migrate()  # a fleet's watcher may be the first to reach a new database
        if not watch:
            run_index(specs, self.stdout)
            return
        stop = threading.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: stop.set())
        watcher = Watcher(specs, stop, full_every=full_every, polling=polling)
        self.stdout.write(f"watching {len(specs)} source(s) by {watcher.mode} (Ctrl-C to stop)")
        self.stdout.flush()
        watcher.run()
        self.stdout.write("stopped watching")


def add_watch_options(parser) -> None:
    parser.add_argument(
        "--polling",
        action="store_true",
        help="look at the files every 300 ms instead of using notifications (also TAPEVIEW_WATCH_POLLING=1)",
    )
    parser.add_argument(
        "--full-every",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="a full pass over every source this often, as a safety net (default 300)",
    )
