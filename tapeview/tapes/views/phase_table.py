"""The phase table beside a tape's timeline and its bars, drawn once per state of the tape's index;
each row of the table drawn once for what it shows."""

from __future__ import annotations

import hashlib
import pickle

from django.core.cache import cache
from django.http import HttpRequest, QueryDict
from django.template.loader import render_to_string
from django.utils.safestring import SafeString, mark_safe

from .. import costs, phases, pictures, prices, usage
from ..forms import PhaseSortForm
from ..models import Tape

PHASE_ROWS = 100
ROWS_SECONDS = 600


def phase_table(request: HttpRequest, tape: Tape, query: QueryDict | None = None) -> dict:
    """The phase table's rows in the order asked (`?psort=`) and the phase bars, drawn; `query`:
    the page's own query, where the request is not the page's (its live end's), for the links."""
    query = request.GET if query is None else query
    form = PhaseSortForm(query)
    sort = form.current_sort()
    # The phases are kept by the indexer on the anchor rows: they change only as the index does.
    also = (sort, tape.phase_count, tape.lead_phase, prices.current().digest)
    table = pictures.cached("phase-table", tape, lambda: _drawn(tape, sort), also)
    return {
        **table,
        "phase_columns": form.columns(),
        "phase_sort": sort,
        "phase_query": query,
        "phase_total": phases.count(tape),
        "usage_note": usage.phase_note(tape.kind),
    }


def _drawn(tape: Tape, sort: str) -> dict:
    """Up to a hundred rows of a long tape's phases, and the bars of its first phases (tokens and
    cache hit rate, tapes.pictures.phase_bars)."""
    rows = phases.ranked(tape, sort, PHASE_ROWS)
    spent = costs.of_phases(tape, [p.index for p in rows])
    digests = [_digest(tape, p, spent.get(p.index)) for p in rows]
    every = len(rows) < PHASE_ROWS and all(p.anchor is None or p.anchor.phase_index for p in rows)
    if sort == "index" and every:
        # All of them, in file order: what in_order would read.
        first, shown = rows[: pictures.PHASE_BARS], digests[: pictures.PHASE_BARS]
    else:
        first, _ = phases.in_order(tape, limit=pictures.PHASE_BARS)
        shown = [_digest(tape, p) for p in first]
    return {
        "phase_rows_html": _rows_html(tape, sort, rows, digests, spent),
        "phase_shown": len(rows),
        "tokens_known": any(p.tokens is not None for p in rows),
        "phase_left_out": phases.left_out(tape),
        "phase_bars_svg": _bars(tape, first, shown),
    }


def _bars(tape: Tape, first: list[phases.Phase], digests: list[str]) -> SafeString:
    """The phase bars (tapes.pictures.phase_bars) of these phases, drawn again only when a phase
    they show or the count of phases changes: an append that grows a phase past the first ones
    shown, the most often, leaves them as they were."""
    total = phases.count(tape)
    digest = hashlib.blake2b(repr((digests, total)).encode(), digest_size=20).hexdigest()
    key = f"tapeview:pictures:phase-bars:{tape.pk}"
    kept = cache.get(key)
    if kept is not None and kept[0] == digest:
        return mark_safe(kept[1])  # drawn as SVG by pictures.phase_bars: safe
    svg = pictures.phase_bars(first, total)
    cache.set(key, (digest, str(svg)), ROWS_SECONDS)
    return svg


def _rows_html(
    tape: Tape, sort: str, rows: list[phases.Phase], digests: list[str], spent: dict[int, costs.Cost]
) -> SafeString:
    """The rows drawn (`tapes/_phase_rows.html`, one row at a time), each kept by a digest of what
    it shows: an append changes the phase the tape ends in, and the rows of the others are drawn
    as before. The rows kept are those of the table drawn last in this order."""
    key = f"tapeview:pictures:phase-rows:{tape.pk}:{sort}"
    kept = cache.get(key) or {}
    drawn = {}
    for p, digest in zip(rows, digests, strict=True):
        found = kept.get(digest)
        if found is None:
            found = render_to_string(
                "tapes/_phase_rows.html", {"tape": tape, "phase_rows": [p], "phase_cost": spent.get(p.index)}
            )
        drawn[digest] = found
    if drawn.keys() != kept.keys():
        cache.set(key, drawn, ROWS_SECONDS)
    # In the rows' order: each row's digest is its own (its index). Drawn by the template: safe.
    return mark_safe("".join(drawn.values()))


def _digest(tape: Tape, p: phases.Phase, cost: costs.Cost | None = None) -> str:
    """A digest of everything a row is drawn from: the phase, its anchor's place and name, the tape's
    key (its links)."""
    anchor = (p.anchor.pos, p.anchor.name) if p.anchor is not None else None
    shown = (
        tape.key,
        p.index,
        anchor,
        p.start_pos,
        p.end_pos,
        p.entries,
        p.started_at,
        p.ended_at,
        p.prompt_tokens,
        p.completion_tokens,
        p.cached_tokens,
        p.tool_calls,
        p.errors,
        p.model,
        p.roles,
        None if cost is None else (cost.usd, cost.source),
    )
    return hashlib.blake2b(pickle.dumps(shown, protocol=5), digest_size=20).hexdigest()
