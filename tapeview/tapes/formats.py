"""What a user must know about a Bub tape's line format: 0.5.1's beside the next release's."""

from __future__ import annotations

from tapeview.sources.bub_next import OLD
from tapeview.sources.bub_next_lines import FORMAT

from . import pictures
from .models import Tape

CANNOT_APPEND = (
    "Bub's new release cannot append to this tape: it reads only its own format, refuses a tape of Bub "
    "0.5.1's lines whole, and its next turn in this session fails without writing anything."
)


def note(tape: Tape) -> str:
    """What the tape's format means for its agent, or "" when nothing is amiss."""
    if tape.kind != "bub":
        return ""
    if tape.foreign_line is not None and tape.line_format == FORMAT:
        return (
            f"Line {tape.foreign_line} is written in Bub 0.5.1's format: Bub's next release refuses this "
            "whole tape because of it (it can neither read it nor append to it)."
        )
    if tape.foreign_line is not None:
        return (
            f"Line {tape.foreign_line} is written in Bub's next format: Bub 0.5.1 skips it, and Bub's "
            f"next release cannot read this tape. {CANNOT_APPEND}"
        )
    # Kept with the tape's pictures (until its index changes, or ten minutes): one query a page less.
    upgraded = tape.line_format == OLD and tape.role == "tape"
    if upgraded and pictures.cached("bub-next-beside", tape, lambda: _upgraded(tape)):
        return CANNOT_APPEND
    return ""


def _upgraded(tape: Tape) -> bool:
    """Bub's next release writes in the tape's folder: the session's next turn will be its."""
    return Tape.objects.filter(host=tape.host, source=tape.source, line_format=FORMAT).exists()
