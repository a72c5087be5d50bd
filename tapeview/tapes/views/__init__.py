"""Tape pages, one module per page family: the session index, a tape's timeline and its pages, the handoff."""

from . import compare, prices
from .handoff import tape_handoff
from .lineage import tape_lineage
from .sessions import source_list, tape_list
from .timeline import entry_detail, entry_raw, tape_context, tape_detail, tape_export
from .turns import tape_conversation, tape_turns

__all__ = [
    "compare",
    "entry_detail",
    "entry_raw",
    "prices",
    "source_list",
    "tape_context",
    "tape_conversation",
    "tape_detail",
    "tape_export",
    "tape_handoff",
    "tape_lineage",
    "tape_list",
    "tape_turns",
]
