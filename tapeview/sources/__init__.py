"""Plain-Python readers of agent files, one module per source kind (no Django here)."""

from __future__ import annotations

from pathlib import Path

from . import araliya, bub, folders, nanobot, yachiyo
from .contract import Reader
from .model import (
    AgentStopped,
    AppendState,
    ContextMessage,
    Entry,
    FileChanging,
    FileUnreadable,
    TapeBusy,
    TapeFile,
    TapeMoved,
    TapeNotFound,
    WriteFailed,
)
from .paths import Refusal
from .spec import UNKNOWN, SourceSpec, SourceSpecError
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
    """Source specifications; a bare PATH gets the kind its content shows (else UNKNOWN)."""
    return _parse_sources(items, detect)


def unread_folders(spec: SourceSpec) -> list[Refusal]:
    """The subfolders of a source that its reader does not look into, and why."""
    if not spec.known:
        return []
    return folders.unread(spec.path, spec.kind, detect)


def found_below(path: Path) -> list[str]:
    """`KIND:PATH` of the agent files at `path` itself, else of the folders below it that hold some."""
    kind = detect(path)
    return [f"{kind}:{path}"] if kind else [f"{k}:{p}" for k, p in folders.sources_below(path, detect)]


def undetected(spec: SourceSpec) -> str:
    """What to tell the user about a bare path whose kind cannot be told."""
    below = [f"{kind}:{path}" for kind, path in folders.sources_below(spec.path, detect)]
    hint = f"; sources below it: {', '.join(below)}" if below else ""
    kinds = ", ".join(KINDS)
    return f"cannot tell what {spec.path} holds, so nothing in it is read: write KIND:PATH ({kinds}){hint}"


__all__ = [
    "AgentStopped",
    "AppendState",
    "ContextMessage",
    "Entry",
    "FileChanging",
    "FileUnreadable",
    "KINDS",
    "Reader",
    "SourceSpec",
    "SourceSpecError",
    "TapeBusy",
    "TapeMoved",
    "TapeFile",
    "Refusal",
    "TapeNotFound",
    "UNKNOWN",
    "WriteFailed",
    "detect",
    "parse_sources",
    "reader",
    "undetected",
    "unread_folders",
]
