"""A source's root given as a link: the folder read, fixed when first found, and what the page says of it.

A root given as a link (`/srv/agent -> /data/agent-2026`) is a common deployment and is read, but
never in silence: the Sources page names the folder it leads to. The folder is fixed for the life of
the process the first time the root leads to one, so a link swapped while Tapeview runs (by a deploy
script or by someone else) moves neither the pages nor the memory editor's writes to another folder
(a watcher resolves its sources once, when it starts: pages agree with it); the swap is a problem
on the Sources page until a restart reads the new folder.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from pathlib import Path

_first: dict[str, Path] = {}  # a root as given -> the folder it led to when this process first found it


def pinned(given: Path) -> Path:
    """The folder a root is read from: the one it led to when this process first found a folder there."""
    key = str(given)
    if key in _first:
        return _first[key]
    real = Path(os.path.realpath(given))
    # Nothing there yet (or a link that loops): looked up again next time, not fixed.
    return _first.setdefault(key, real) if real.is_dir() else real


@dataclass(frozen=True, slots=True)
class RootLink:
    """How a source's root, as configured, reaches the folder read."""

    given: Path
    read: Path
    now: Path | None  # where the root leads now; None: a link that loops
    direct: bool  # the root itself is the link (else a folder above it is)

    @property
    def swapped(self) -> bool:
        return self.now is not None and self.now != self.read

    @property
    def trouble(self) -> bool:
        return self.now is None or self.swapped

    def __str__(self) -> str:
        if self.now is None:
            return f"{self.given} is a link that loops: nothing is read"
        if self.swapped:
            return (
                f"{self.given} now leads to {self.now}, not to {self.read} as when Tapeview started "
                f"reading it: still read from {self.read} until Tapeview restarts"
            )
        how = "is a link to" if self.direct else "leads through a link to"
        return f"{self.given} {how} {self.now}: that folder is read"


def root_link(given: Path, read: Path) -> RootLink | None:
    """How a root as configured (`given`) reaches the folder read (`read`: pinned's), or None when it is
    that folder, with no link on the way (SourceSpec.root_link).

    One stat and one realpath of the root: cheap enough for every Sources page (there are few roots).
    """
    direct = os.path.islink(given)
    try:
        os.stat(given)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return RootLink(given, read, None, direct)
    now = Path(os.path.realpath(given))
    if now == read == Path(os.path.normpath(given)):
        return None
    return RootLink(given, read, now, direct)
