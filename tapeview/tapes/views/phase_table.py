"""The phase table beside a tape's timeline, its rows drawn once per state of the tape's index."""

from __future__ import annotations

from django.http import HttpRequest
from django.template.loader import render_to_string

from .. import phases, pictures
from ..forms import PhaseSortForm
from ..models import Tape

PHASE_ROWS = 100


def phase_table(request: HttpRequest, tape: Tape) -> dict:
    form = PhaseSortForm(request.GET)
    sort = form.current_sort()
    # The phases are kept by the indexer on the anchor rows: they change only as the index does.
    also = (sort, tape.phase_count, tape.lead_phase)
    table = pictures.cached("phase-table", tape, lambda: _phase_rows(tape, sort), also)
    return {
        **table,
        "phase_columns": form.columns(),
        "phase_total": phases.count(tape),
        "usage_note": phases.USAGE_NOTES.get(tape.kind, ""),
    }


def _phase_rows(tape: Tape, sort: str) -> dict:
    """The phase table's rows drawn (`tapes/_phase_rows.html`): up to a hundred rows of a long tape."""
    rows = phases.ranked(tape, sort, PHASE_ROWS)
    return {
        "phase_rows_html": render_to_string("tapes/_phase_rows.html", {"tape": tape, "phase_rows": rows}),
        "phase_shown": len(rows),
        "tokens_known": any(p.tokens is not None for p in rows),
    }
