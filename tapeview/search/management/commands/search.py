"""`tapeview search QUERY [--kind K] [--source S] [--since DAY] [--limit N] [--json] [--url URL --token T]`:
the API's search, printed as grep prints: `tape:position: [label] snippet`, exit 1 when nothing matches."""

from __future__ import annotations

import json
import sys

from django.core.management.base import BaseCommand
from django.db import DatabaseError, connection
from ninja.errors import HttpError
from ninja.responses import NinjaJSONEncoder
from pydantic import ValidationError

from tapeview.search.api import HitPageOut, SearchFilters, hit_page
from tapeview.search.models import SearchedTape
from tapeview.tapes.terminal import add_options, pipe_closed, refuse, remote_from

NONE_FOUND = 1  # grep's status when nothing matches
MARK = ("\033[1;31m", "\033[0m")  # grep's colour for a match, on a terminal only


class Command(BaseCommand):
    help = "Search every entry of every tape, as the API's /api/search does; print tape:position: snippet."
    requires_system_checks = []  # a reading command: it answers at once

    def add_arguments(self, parser) -> None:
        parser.add_argument("query", metavar="QUERY", help="words, or a phrase in quotes: '\"exit code\"'")
        parser.add_argument(
            "--kind", action="append", default=[], help="only entries of this kind (repeat, or a,b)"
        )
        parser.add_argument("--source", help="only this source's tapes (its label)")
        parser.add_argument("--since", metavar="YYYY-MM-DD", help="only entries of this day (UTC) or later")
        parser.add_argument(
            "--filter", metavar="EXPR", help="only the tapes it keeps: the session index's filter language"
        )
        parser.add_argument(
            "--limit", type=int, default=50, help="at most this many hits (default 50, up to 500)"
        )
        parser.add_argument("--json", action="store_true", help="print the API's JSON answer instead")
        add_options(parser)

    def handle(self, *args, query: str, kind: list[str], source: str | None, since: str | None, **options):
        params = {
            "q": query,
            "kinds": ",".join(kind) or None,
            "source": source,
            "since": since,
            "filter": options.get("filter"),
            "limit": options["limit"],
        }
        remote = remote_from(options)
        if remote is not None:
            text = remote.get_text("search", **params)
            page = json.loads(text)
        else:
            page = HitPageOut.model_validate(_local(params)).model_dump()
            text = json.dumps(page, cls=NinjaJSONEncoder)
        try:
            self.print_page(page, text, options)
        except BrokenPipeError:
            pipe_closed()
        if not page["items"]:
            sys.exit(NONE_FOUND)

    def print_page(self, page: dict, text: str, options: dict) -> None:
        if options["json"]:
            self.stdout.write(text)
            return
        colour = sys.stdout.isatty() and not options.get("no_color")
        for hit in page["items"]:
            self.stdout.write(f"{hit['tape_id']}:{hit['pos']}: [{hit['tape_label']}] {_snippet(hit, colour)}")
        self.stdout.flush()
        if page["next_cursor"]:
            shown, total = len(page["items"]), page["total"]
            more = f"{total}{'+' if page['total_capped'] else ''}"
            sys.stderr.write(f"{shown} of {more} matching entries shown (--limit for more)\n")


def _local(params: dict) -> dict:
    try:
        filters = SearchFilters(**{k: v for k, v in params.items() if v is not None})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = {"q": "QUERY", "kinds": "--kind"}.get(str(first["loc"][0]), f"--{first['loc'][0]}")
        raise refuse(f"{where}: {first['msg']}") from None
    try:
        if SearchedTape._meta.db_table not in connection.introspection.table_names():
            raise refuse("no index here yet: run `tapeview index` (or `tapeview serve`) first")
        return hit_page(filters)
    except HttpError as exc:  # a filter that does not parse: where, and what was expected
        raise refuse(f"--{exc}") from None
    except DatabaseError as exc:
        raise refuse(f"the index refused the search: {exc}") from None


def _snippet(hit: dict, colour: bool) -> str:
    text = hit["snippet"]
    if colour:
        # From the end, so the offsets before each mark stay right.
        for start, end in sorted(hit["highlights"], reverse=True):
            text = text[:start] + MARK[0] + text[start:end] + MARK[1] + text[end:]
    return " ".join(text.split())
