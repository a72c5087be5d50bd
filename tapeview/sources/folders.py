"""Which folders of a source its reader looks into, so that the others are named, never skipped in silence.

Readers find their files by the agent's own layout (a Bub tapes folder is flat, nanobot keeps
`sessions/` and a workspace, ...). A folder the layout does not cover is not read: the Sources
page lists it with the reason, and with the kind it holds when it holds one (a Bub tapes folder
inside the folder given, a nanobot data dir below a bare path whose kind cannot be told).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

from . import araliya_sessions, yachiyo
from .nanobot_files import workspace_of
from .paths import Refusal

Detect = Callable[[Path], str | None]
LIMIT = 20  # folders named per source: enough to show what is wrong without flooding the page
SEARCH_DEPTH = 2  # how far below a bare path of unknown kind sources are looked for
SEARCH_LIMIT = 200  # folders looked at in that search, at most
# What a folder of each kind is, one and many, as the Sources page counts what it found.
NOUNS = {
    "bub": ("Bub tape folder", "Bub tape folders"),
    "nanobot": ("nanobot workspace", "nanobot workspaces"),
    "yachiyo": ("yachiyo data folder", "yachiyo data folders"),
    "araliya": ("araliya identity folder", "araliya identity folders"),
}


def _nanobot(root: Path) -> list[Path]:
    if (root / "config.json").is_file():  # a 0.3.5 data dir
        return [root / "sessions", *filter(None, [workspace_of(root)])]
    return [root / "sessions", root / "memory", root / "skills"]  # an older workspace


def _yachiyo(root: Path) -> list[Path]:
    store = yachiyo._store(root)
    return [store, store.parent / "long-term-memory"] if store else []


# What each kind reads under a source root (a folder below one of these is read too).
READ: dict[str, Callable[[Path], list[Path]]] = {
    "bub": lambda root: [],  # a Bub tapes folder is flat: Bub never looks into a subfolder
    "nanobot": _nanobot,
    "yachiyo": _yachiyo,
    "araliya": lambda root: araliya_sessions._memory_dirs(root),
}
WHY = {
    "bub": "Bub keeps its tapes directly in the tapes folder, never in a subfolder",
    "nanobot": "nanobot keeps no sessions or memory here",
    "yachiyo": "yachiyo keeps no sessions or memory here",
    "araliya": "no araliya memory folder (sessions.json) in it",
}


def unread(root: Path, kind: str, detect: Detect) -> list[Refusal]:
    """The subfolders of a source root that are not read, and why (hidden ones are the agent's own)."""
    read = READ[kind](root)
    out = []
    for folder in _subfolders(root):
        if any(folder == r or folder in r.parents or r in folder.parents for r in read):
            continue
        if len(out) == LIMIT:
            out.append(Refusal(folder, "and more folders not read"))
            break
        there = detect(folder)
        if there:
            hint = f"; it holds {there} files: add it as a source of its own, {there}:{folder}"
        elif below := sources_below(folder, detect):
            specs = ", ".join(f"{k}:{p}" for k, p in below)
            hint = (
                f"; found {counted(below)} below: add them, {specs} (or `tapeview serve --discover {folder}`)"
            )
        else:
            hint = ""
        out.append(Refusal(folder, f"not read: {WHY[kind]}{hint}"))
    return out


def counted(found: list[tuple[str, Path]]) -> str:
    """'5 Bub tape folders and 3 nanobot workspaces': the folders found, by kind."""
    kinds = list(dict.fromkeys(kind for kind, _ in found))
    parts = []
    for kind in kinds:
        n = sum(k == kind for k, _ in found)
        one, many = NOUNS.get(kind, (f"{kind} folder", f"{kind} folders"))
        parts.append(f"{n} {one if n == 1 else many}")
    return f"{', '.join(parts[:-1])} and {parts[-1]}" if len(parts) > 1 else parts[0]


def sources_below(root: Path, detect: Detect) -> list[tuple[str, Path]]:
    """(kind, folder) of the folders below `root` that hold a known kind, the nearest first."""
    found: list[tuple[str, Path]] = []
    level, looked = [root], 0
    for _ in range(SEARCH_DEPTH):
        deeper = []
        for folder in (f for parent in level for f in _subfolders(parent)):
            looked += 1
            if looked > SEARCH_LIMIT:
                return found
            kind = detect(folder)
            if kind:
                found.append((kind, folder))
            else:
                deeper.append(folder)
        level = deeper
    return found


def _subfolders(root: Path) -> Iterator[Path]:
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return
    for name in names:
        path = root / name
        # A link is not followed here: the path policy refuses one that leads out of the source.
        if not name.startswith(".") and path.is_dir() and not path.is_symlink():
            yield path
