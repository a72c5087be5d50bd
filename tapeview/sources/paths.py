"""The path policy of every source: nothing outside a source's root is read or written, whatever links say.

Applied once, to every file a reader finds, before anything opens it: a link that leads out of the
root, a symlink loop, a FIFO or a folder where a file should be is refused with a reason the user
sees (the Sources page), never followed and never skipped in silence.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .model import UNREADABLE, TapeFile


@dataclass(frozen=True, slots=True)
class Refusal:
    """A file of a source that is not read, and why."""

    path: Path
    reason: str

    def __str__(self) -> str:
        return f"{shown_name(self.path)}: {self.reason}"


def shown_name(path: Path) -> str:
    """A file's name as text a page can show: bytes that are not UTF-8 as escapes (\\xff)."""
    return os.fsencode(path.name).decode("utf-8", "backslashreplace")


def quoted(sid: str, limit: int = 80) -> str:
    """A session id as a page shows it: in quotes, bounded, its control characters escaped (\\u0000)
    and nothing else (a page escapes its markup)."""
    text = CONTROL.sub(lambda m: f"\\u{ord(m[0]):04x}", sid[:limit])
    return f'"{text}"' + ("…" if len(sid) > limit else "")


CONTROL = re.compile(r"[\x00-\x1f\x7f]")  # no name a page or the index can hold as it is


def within(root: Path, path: Path) -> bool:
    """Whether `path`, with every link in it followed, is `root` or below it."""
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


def refusal(root: Path, path: Path) -> str | None:
    """Why `path` must not be read as a file of the source at `root`, or None when it may.

    A file that does not exist (yet) may: readers report a missing file themselves. A name that is
    not UTF-8 may not: it can be neither a key nor a path in the index (which holds text).
    """
    if not _utf8(str(path)):
        return "a name that is not UTF-8: not read"
    if not within(root, path):
        return "a link to something outside the source: not read"
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None if not os.path.islink(path) else "a link to nothing: not read"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a link that loops: not read"
        return f"cannot be read ({exc.strerror})"
    if stat.S_ISDIR(st.st_mode):
        return "a folder, not a file: not read"
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file (a FIFO, socket or device): not read"
    return None


def _utf8(text: str) -> bool:
    # os.listdir gives the bytes of a name that are not UTF-8 as lone surrogates (surrogateescape).
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def admit(root: Path, files: Iterable[TapeFile]) -> tuple[list[TapeFile], list[Refusal]]:
    """The files that may be read, and the refusals of the others (and of those the reader refused)."""
    kept, refused = [], []
    for f in files:
        why = f.refused or refusal(root, f.path)
        if why is None:
            kept.append(f)
        else:
            refused.append(Refusal(f.path, why))
    return kept, refused


def unreadable(paths: Iterable[Path]) -> list[Refusal]:
    """The files of these that this process may not read (their mode or owner), which the path
    policy admits: a page of one says so, and so does the Sources page."""
    return [
        Refusal(path, UNREADABLE) for path in paths if not os.access(path, os.R_OK) and os.path.lexists(path)
    ]


def check(root: Path, path: Path) -> None:
    """Raise PermissionError when `path` may not be read or written as part of the source at `root`."""
    why = refusal(root, path)
    if why is not None:
        raise PermissionError(errno.EACCES, why, str(path))
