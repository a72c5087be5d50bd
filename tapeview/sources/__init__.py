"""Plain-Python readers of agent files, one module per source kind (no Django here)."""

from __future__ import annotations

from types import ModuleType

from . import bub
from .model import ContextMessage, Entry, TapeFile, TapeNotFound
from .spec import SourceSpec, SourceSpecError, parse_sources

KINDS: dict[str, ModuleType] = {"bub": bub}


def reader(kind: str) -> ModuleType:
    """The module that reads sources of a kind."""
    try:
        return KINDS[kind]
    except KeyError:
        raise SourceSpecError(f"unknown source kind {kind!r} (known: {', '.join(KINDS)})") from None


__all__ = [
    "ContextMessage", "Entry", "KINDS", "SourceSpec", "SourceSpecError", "TapeFile",
    "TapeNotFound", "parse_sources", "reader",
]
