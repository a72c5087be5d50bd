"""The derived index: incremental by byte offset, reset-aware, rebuildable."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tapeview.sources import bub, parse_sources
from tapeview.tapes import discovery, index, packing, rows
from tapeview.tapes.models import Anchor, Tape

pytestmark = pytest.mark.django_db

LINE = '{{"id": {id}, "kind": "message", "payload": {{"role": "user", "content": "m{id}"}}, "meta": {{}}, "date": "2026-11-22T01:00:0{s}+00:00"}}\n'
ANCHOR = '{{"id": {id}, "kind": "anchor", "payload": {{"name": "{name}", "state": {{}}}}, "meta": {{}}, "date": "2026-11-22T01:00:00+00:00"}}\n'


def sync(root: Path, label: str = "t") -> None:
    discovery.sync(parse_sources([f"{label}=bub:{root}"]))


def tape(name: str) -> Tape:
    return Tape.objects.get(name=name)


def test_real_tapes_are_indexed_with_their_statistics(bub_home: Path) -> None:
    sync(bub_home)
    t = tape("9d11f561157e98d3__0b871d5e50e7c192")
    assert (t.label, t.entries, t.anchors, t.last_anchor) == (
        "cli:local",
        97,
        4,
        "auto_handoff/context_overflow",
    )
    assert (t.entries_since_anchor, t.tokens, t.errors, t.unreadable) == (27, 38856, 3, 0)
    assert t.indexed_offset == t.size == os.path.getsize(t.path)
    assert list(Anchor.objects.filter(tape=t, phase=True).values_list("name", "entries")) == [
        ("session/start", 30),
        ("phase/explore-done", 12),
        ("phase/implement", 24),
        ("auto_handoff/context_overflow", 27),
    ]
    assert Tape.objects.filter(owner=t).get().role == "sidecar"


def test_appends_are_indexed_incrementally(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "a__b.jsonl"
    path.write_text(ANCHOR.format(id=1, name="session/start") + LINE.format(id=2, s=1))
    sync(tmp_path)
    t = tape("a__b")
    first_rows = rows.of(t).all()
    read_from = []
    for reading in ("lines", "blocks"):  # the index reads blocks of lines where its C lane is built
        read = getattr(bub, reading)
        monkeypatch.setattr(
            bub,
            reading,
            lambda p, start=0, *more, read=read: read_from.append(start) or read(p, start, *more),
        )
    with path.open("a") as f:
        f.write(LINE.format(id=3, s=2))
    index.refresh(t)
    t.refresh_from_db()
    assert (t.entries, t.entries_since_anchor, t.next_pos) == (3, 2, 4)
    # Only the new line was read, and the old entries are where they were.
    assert set(read_from) == {first_rows[-1].offset + first_rows[-1].length}  # the index's, and search's
    assert rows.of(t).before(3).all() == first_rows


def test_unfinished_line_is_consumed_only_when_its_newline_arrives(tmp_path: Path) -> None:
    path = tmp_path / "a__b.jsonl"
    whole = LINE.format(id=2, s=1)
    path.write_text(LINE.format(id=1, s=0) + whole[:20])
    sync(tmp_path)
    t = tape("a__b")
    assert (t.entries, t.unreadable, t.pending_bytes) == (1, 0, 20)
    with path.open("a") as f:
        f.write(whole[20:])
    index.refresh(t)
    t.refresh_from_db()
    assert (t.entries, t.unreadable, t.pending_bytes) == (2, 0, 0)


def test_a_reset_tape_is_indexed_again_from_zero(tmp_path: Path) -> None:
    path = tmp_path / "a__b.jsonl"
    path.write_text("".join(LINE.format(id=i, s=i) for i in range(1, 6)))
    sync(tmp_path)
    # Reset as Bub does it: unlink, then a new file starting at id 1 (a new inode, smaller).
    path.unlink()
    path.write_text(ANCHOR.format(id=1, name="session/start"))
    t = tape("a__b")
    index.refresh(t)
    t.refresh_from_db()
    assert (t.entries, t.anchors) == (1, 1)
    assert [r.kind for r in rows.of(t).all()] == ["anchor"]


def test_a_file_replaced_by_a_bigger_one_is_noticed_by_its_inode(tmp_path: Path) -> None:
    path = tmp_path / "a__b.jsonl"
    path.write_text(LINE.format(id=1, s=1))
    sync(tmp_path)
    replacement = tmp_path / "new"
    replacement.write_text(ANCHOR.format(id=1, name="x") + LINE.format(id=2, s=2) + LINE.format(id=3, s=3))
    os.replace(replacement, path)
    t = tape("a__b")
    index.refresh(t)
    t.refresh_from_db()
    assert (t.entries, t.anchors, t.last_anchor) == (3, 1, "x")


def test_a_file_made_again_on_its_old_inode_and_grown_past_the_offset_is_read_from_zero(
    tmp_path: Path,
) -> None:
    # A Bub reset unlinks the tape and makes it again; ext4 hands the old inode straight back, and
    # the new generation may outgrow the old offset before the indexer looks. Truncating in place
    # keeps the inode for certain.
    path = tmp_path / "a__b.jsonl"
    path.write_text(ANCHOR.format(id=1, name="session/start") + LINE.format(id=2, s=1))
    sync(tmp_path)
    t = tape("a__b")
    inode = os.stat(path).st_ino
    with path.open("w") as f:
        f.write(ANCHOR.format(id=1, name="session/again"))
        f.write("".join(LINE.format(id=i, s=i) for i in range(2, 6)))
    assert os.stat(path).st_ino == inode and os.path.getsize(path) > t.indexed_offset
    index.refresh(t)
    t.refresh_from_db()
    assert (t.entries, t.unreadable, t.anchors, t.last_anchor) == (5, 0, 1, "session/again")
    assert [(r.pos, r.entry_id) for r in rows.of(t).all()] == [(n, n) for n in range(1, 6)]


def test_an_indexer_killed_after_a_batch_leaves_the_rest_to_the_next_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index._Run, "size", packing.CHUNK)  # batches of one chunk: three of them here
    path = tmp_path / "a__b.jsonl"
    path.write_text(ANCHOR.format(id=1, name="session/start"))
    sync(tmp_path)
    t = tape("a__b")
    with path.open("a") as f:  # an append of several batches
        f.writelines(LINE.format(id=i, s=i % 10) for i in range(2, 12_002))

    class Killed(BaseException):
        pass

    def killed(_: int) -> None:
        raise Killed  # after the first batch was committed: as a SIGKILL would leave it

    with pytest.raises(Killed):
        index.refresh(t, killed)
    t.refresh_from_db()
    assert 1 < t.entries < 12_001
    assert index.refresh(tape("a__b"))  # the next indexer sees the work left, and does it
    t.refresh_from_db()
    assert (t.entries, t.unreadable, t.indexed_offset) == (12_001, 0, os.path.getsize(path))
    assert [r.entry_id for r in rows.of(t).all()] == list(range(1, 12_002))


def test_unreadable_lines_are_counted_apart(bub_samples: Path) -> None:
    path = bub_samples / "session_realistic.jsonl"
    with path.open("a") as f:
        f.write("{broken\n")
    sync(bub_samples)
    t = tape("session_realistic")
    assert (t.entries, t.unreadable) == (97, 1)


def test_deleting_the_index_and_indexing_again_gives_the_same_index(bub_home: Path) -> None:
    sync(bub_home)
    before = list(
        Tape.objects.order_by("key").values("key", "label", "entries", "anchors", "tokens", "errors")
    )
    entries_before = _entries()
    Tape.objects.all().delete()
    sync(bub_home)
    assert (
        list(Tape.objects.order_by("key").values("key", "label", "entries", "anchors", "tokens", "errors"))
        == before
    )
    assert _entries() == entries_before


def _entries() -> list[tuple]:
    return [(t.key, r.pos, r.offset, r.kind) for t in Tape.objects.order_by("key") for r in rows.of(t).all()]


def test_tapes_whose_files_are_gone_leave_the_index(bub_home: Path, tmp_path: Path) -> None:
    sync(bub_home)
    (bub_home / "9d11f561157e98d3__bf2795869dc767e2.jsonl").unlink()
    sync(bub_home)
    assert not Tape.objects.filter(name="9d11f561157e98d3__bf2795869dc767e2").exists()


def test_an_unchanged_tape_is_not_read_again(bub_home: Path) -> None:
    sync(bub_home)
    t = tape("9d11f561157e98d3__0b871d5e50e7c192")
    assert index.refresh(t) is False


def test_a_missing_source_directory_is_a_reported_problem(tmp_path: Path) -> None:
    report = discovery.sync(parse_sources([f"x=bub:{tmp_path / 'nowhere'}"]))
    assert report.tapes == 0 and "does not exist" in report.problems[0]


def test_sources_dropped_from_the_configuration_leave_the_index(bub_home: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    shutil.copytree(bub_home, other)
    discovery.sync(parse_sources([f"a=bub:{bub_home}", f"b=bub:{other}"]))
    discovery.sync(parse_sources([f"a=bub:{bub_home}"]))
    assert set(Tape.objects.values_list("source", flat=True)) == {"a"}


def test_an_anchor_whose_state_orjson_cannot_write_is_indexed_with_its_state(
    tmp_path: Path, settings, viewer_client
) -> None:
    def nested(levels: int) -> str:
        return '{"a": ' * levels + "{}" + "}" * levels

    # Bub's json.loads reads an integer past 64 bits whole, and states nested past orjson's 255 levels
    states = {
        "phase/wide": '{"n": 1180591620717411303424}',
        "phase/deep": nested(300),
        "phase/deeper": nested(1000),
    }
    path = tmp_path / "a__b.jsonl"
    path.write_text(
        "".join(
            f'{{"id": {i}, "kind": "anchor", "payload": {{"name": "{name}", "state": {state}}}, "meta": {{}}, '
            '"date": "2026-11-22T01:00:00+00:00"}\n'
            for i, (name, state) in enumerate(states.items(), 1)
        )
    )
    settings.TAPEVIEW_SOURCES = f"t=bub:{tmp_path}"
    sync(tmp_path)
    t = tape("a__b")
    assert (t.entries, t.anchors, t.unreadable, t.problem) == (3, 3, 0, "")
    kept = dict(Anchor.objects.filter(tape=t).values_list("name", "state"))
    assert kept["phase/wide"] == '{"n":1180591620717411303424}'
    assert kept["phase/deep"].startswith('{"a":{"a":') and len(kept["phase/deep"]) == 300
    assert kept["phase/deeper"] == kept["phase/deep"]  # the start of its JSON, however deep
    page = viewer_client.get(f"/tapes/{t.key}/")
    assert page.status_code == 200 and "phase/deeper" in page.content.decode()
