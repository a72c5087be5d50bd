"""nanobot writes its memory in place, with no lock: a write of its in our last instant is never lost."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_admin.stores import files
from memory_admin.stores.model import StaleEdit, version_of


@pytest.fixture
def memory(tmp_path: Path) -> Path:
    path = tmp_path / "MEMORY.md"
    path.write_text("# Memory\n- old fact\n")
    return path


def test_an_agent_write_between_the_last_look_and_the_rename_is_put_back(memory: Path, monkeypatch) -> None:
    base = version_of(memory.read_bytes())
    real_replace = files.os.replace
    theirs = b"# Memory\n- old fact\n- Dream's new fact\n"

    def agent_writes_first(src, dst):
        if Path(dst) == memory and Path(src).name.endswith(files.TEMP_SUFFIX):
            with open(memory, "r+b") as f:  # as Path.write_text does: truncate, then write
                f.truncate(0)
                f.write(theirs)
        return real_replace(src, dst)

    monkeypatch.setattr(files.os, "replace", agent_writes_first)
    with pytest.raises(StaleEdit) as stale:
        files.replace_if_unchanged(memory, b"# Memory\n- my edit\n", base)

    assert memory.read_bytes() == theirs  # the agent's write stands
    assert stale.value.current_version == version_of(theirs)
    assert not files.temp_files(memory)


def test_an_agent_write_after_the_rename_is_its_own_later_write(memory: Path, monkeypatch) -> None:
    base = version_of(memory.read_bytes())
    real_replace = files.os.replace
    theirs = b"# Memory\n- my edit\n- Dream's note on top of it\n"

    def agent_writes_after(src, dst):
        real_replace(src, dst)
        if Path(dst) == memory and Path(src).name.endswith(files.TEMP_SUFFIX):
            memory.write_bytes(theirs)

    monkeypatch.setattr(files.os, "replace", agent_writes_after)
    # Ours was saved; what the agent writes next is a new version, as any later write of its is.
    assert files.replace_if_unchanged(memory, b"# Memory\n- my edit\n", base) == version_of(
        b"# Memory\n- my edit\n"
    )
    assert memory.read_bytes() == theirs


def test_an_undisturbed_write_is_saved(memory: Path) -> None:
    base = version_of(memory.read_bytes())
    assert files.replace_if_unchanged(memory, b"# Memory\n- mine\n", base) == version_of(
        b"# Memory\n- mine\n"
    )
    assert memory.read_bytes() == b"# Memory\n- mine\n"
