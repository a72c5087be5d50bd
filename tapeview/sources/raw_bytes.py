"""The raw bytes of a source file: opened read-only, streamed by byte span the same way for every kind."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from .model import TapeNotFound


def open_file(path: Path) -> BinaryIO:
    """The file opened for reading bytes; TapeNotFound when it is gone."""
    try:
        return open(path, "rb")  # noqa: SIM115 - the callers' `with` closes it
    except FileNotFoundError as exc:
        raise TapeNotFound(str(path)) from exc


def read_raw(path: Path, offset: int, length: int, chunk: int = 1 << 20) -> Iterator[bytes]:
    """The raw bytes of one entry, streamed; fewer when the file is shorter than the span."""
    with open_file(path) as f:
        f.seek(offset)
        while length > 0:
            block = f.read(min(chunk, length))
            if not block:
                return
            length -= len(block)
            yield block
