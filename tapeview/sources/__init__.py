"""Plain-Python readers of agent files, one module per source kind (no Django here)."""

from __future__ import annotations

from pathlib import Path

from . import araliya, bub, nanobot, yachiyo
from .contract import Reader
from .model import (
    AgentStopped,
    AppendState,
    ContextMessage,
    Entry,
    TapeBusy,
    TapeFile,
    TapeNotFound,
    WriteFailed,
)
from .spec import SourceSpec, SourceSpecError
from .spec import parse_sources as _parse_sources

KINDS: dict[str, Reader] = {"bub": bub, "nanobot": nanobot, "yachiyo": yachiyo, "araliya": araliya}


def reader(kind: str) -> Reader:
    """The module that reads sources of a kind."""
    try:
        return KINDS[kind]
    except KeyError:
        raise SourceSpecError(f"unknown source kind {kind!r} (known: {', '.join(KINDS)})") from None


def detect(path: Path) -> str | None:
    """The kind of agent files a folder holds, or None."""
    return next((kind for kind, module in KINDS.items() if module.detect(path)), None)


def parse_sources(items: list[str] | str) -> list[SourceSpec]:
    """Source specifications; a bare PATH gets the kind its content shows."""
    return _parse_sources(items, detect)


__all__ = [
    "AgentStopped",
    "AppendState",
    "ContextMessage",
    "Entry",
    "KINDS",
    "Reader",
    "SourceSpec",
    "SourceSpecError",
    "TapeBusy",
    "TapeFile",
    "TapeNotFound",
    "WriteFailed",
    "detect",
    "parse_sources",
    "reader",
]
