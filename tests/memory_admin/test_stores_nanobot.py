"""nanobot's workspace memory: discovery in both layouts, guarded edits, history, Dream's progress, git."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest
from dulwich import porcelain
from dulwich.repo import Repo

from memory_admin.stores import nanobot_history
from memory_admin.stores import nanobot_memory as store
from memory_admin.stores.model import StaleEdit, StoreError, version_of

FIXTURES = Path(__file__).parent.parent / "fixtures" / "nanobot_memory"
NANOBOT = b"nanobot <nanobot@dream>"
# nanobot 0.3.5's GitStore.init writes exactly this .gitignore for its tracked files.
GITIGNORE = (
    "/*\n!memory/\n!SOUL.md\n!USER.md\n!.gitignore\nmemory/*\n!memory/MEMORY.md\n!memory/.dream_cursor\n"
)
GIT_TRACKED = ["SOUL.md", "USER.md", "memory/MEMORY.md", "memory/.dream_cursor", ".gitignore"]


def copy_fixture(tmp_path: Path, name: str) -> Path:
    root = tmp_path / name
    shutil.copytree(FIXTURES / name, root)
    for path in [root, *root.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    return root


@pytest.fixture
def current(tmp_path: Path) -> Path:
    """A 0.3.5 data directory: config.json, sessions/<workspace-id>/, workspace/."""
    return copy_fixture(tmp_path, "current")


@pytest.fixture
def legacy(tmp_path: Path) -> Path:
    """A v0.1.4 workspace: memory/HISTORY.md paragraphs, no history.jsonl."""
    return copy_fixture(tmp_path, "legacy-0.1.4") / "workspace"


@pytest.fixture
def git_workspace(current: Path) -> Path:
    """The workspace after nanobot's GitStore.init plus one Dream commit."""
    workspace = current / "workspace"
    porcelain.init(str(workspace))
    (workspace / ".gitignore").write_text(GITIGNORE)
    commit_as_nanobot(workspace, b"init: nanobot memory store")
    memory = workspace / "memory" / "MEMORY.md"
    memory.write_text(memory.read_text() + "- Dream learned this\n")
    commit_as_nanobot(workspace, b"dream: periodic memory consolidation\n\nmemory/MEMORY.md: +1 -0\n")
    return workspace


def commit_as_nanobot(workspace: Path, message: bytes) -> None:
    porcelain.add(str(workspace), paths=[str(workspace / p) for p in GIT_TRACKED])
    porcelain.commit(str(workspace), message=message, author=NANOBOT, committer=NANOBOT)


def refs_by_key(root: Path) -> dict:
    return {ref.key: ref for ref in store.discover(root)}


def head_text(workspace: Path, rel: str) -> str:
    with Repo(str(workspace)) as repo:
        tree = repo[repo[repo.head()].tree]
        for part in rel.encode().split(b"/"):
            tree = repo[tree[part][1]]
        return tree.data.decode()


def head_id(repo_dir: Path) -> bytes:
    with Repo(str(repo_dir)) as repo:
        return repo.head()


# discover


def test_a_data_dir_lists_memory_bootstrap_files_skills_and_history_jsonl(current: Path) -> None:
    refs = refs_by_key(current)
    assert set(refs) == {
        "memory/MEMORY.md",
        "USER.md",
        "SOUL.md",
        "AGENTS.md",
        "HEARTBEAT.md",
        "skills/nas-health-check/SKILL.md",
        "memory/history.jsonl",
    }
    assert refs["memory/MEMORY.md"].kind == "nanobot.memory"
    assert refs["memory/MEMORY.md"].path == current / "workspace" / "memory" / "MEMORY.md"
    assert refs["USER.md"].kind == refs["skills/nas-health-check/SKILL.md"].kind == "nanobot.file"
    assert refs["memory/history.jsonl"].kind == "nanobot.history"
    assert not refs["memory/history.jsonl"].editable
    assert all(ref.editable for key, ref in refs.items() if key != "memory/history.jsonl")
    assert {ref.owner for ref in refs.values()} == {"workspace"}


def test_a_legacy_workspace_lists_its_history_md_as_the_history_log(legacy: Path) -> None:
    refs = refs_by_key(legacy)
    assert set(refs) == {
        "memory/MEMORY.md",
        "USER.md",
        "SOUL.md",
        "AGENTS.md",
        "HEARTBEAT.md",
        "memory/HISTORY.md",
    }
    assert refs["memory/HISTORY.md"].kind == "nanobot.history"
    assert not refs["memory/HISTORY.md"].editable
    assert refs["memory/MEMORY.md"].owner == "workspace"


def test_an_empty_history_jsonl_does_not_hide_a_legacy_history_md_not_yet_migrated(legacy: Path) -> None:
    (legacy / "memory" / "history.jsonl").write_bytes(b"")
    assert "memory/HISTORY.md" in refs_by_key(legacy)


def test_a_folder_that_is_no_nanobot_source_has_no_stores(tmp_path: Path) -> None:
    assert store.discover(tmp_path) == []


# read and write


def test_an_unchanged_edit_round_trips_byte_for_byte_and_keeps_the_mode(current: Path) -> None:
    ref = refs_by_key(current)["memory/MEMORY.md"]
    ref.path.chmod(0o600)
    before = ref.path.read_bytes()
    snap = store.read(ref)
    assert snap.version == version_of(before)
    assert snap.text == before.decode()

    new = snap.text.replace("Pixel (7 y/o)", "Pixel (8 y/o) — birthday in May ✓")
    version = store.write(ref, new, snap.version)

    assert ref.path.read_bytes() == new.encode("utf-8")
    assert version == version_of(new.encode("utf-8")) == store.read(ref).version
    assert stat.S_IMODE(ref.path.stat().st_mode) == 0o600
    assert store.write(ref, store.read(ref).text, version) == version
    assert ref.path.read_bytes() == new.encode("utf-8")


@pytest.mark.parametrize(
    ("on_disk", "submitted", "written"),
    [
        (b"# Memory\n- a\n", "# Memory\r\n- b", b"# Memory\n- b\n"),
        (b"# Memory\n- a", "# Memory\n- b\n", b"# Memory\n- b"),
        (b"# Memory\r\n- a\r\n", "# Memory\n- b", b"# Memory\r\n- b\r\n"),
    ],
    ids=["final-newline-kept", "no-final-newline-kept", "crlf-kept"],
)
def test_an_edit_keeps_the_files_newline_convention(
    current: Path, on_disk: bytes, submitted: str, written: bytes
) -> None:
    ref = refs_by_key(current)["SOUL.md"]
    ref.path.write_bytes(on_disk)
    store.write(ref, submitted, version_of(on_disk))
    assert ref.path.read_bytes() == written


def test_a_stale_edit_raises_with_the_agents_text_and_writes_nothing(current: Path) -> None:
    ref = refs_by_key(current)["memory/MEMORY.md"]
    seen = store.read(ref)
    dream_text = seen.text + "- Dream added this meanwhile\n"
    ref.path.write_text(dream_text, encoding="utf-8")

    with pytest.raises(StaleEdit) as raised:
        store.write(ref, "# My edit\n", seen.version)

    assert raised.value.current_text == dream_text
    assert raised.value.current_version == version_of(dream_text.encode())
    assert ref.path.read_text(encoding="utf-8") == dream_text
    assert not list(ref.path.parent.glob("*.tmp"))


def test_an_interrupted_write_leaves_the_original_and_no_temp_file(
    current: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ref = refs_by_key(current)["USER.md"]
    before = ref.path.read_bytes()

    def crash(src: object, dst: object) -> None:
        raise OSError("disk went away")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="disk went away"):
        store.write(ref, "# Someone else\n", version_of(before))

    assert ref.path.read_bytes() == before
    assert sorted(p.name for p in ref.path.parent.iterdir() if p.name.startswith(".")) == [".nanobot"]


def test_the_history_log_cannot_be_edited(current: Path) -> None:
    ref = refs_by_key(current)["memory/history.jsonl"]
    before = ref.path.read_bytes()
    with pytest.raises(StoreError):
        store.write(ref, "", version_of(before))
    assert ref.path.read_bytes() == before


def test_a_missing_memory_file_can_be_created(current: Path) -> None:
    shutil.rmtree(current / "workspace" / "memory")
    ref = refs_by_key(current)["memory/MEMORY.md"]
    assert store.read(ref).version == "missing"
    store.write(ref, "# Long-term Memory\n- first fact", "missing")
    assert ref.path.read_text() == "# Long-term Memory\n- first fact\n"


# history


def test_history_jsonl_is_newest_first_with_cursor_time_and_session(current: Path) -> None:
    items = nanobot_history.history(refs_by_key(current)["memory/history.jsonl"])
    assert len(items) == 52
    assert [i.cursor for i in items] == list(range(52, 0, -1))
    newest = items[0]
    assert newest.timestamp == "2026-11-20 18:00"
    assert newest.session_key == "telegram:8123456789"
    assert newest.content.startswith("Reminder set via heartbeat")
    assert items[-1].session_key is None  # migrated from HISTORY.md, so no session


def test_history_search_is_a_case_insensitive_substring_of_the_content(current: Path) -> None:
    ref = refs_by_key(current)["memory/history.jsonl"]
    found = nanobot_history.history(ref, "RESTIC")
    assert found and all("restic" in i.content.lower() for i in found)
    assert found[0].cursor == 52
    assert nanobot_history.history(ref, "no such words anywhere") == []


def test_malformed_history_lines_become_unreadable_items_instead_of_raising(current: Path) -> None:
    ref = refs_by_key(current)["memory/history.jsonl"]
    bad = [
        b"{not json",
        b"[1, 2]",
        json.dumps({"cursor": True, "timestamp": "2026-11-21 10:00", "content": "bool cursor"}).encode(),
        json.dumps({"cursor": 60, "timestamp": None, "content": "no time"}).encode(),
        b"\xff\xfe broken utf-8",
    ]
    good = json.dumps({"cursor": 53, "timestamp": "2026-11-21 10:00", "content": "line\u2028sep"}).encode()
    with open(ref.path, "ab") as f:
        f.write(b"\n".join([*bad, good]) + b"\n\n" + b'{"cursor": 54, "timest')

    items = nanobot_history.history(ref)

    assert items[0].readable is False and "ends mid-entry" in items[0].problem
    assert items[1].cursor == 53 and items[1].content == "line\u2028sep"
    unreadable = [i for i in items[2:7]]
    assert all(not i.readable and i.problem and i.cursor is None for i in unreadable)
    assert items[7].cursor == 52
    assert len(items) == 52 + 7


def test_legacy_history_md_paragraphs_are_entries_newest_written_first(legacy: Path) -> None:
    ref = refs_by_key(legacy)["memory/HISTORY.md"]
    items = nanobot_history.history(ref)
    assert len(items) == 30
    # HISTORY.md is in processing order: the /new archive dated 2026-03-07 was written last.
    assert (items[0].line, items[0].timestamp) == (30, "2026-03-07 22:05")
    assert items[0].content.startswith("Mara asked about: Please keep answers short")
    assert (items[-1].line, items[-1].timestamp) == (1, "2026-03-02 09:30")
    assert all(i.readable and i.cursor is None for i in items)
    assert len(nanobot_history.history(ref, "tokyo")) == 8


def test_a_legacy_raw_dump_stays_one_entry(legacy: Path) -> None:
    ref = refs_by_key(legacy)["memory/HISTORY.md"]
    raw = (
        "[2026-03-30 10:00] [RAW] 2 messages\n"
        "[2026-03-30T09:58] USER: is the backup done?\n"
        "[2026-03-30T09:59] ASSISTANT [tools: exec]: yes\n\n"
    )
    with open(ref.path, "a", encoding="utf-8") as f:
        f.write(raw)
    newest = nanobot_history.history(ref)[0]
    assert newest.timestamp == "2026-03-30 10:00"
    assert newest.content == raw.split("] ", 1)[1].strip()


def test_reading_the_history_log_gives_its_raw_text_and_its_entries(current: Path) -> None:
    ref = refs_by_key(current)["memory/history.jsonl"]
    snap = store.read(ref)
    assert snap.text == ref.path.read_text(encoding="utf-8")
    assert snap.items[0].cursor == 52


def test_dream_progress_matches_the_cursor_files(current: Path) -> None:
    progress = nanobot_history.dream_progress(current / "workspace")
    assert progress == {"cursor": 52, "dream_cursor": 50, "entries": 52, "last_entry": 52, "pending": 2}


def test_dream_progress_without_a_dream_cursor_counts_everything_as_pending(legacy: Path) -> None:
    progress = nanobot_history.dream_progress(legacy)
    assert progress == {"cursor": None, "dream_cursor": None, "entries": 0, "last_entry": None, "pending": 0}


# git


def test_an_edit_in_a_git_managed_workspace_is_committed_as_tapeview(git_workspace: Path) -> None:
    ref = refs_by_key(git_workspace.parent)["memory/MEMORY.md"]
    old = store.read(ref)
    new_text = old.text.replace("Pixel (7 y/o)", "Pixel (8 y/o)")

    store.write(ref, new_text, old.version, editor="ana")

    assert head_text(git_workspace, "memory/MEMORY.md") == new_text
    versions = store.versions(ref)
    assert [v.subject for v in versions] == [
        "tapeview: edit memory/MEMORY.md",
        "dream: periodic memory consolidation",
        "init: nanobot memory store",
    ]
    newest = versions[0]
    assert newest.author == "Tapeview <tapeview@dashboard>"
    assert "Edited in Tapeview by ana." in newest.message
    assert "memory/MEMORY.md: +1 -1\n1 file changed, 1 insertion(+), 1 deletion(-)" in newest.message
    assert store.text_at(ref, versions[1].id) == old.text
    assert store.text_at(ref, newest.id) == new_text
    diff = store.diff_versions(ref, versions[1].id, newest.id)
    assert "-- Has an indoor cat named Pixel (7 y/o)" in diff
    assert "+- Has an indoor cat named Pixel (8 y/o)" in diff


def test_after_a_committed_edit_nanobot_finds_nothing_left_to_commit(git_workspace: Path) -> None:
    ref = refs_by_key(git_workspace.parent)["memory/MEMORY.md"]
    old = store.read(ref)
    store.write(ref, old.text + "- one more\n", old.version)

    status = porcelain.status(str(git_workspace))
    assert not any(status.staged.values())
    assert status.unstaged == []


def test_a_commit_leaves_other_uncommitted_changes_for_dream(git_workspace: Path) -> None:
    user = git_workspace / "USER.md"
    user.write_text(user.read_text() + "- Dream is mid-run\n")
    ref = refs_by_key(git_workspace.parent)["memory/MEMORY.md"]
    old = store.read(ref)

    store.write(ref, old.text + "- mine\n", old.version)

    assert head_text(git_workspace, "USER.md") != user.read_text()
    assert porcelain.status(str(git_workspace)).unstaged == [b"USER.md"]


def test_a_file_nanobot_does_not_track_is_written_without_a_commit(git_workspace: Path) -> None:
    ref = refs_by_key(git_workspace.parent)["AGENTS.md"]
    head = head_id(git_workspace)
    store.write(ref, "# Agents\n", store.read(ref).version)
    assert ref.path.read_text() == "# Agents\n"
    assert head_id(git_workspace) == head
    assert "not committed" in ref.note


def test_a_workspace_inside_another_repository_is_not_git_managed(tmp_path: Path, legacy: Path) -> None:
    porcelain.init(str(tmp_path))
    porcelain.add(str(tmp_path), paths=[str(legacy / "USER.md")])
    porcelain.commit(str(tmp_path), message=b"their project", author=b"a <a@b>", committer=b"a <a@b>")
    head = head_id(tmp_path)
    ref = refs_by_key(legacy)["USER.md"]

    store.write(ref, "# Profile\n", store.read(ref).version)

    assert head_id(tmp_path) == head
    assert store.versions(ref) == []


def test_a_workspace_without_git_has_no_versions(current: Path) -> None:
    ref = refs_by_key(current)["memory/MEMORY.md"]
    assert store.versions(ref) == []
    with pytest.raises(StoreError):
        store.text_at(ref, "0" * 40)


def test_an_unknown_commit_id_is_a_store_error(git_workspace: Path) -> None:
    ref = refs_by_key(git_workspace.parent)["memory/MEMORY.md"]
    for bad in ["0" * 40, "../../etc/passwd", "HEAD"]:
        with pytest.raises(StoreError):
            store.text_at(ref, bad)


def test_a_dream_commit_landing_during_ours_is_kept(
    git_workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory_admin.stores import nanobot_git

    soul = git_workspace / "SOUL.md"
    move_head = nanobot_git._move_head
    raced = []

    def dream_commits_first(repo: Repo, old_head: bytes, commit: object) -> bool:
        if not raced:
            raced.append(True)
            soul.write_text("# Soul\nDream rewrote this.\n")
            porcelain.add(str(git_workspace), paths=[str(soul)])
            porcelain.commit(
                str(git_workspace), message=b"dream: manual run", author=NANOBOT, committer=NANOBOT
            )
        return move_head(repo, old_head, commit)

    monkeypatch.setattr(nanobot_git, "_move_head", dream_commits_first)
    ref = refs_by_key(git_workspace.parent)["memory/MEMORY.md"]
    old = store.read(ref)
    store.write(ref, old.text + "- mine\n", old.version)

    assert head_text(git_workspace, "SOUL.md") == "# Soul\nDream rewrote this.\n"
    assert head_text(git_workspace, "memory/MEMORY.md") == old.text + "- mine\n"
    with Repo(str(git_workspace)) as repo:
        subjects = [e.commit.message.split(b"\n")[0] for e in repo.get_walker(max_entries=2)]
    assert subjects == [b"tapeview: edit memory/MEMORY.md", b"dream: manual run"]


def test_a_broken_git_store_does_not_lose_the_edit(current: Path, caplog: pytest.LogCaptureFixture) -> None:
    (current / "workspace" / ".git").mkdir()
    ref = refs_by_key(current)["memory/MEMORY.md"]
    old = store.read(ref)
    store.write(ref, old.text + "- saved anyway\n", old.version)
    assert ref.path.read_text().endswith("- saved anyway\n")
    assert "could not commit" in caplog.text
