"""Plain-Python readers of agent files, one module per source kind (no Django here)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from . import araliya, bub, nanobot, yachiyo
from .model import ContextMessage, Entry, TapeBusy, TapeFile, TapeNotFound
from .spec import SourceSpec, SourceSpecError
from .spec import parse_sources as _parse_sources

KINDS: dict[str, ModuleType] = {"bub": bub, "nanobot": nanobot, "yachiyo": yachiyo, "araliya": araliya}


def reader(kind: str) -> ModuleType:
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
    "ContextMessage",
    "Entry",
    "KINDS",
    "SourceSpec",
    "SourceSpecError",
    "TapeBusy",
    "TapeFile",
    "TapeNotFound",
    "detect",
    "parse_sources",
    "reader",
]
