"""nanobot's git store of memory files (dulwich): Tapeview's commits beside Dream's, and file versions.

Follows ../shared/formats/nanobot.md §3.5 and §4.1: nanobot keeps `<workspace>/.git` only when the
workspace is not inside another repository, tracks SOUL.md, USER.md, memory/MEMORY.md (and
memory/.dream_cursor), and commits as `nanobot <nanobot@dream>` with `dream: …` messages whose body
summarises the diff. An edit made here is committed at once, under its own name and a non-`dream:`
message, so Dream's next diff-based commit does not claim it and `/dream-restore` cannot undo it.
"""

from __future__ import annotations

import difflib
import os
import re
import stat
import time
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

from dulwich.errors import NoIndexPresent
from dulwich.file import FileLocked
from dulwich.index import index_entry_from_stat
from dulwich.object_store import commit_tree_changes
from dulwich.objects import Blob, Commit, Tree
from dulwich.repo import Repo

# The files nanobot 0.3.5's MemoryStore hands to GitStore (minus .dream_cursor, which is not edited here).
TRACKED = ("SOUL.md", "USER.md", "memory/MEMORY.md")
# Shaped like nanobot's own `nanobot <nanobot@dream>`: the tool's name at the role it plays.
IDENTITY = b"Tapeview <tapeview@dashboard>"
MESSAGE_PREFIX = "tapeview:"
DIFF_MAX_CHARS = 6000  # nanobot caps the diff in its commit messages at the same size
_FULL_ID = re.compile(r"^[0-9a-f]{40}$")
_CAS_ATTEMPTS = 3


class GitStoreError(RuntimeError):
    """The workspace repository could not answer (no commits, an unknown commit, a broken repo)."""


@dataclass(frozen=True)
class Version:
    """One commit that changed a file."""

    id: str  # full hex commit id
    time: datetime  # commit time, in the committer's own UTC offset
    author: str  # "name <email>"
    message: str

    @property
    def subject(self) -> str:
        return self.message.split("\n", 1)[0]


def is_managed(workspace: Path) -> bool:
    """The workspace has its own repository, as nanobot's GitStore makes it (a `.git` folder).

    A workspace inside someone else's repository has none (nanobot skips the nested init), and a
    `.git` *file* is a worktree or submodule nanobot did not create: neither is written to.
    """
    return (workspace / ".git").is_dir()


def commit_file(workspace: Path, rel: str, data: bytes, *, editor: str = "") -> str | None:
    """Commit `data` as the new content of `rel` on top of HEAD; return the commit id (None: no change).

    Only this one path changes in the new tree: whatever else differs in the working tree (a Dream
    run in progress, the agent's own edit of another file) stays uncommitted for nanobot to record.
    HEAD moves by compare-and-swap, so a Dream commit landing meanwhile is never overwritten.
    """
    with Repo(str(workspace)) as repo:
        for _ in range(_CAS_ATTEMPTS):
            try:
                head = repo.refs[b"HEAD"]
            except KeyError:
                raise GitStoreError("the workspace repository has no commits yet") from None
            parent = repo[head]
            old = _blob_at(repo, parent.tree, rel)
            blob = Blob.from_string(data)
            if old is not None and old.id == blob.id:
                return None
            repo.object_store.add_object(blob)
            mode = _file_mode(workspace / rel)
            tree = commit_tree_changes(repo.object_store, repo[parent.tree], [(rel.encode(), mode, blob.id)])
            old_text = "" if old is None else old.data.decode("utf-8", errors="replace")
            commit = _commit(
                tree, head, _message(rel, old_text, data.decode("utf-8", errors="replace"), editor)
            )
            repo.object_store.add_object(commit)
            if _move_head(repo, head, commit):
                _stage(repo, workspace, rel, blob.id, mode)
                return commit.id.decode()
    raise GitStoreError("the workspace repository kept changing; the edit is saved but not committed")


def file_versions(workspace: Path, rel: str, limit: int | None = None) -> list[Version]:
    """The commits that changed `rel`, newest first."""
    with Repo(str(workspace)) as repo:
        try:
            head = repo.refs[b"HEAD"]
        except KeyError:
            return []
        walker = repo.get_walker(include=[head], paths=[rel.encode()], max_entries=limit)
        return [_version(entry.commit) for entry in walker]


def file_at(workspace: Path, rel: str, commit_id: str) -> bytes | None:
    """The bytes of `rel` at a commit, None if the file did not exist there."""
    if not _FULL_ID.match(commit_id):
        raise GitStoreError(f"not a commit id: {commit_id[:60]!r}")
    with Repo(str(workspace)) as repo:
        try:
            commit = repo[commit_id.encode()]
        except KeyError:
            raise GitStoreError(f"unknown commit {commit_id}") from None
        if not isinstance(commit, Commit):
            raise GitStoreError(f"{commit_id} is not a commit")
        blob = _blob_at(repo, commit.tree, rel)
        return None if blob is None else blob.data


def files_at(workspace: Path, rel: str, commit_ids: list[str]) -> dict[str, bytes | None]:
    """The bytes of `rel` at each of these commits (None: not there), read in one opening of the
    repository; an unknown commit is left out."""
    found: dict[str, bytes | None] = {}
    with Repo(str(workspace)) as repo:
        for commit_id in filter(_FULL_ID.match, commit_ids):
            try:
                commit = repo[commit_id.encode()]
            except KeyError:
                continue
            if isinstance(commit, Commit):
                blob = _blob_at(repo, commit.tree, rel)
                found[commit_id] = None if blob is None else blob.data
    return found


def change_summary(rel: str, old_text: str, new_text: str) -> str:
    """The body nanobot writes under its commit subjects: per-file counts, a total, then the diff."""
    hunks = list(difflib.unified_diff(old_text.splitlines(), new_text.splitlines(), rel, rel, lineterm=""))
    added = sum(1 for line in hunks if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in hunks if line.startswith("-") and not line.startswith("---"))
    body = (
        f"{rel}: +{added} -{removed}\n"
        f"1 file changed, {added} insertion{'s' if added != 1 else ''}(+), "
        f"{removed} deletion{'s' if removed != 1 else ''}(-)"
    )
    diff = "\n".join(hunks)
    if len(diff) > DIFF_MAX_CHARS:
        diff = diff[:DIFF_MAX_CHARS] + "\n...[diff truncated]"
    return body + (f"\n\n```diff\n{diff}\n```" if hunks else "")


def _message(rel: str, old_text: str, new_text: str, editor: str) -> bytes:
    who = " ".join(editor.split())
    lines = [f"{MESSAGE_PREFIX} edit {rel}", ""]
    if who:
        lines += [f"Edited in Tapeview by {who}.", ""]
    lines.append(change_summary(rel, old_text, new_text))
    return ("\n".join(lines) + "\n").encode("utf-8")


def _commit(tree: bytes, parent: bytes, message: bytes) -> Commit:
    now = int(time.time())
    offset = int(datetime.now().astimezone().utcoffset().total_seconds())
    commit = Commit()
    commit.tree = tree
    commit.parents = [parent]
    commit.author = commit.committer = IDENTITY
    commit.author_time = commit.commit_time = now
    commit.author_timezone = commit.commit_timezone = offset
    commit.message = message
    return commit


def _move_head(repo: Repo, old_head: bytes, commit: Commit) -> bool:
    subject = commit.message.split(b"\n", 1)[0]
    return repo.refs.set_if_equals(
        b"HEAD",
        old_head,
        commit.id,
        committer=commit.committer,
        timestamp=commit.commit_time,
        timezone=commit.commit_timezone,
        message=b"commit: " + subject,
    )


def _stage(repo: Repo, workspace: Path, rel: str, blob_id: bytes, mode: int) -> None:
    """Point the index at the committed blob, so nanobot's next `status` does not see our edit as its own.

    The entry's mtime is zeroed: git and dulwich then re-hash the file rather than trust a stat that
    may already describe a newer write by the agent.
    """
    try:
        index = repo.open_index()
        entry = index_entry_from_stat(os.lstat(workspace / rel), blob_id, mode)
        index[rel.encode()] = replace(entry, mtime=(0, 0))
        index.write()
    except (NoIndexPresent, FileLocked, OSError):
        # The commit stands; a stale index entry only makes nanobot re-add the same content.
        pass


def _blob_at(repo: Repo, tree_id: bytes, rel: str) -> Blob | None:
    tree = repo[tree_id]
    for part in rel.encode().split(b"/"):
        if not isinstance(tree, Tree) or part not in tree:
            return None
        tree = repo[tree[part][1]]
    return tree if isinstance(tree, Blob) else None


def _file_mode(path: Path) -> int:
    try:
        executable = path.stat().st_mode & stat.S_IXUSR
    except OSError:
        executable = 0
    return 0o100755 if executable else 0o100644


def _version(commit: Commit) -> Version:
    tz = timezone(timedelta(seconds=commit.commit_timezone))
    return Version(
        id=commit.id.decode(),
        time=datetime.fromtimestamp(commit.commit_time, tz),
        author=commit.author.decode("utf-8", errors="replace"),
        message=commit.message.decode("utf-8", errors="replace").strip(),
    )
