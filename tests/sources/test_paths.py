"""The path policy: nothing outside a source's root is read, whatever links say; oddities are named."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tapeview.sources import bub, paths


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "tapes").mkdir()
    (tmp_path / "secret.txt").write_text("root:x:0:0\n")
    return tmp_path / "tapes"


def test_a_plain_tape_is_admitted(root: Path) -> None:
    (root / "a__b.jsonl").write_text("")
    kept, refused = paths.admit(root, bub.discover(root))
    assert [f.name for f in kept] == ["a__b"] and refused == []


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda root: os.symlink(root.parent / "secret.txt", root / "passwd.jsonl"), "outside the source"),
        (lambda root: os.symlink("/etc/passwd", root / "etc__passwd.jsonl"), "outside the source"),
        (lambda root: os.symlink(root / "loop.jsonl", root / "loop.jsonl"), "loops"),
        (lambda root: os.mkfifo(root / "pipe__x.jsonl"), "FIFO"),
        (lambda root: (root / "dir__x.jsonl").mkdir(), "a folder"),
    ],
)
def test_links_out_loops_fifos_and_folders_are_refused_with_a_reason(root: Path, make, reason: str) -> None:
    make(root)
    kept, refused = paths.admit(root, bub.discover(root))
    assert kept == []
    assert len(refused) == 1 and reason in refused[0].reason


def test_a_link_that_stays_inside_the_root_is_read(root: Path) -> None:
    (root / "a__b.jsonl").write_text("")
    os.symlink(root / "a__b.jsonl", root / "a__c.jsonl")
    kept, refused = paths.admit(root, bub.discover(root))
    assert sorted(f.name for f in kept) == ["a__b", "a__c"] and refused == []


def test_check_raises_for_a_path_out_of_the_root(root: Path) -> None:
    with pytest.raises(PermissionError, match="outside the source"):
        paths.check(root, root / ".." / "secret.txt")
