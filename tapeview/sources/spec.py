"""Source specifications: `bub:PATH`, `LABEL=bub:PATH`, comma-separated in TAPEVIEW_SOURCES."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from .roots import RootLink, pinned, root_link

Detector = Callable[[Path], str | None]

KNOWN_KINDS = ("bub", "nanobot", "yachiyo", "araliya")
# The kind of a bare path whose content names none: the source is kept, shown as a problem, not read.
UNKNOWN = "unknown"
_SPEC = re.compile(r"^(?:(?P<label>[\w.-]+)=)?(?:(?P<kind>[a-z]+):)?(?P<path>.+)$")


class SourceSpecError(ValueError):
    """A source specification that cannot be used."""


@dataclass(frozen=True, slots=True)
class SourceSpec:
    label: str
    kind: str
    path: Path  # the folder read: links followed (see roots.pinned)
    detected: bool = False  # the kind was told by the folder's content, not by the spec
    given: Path | None = None  # the path as configured, links not followed (None: made by code)

    @property
    def known(self) -> bool:
        return self.kind != UNKNOWN

    @property
    def configured(self) -> Path:
        return self.path if self.given is None else self.given

    def root_link(self) -> RootLink | None:
        """How the root as configured reaches the folder read, where a link is on the way (roots.py).
        A spec made by code, not parsed from a setting, is read through its links as they are now."""
        read = self.path if self.given is not None else Path(os.path.realpath(self.path))
        return root_link(self.configured, read)

    def __str__(self) -> str:
        # A source of unknown kind stays a bare path: read again, it is detected again. The path as
        # given, so a root given as a link stays one (the Sources page says where it leads).
        path = self.configured
        return f"{self.label}={self.kind}:{path}" if self.known else f"{self.label}={path}"


def parse_source(text: str, detect: Detector | None = None) -> SourceSpec:
    """One `[LABEL=]KIND:PATH` specification; a bare PATH's kind is detected from what it holds.

    A bare PATH whose kind cannot be told is kept with the kind UNKNOWN: one such folder must not
    stop the others from being served (the Sources page and `tapeview index` say what is wrong).
    """
    m = _SPEC.match(text.strip())
    if not m or not m["path"].strip() or re.fullmatch(r"[\w.-]+=", m["path"].strip()):
        raise SourceSpecError(f"cannot read source {text!r}: expected [LABEL=]KIND:PATH or a path")
    kind = m["kind"]
    if kind is not None and kind not in KNOWN_KINDS:
        raise SourceSpecError(f"unknown source kind {kind!r} in {text!r} (known: {', '.join(KNOWN_KINDS)})")
    given = Path(m["path"].strip()).expanduser().absolute()
    path = pinned(given)
    detected = kind is None
    if kind is None:
        kind = (detect(path) if detect else None) or UNKNOWN
    label = m["label"] or _default_label(path)
    return SourceSpec(label, kind, path, detected, given)


def _default_label(path: Path) -> str:
    parts = [p for p in path.parts if p not in ("/", "tapes")]
    return re.sub(r"[^\w.-]", "-", parts[-1] if parts else "source").lstrip(".") or "source"


def parse_sources(items: list[str] | str, detect: Detector | None = None) -> list[SourceSpec]:
    """Several specifications; labels are made unique by a numeric suffix."""
    if isinstance(items, str):
        items = [s for s in items.split(",") if s.strip()]
    specs, seen = [], set()
    for item in items:
        spec = parse_source(item, detect)
        label, n = spec.label, 2
        while label in seen:
            label, n = f"{spec.label}-{n}", n + 1
        seen.add(label)
        specs.append(replace(spec, label=label))
    return specs
