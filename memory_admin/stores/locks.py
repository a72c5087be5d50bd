"""The lock that keeps Tapeview's own writes to one file apart (plain Python, no Django)."""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from .model import StoreBusy, StoreError

# The agents take no locks, so this cannot keep them out: every write still checks the version it
# expects as late as it can. What the lock adds is that two Tapeview writers (two requests, two
# processes) never both pass that check with the same base version and both report "saved".
WAIT_SECONDS = 10.0  # a write takes milliseconds; much longer means a stuck writer, not a queue
POLL_SECONDS = 0.005
_held = threading.local()  # lock path -> depth, for this thread's nested holds


def lock_path(target: Path) -> Path:
    """`.<name>.tapeview.lock` beside the target: never the agent's own file."""
    target = Path(os.path.abspath(target))
    return target.with_name(f".{target.name}.tapeview.lock")


@contextmanager
def hold(target: Path, wait: float = WAIT_SECONDS) -> Iterator[None]:
    """Hold the exclusive lock of `target` (nested holds in one thread are one); StoreBusy after `wait` s."""
    path = lock_path(target)
    depth: dict[Path, int] = _held.__dict__.setdefault("depth", {})
    if path in depth:
        depth[path] += 1
        try:
            yield
        finally:
            depth[path] -= 1
        return
    fd = _acquire(path, wait)
    depth[path] = 1
    try:
        yield
    finally:
        del depth[path]
        # Removed while still held, so the agent's folder keeps no litter. A writer already
        # waiting on the removed file notices once it gets it (_same_file) and starts over.
        with suppress(OSError):
            os.unlink(path)
        os.close(fd)


def _acquire(path: Path, wait: float) -> int:
    deadline = time.monotonic() + wait
    while True:
        try:
            # O_NOFOLLOW: a symlink planted at the lock's name must not make us create files elsewhere.
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise StoreError(f"cannot create the lock file {path.name} beside the file: {exc}") from exc
        try:
            # Polled rather than blocking, so a stuck writer makes others busy, not hung.
            while not _try_lock(fd):
                if time.monotonic() >= deadline:
                    raise StoreBusy("another Tapeview edit of this file is in progress", 1.0)
                time.sleep(POLL_SECONDS)
            if _same_file(path, fd):
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _same_file(path: Path, fd: int) -> bool:
    """Whether the locked descriptor is still the file at `path` (its holder may have removed it)."""
    try:
        now = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino)
