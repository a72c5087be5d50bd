"""nanobot's workspace memory: MEMORY.md, the bootstrap files and skills, and the history journal.

Follows ../shared/formats/nanobot.md §3 and §4: files are rewritten atomically and only if they are
still what the editor saw (nanobot itself truncates and rewrites in place, with no lock); a workspace
with nanobot's own git store gets a commit per edit (nanobot_git); history.jsonl (or a legacy
HISTORY.md) is read only (nanobot_history), since it may only be rewritten while nanobot is stopped.
"""

from __future__ import annotations

import difflib
import logging
from pathlib import Path, PurePosixPath

from tapeview.sources.nanobot_files import workspace_of

from . import locks, nanobot_git, nanobot_history
from .files import read_bytes, replace_if_unchanged
from .model import Snapshot, StoreError, StoreRef, not_text, not_text_note, text_problem, version_of
from .nanobot_git import Version
from .nanobot_history import HISTORY, LEGACY_HISTORY

log = logging.getLogger(__name__)

MEMORY_KIND = "nanobot.memory"  # memory/MEMORY.md
FILE_KIND = "nanobot.file"  # a bootstrap file or a skill
HISTORY_KIND = nanobot_history.KIND
MEMORY = "memory/MEMORY.md"
_BOOTSTRAP = {
    "USER.md": "user profile; injected into every turn unless it equals the template; Dream edits it",
    "SOUL.md": "personality and guardrails; injected into every turn; Dream edits it",
    "AGENTS.md": "workspace instructions; injected unless it equals the template",
    "HEARTBEAT.md": "task list for the heartbeat job; not injected",
}
_WORKSPACE_MARKS = ("memory", "AGENTS.md", "SOUL.md", "USER.md", ".nanobot")


def find_workspace(root: Path) -> Path | None:
    """The workspace of a 0.3.5 data directory (config.json), or `root` itself when it is a workspace."""
    if (root / "config.json").is_file():
        return workspace_of(root)
    if any((root / mark).exists() for mark in _WORKSPACE_MARKS):
        return root
    return root / "workspace" if (root / "workspace" / "memory").is_dir() else None


def discover(root: Path) -> list[StoreRef]:
    workspace = find_workspace(root)
    if workspace is None:
        return []
    files = [(MEMORY, MEMORY_KIND, "long-term facts; injected whole into every turn; Dream edits it")]
    files += [(name, FILE_KIND, role) for name, role in _BOOTSTRAP.items() if (workspace / name).is_file()]
    for skill in sorted((workspace / "skills").glob("*/SKILL.md")):
        role = f"workspace skill {skill.parent.name!r}; Dream may edit it"
        files.append((skill.relative_to(workspace).as_posix(), FILE_KIND, role))
    git = nanobot_git.is_managed(workspace)
    refs = [_ref(workspace, rel, kind, _note(workspace, rel, role, git)) for rel, kind, role in files]
    log_rel = _history_file(workspace)
    if log_rel == HISTORY:
        note = "append-only journal, the input of Dream; read only here (nanobot appends to it)"
        refs.append(_ref(workspace, log_rel, HISTORY_KIND, note, editable=False))
    elif log_rel == LEGACY_HISTORY:
        note = "legacy paragraphs (≤ v0.1.4); nanobot ≥ 0.1.5 moves them into history.jsonl on start"
        refs.append(_ref(workspace, log_rel, HISTORY_KIND, note, editable=False))
    return refs


def read(ref: StoreRef) -> Snapshot:
    data = read_bytes(ref.path)
    text = "" if data is None else data.decode("utf-8", errors="replace")
    items = nanobot_history.parse(ref, data or b"") if ref.kind == HISTORY_KIND else []
    return Snapshot(version_of(data), text, items, not_text(data))


def write(ref: StoreRef, text: str, expected_version: str, *, editor: str = "") -> str:
    """Replace the file with `text` if it is still at `expected_version`; return the new version.

    Raises StoreError for a read-only store, a text with a NUL or a file that is not UTF-8 text
    (model.not_text: its bytes are kept), and StaleEdit (with the agent's current text) when the file
    changed meanwhile; then nothing is written. In a workspace with nanobot's git store the edit of a
    tracked file is committed as Tapeview's; a failed commit leaves the edit saved.
    """
    if not ref.editable:
        raise StoreError(f"{ref.title} is read only here: nanobot appends to it while it runs")
    if ref.kind == MEMORY_KIND and expected_version == version_of(None):
        ref.path.parent.mkdir(parents=True, exist_ok=True)  # the lock file goes beside MEMORY.md
    # The commit is made under the lock too, so commits land in the order the file was replaced.
    with locks.hold(ref.path):
        current = read_bytes(ref.path)
        if why := not_text(current):
            raise StoreError(not_text_note(ref.title, why) + " Nothing was written.")
        data = encode(text, current)
        if current == data and version_of(current) == expected_version:
            return expected_version
        version = replace_if_unchanged(ref.path, data, expected_version)
        workspace = _workspace(ref)
        if ref.key in nanobot_git.TRACKED and nanobot_git.is_managed(workspace):
            try:
                nanobot_git.commit_file(workspace, ref.key, data, editor=editor)
            except Exception:
                # The file is already replaced; failing now would tell the editor nothing was saved.
                log.warning("saved %s but could not commit it to %s/.git", ref.key, workspace, exc_info=True)
        return version


def versions(ref: StoreRef, limit: int | None = None) -> list[Version]:
    """Commits that changed the file, newest first; [] where the workspace has no git store of its own."""
    workspace = _workspace(ref)
    if not nanobot_git.is_managed(workspace):
        return []
    return nanobot_git.file_versions(workspace, ref.key, limit)


def text_at(ref: StoreRef, commit_id: str, *, exact: bool = False) -> str | None:
    """The file's text at a commit (None if it did not exist there); StoreError for an unknown commit,
    and with `exact` for a commit whose file is not UTF-8 text (its text would not be its bytes)."""
    workspace = _workspace(ref)
    if not nanobot_git.is_managed(workspace):
        raise StoreError(f"{ref.owner} has no git store")
    try:
        data = nanobot_git.file_at(workspace, ref.key, commit_id)
    except nanobot_git.GitStoreError as exc:
        raise StoreError(str(exc)) from None
    if exact and (why := not_text(data)):
        at = f"{ref.title} at commit {commit_id[:8]}"
        raise StoreError(f"{at} is not UTF-8 text ({why}): Tapeview cannot write it back byte for byte")
    return None if data is None else data.decode("utf-8", errors="replace")


def versions_at(ref: StoreRef, commit_ids: list[str]) -> dict[str, str]:
    """The version of the file at each of these commits ("missing" where it was not there), as the
    file would have it: what a commit's text is, by the name the file's own versions go by."""
    workspace = _workspace(ref)
    if not commit_ids or not nanobot_git.is_managed(workspace):
        return {}
    try:
        found = nanobot_git.files_at(workspace, ref.key, commit_ids)
    except nanobot_git.GitStoreError:
        return {}
    return {commit_id: version_of(data) for commit_id, data in found.items()}


def diff_versions(ref: StoreRef, old_id: str, new_id: str | None = None) -> str:
    """Unified diff of the file from commit `old_id` to commit `new_id` (None: the file on disk now)."""
    old = text_at(ref, old_id) or ""
    new = read(ref).text if new_id is None else text_at(ref, new_id) or ""
    new_label = "now" if new_id is None else new_id[:8]
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        f"{ref.key}@{old_id[:8]}",
        f"{ref.key}@{new_label}",
    )
    return "".join(lines)


def _ref(workspace: Path, rel: str, kind: str, note: str, editable: bool = True) -> StoreRef:
    title = rel.removeprefix("memory/")
    return StoreRef(rel, kind, title, workspace.name, workspace / rel, editable, note)


def _note(workspace: Path, rel: str, role: str, git: bool) -> str:
    if not (workspace / rel).exists():
        role += "; not created yet"
    if git and rel not in nanobot_git.TRACKED:
        role += "; not in nanobot's git store, so edits are not committed"
    return role


def _history_file(workspace: Path) -> str | None:
    """history.jsonl once it has entries; until nanobot migrates it, a legacy HISTORY.md beside it."""
    jsonl, legacy = workspace / HISTORY, workspace / LEGACY_HISTORY
    if _has_content(jsonl) or (jsonl.is_file() and not legacy.is_file()):
        return HISTORY
    return LEGACY_HISTORY if legacy.is_file() else None


def _has_content(path: Path) -> bool:
    try:
        return path.stat().st_size > 0
    except OSError:
        return False


def _workspace(ref: StoreRef) -> Path:
    return ref.path.parents[len(PurePosixPath(ref.key).parts) - 1]


def encode(text: str, current: bytes | None) -> bytes:
    """`text` as `write` puts it over the file's `current` bytes: UTF-8, keeping the file's line
    endings (LF or CRLF) and whether it ends with a newline. StoreError for a text it cannot hold."""
    if "\x00" in text:  # never written: a file with one would be refused an edit (model.not_text)
        raise StoreError(text_problem(text) or "")
    current = current or b""
    crlf = b"\r\n" in current and current.count(b"\r\n") == current.count(b"\n")
    if crlf:
        text = text.replace("\r\n", "\n").replace("\n", "\r\n")
    elif b"\r\n" not in current:
        text = text.replace("\r\n", "\n")  # a browser's textarea sends CRLF
    newline = "\r\n" if crlf else "\n"
    if current and not current.endswith(b"\n"):
        text = text.rstrip("\r\n")
    elif text and not text.endswith("\n"):
        text += newline
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise StoreError("the text holds a lone surrogate, which a UTF-8 file cannot hold") from None
