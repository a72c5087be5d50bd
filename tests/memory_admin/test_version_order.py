"""A nanobot store's versions, Tapeview's revisions and git's commits, read newest first by time as one list:
"the one before" is the previous one in time, and only a version with none before it is "the first version"."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from dulwich import porcelain

from memory_admin.kinds import nanobot
from memory_admin.models import MemoryStore
from memory_admin.stores.model import version_of
from tests.memory_admin.test_stores_nanobot import GIT_TRACKED, GITIGNORE, NANOBOT

pytestmark = pytest.mark.django_db

PARIS = 3600  # a committer an hour east of UTC: git keeps that offset, the page shows UTC


def at(day: int, hour: int = 10) -> datetime:
    return datetime(2026, 11, day, hour, tzinfo=UTC)


def dream_commit(workspace: Path, message: str, when: datetime) -> str:
    porcelain.add(str(workspace), paths=[str(workspace / p) for p in GIT_TRACKED])
    stamp = when.timestamp()
    commit = porcelain.commit(
        str(workspace),
        message=message.encode(),
        author=NANOBOT,
        committer=NANOBOT,
        author_timestamp=stamp,
        commit_timestamp=stamp,
        author_timezone=PARIS,
        commit_timezone=PARIS,
    )
    return f"git:{commit.decode()}"


def seen(client, store: MemoryStore, when: datetime) -> str:
    """Tapeview looks at the store (its page), and the version it keeps is dated `when`."""
    client.get(f"/memory/{store.key}/")
    version = version_of(Path(store.path).read_bytes())
    store.revisions.filter(version=version).update(seen_at=when)
    return version


def append(store: MemoryStore, line: str) -> None:
    path = Path(store.path)
    path.write_text(path.read_text() + line + "\n")


@pytest.fixture
def timeline(viewer_client, memory_sources) -> dict[str, str]:
    """MEMORY.md's versions, oldest first: Tapeview sees it (R1, Nov 1), nanobot's git store starts
    (A, Nov 2, same text), Dream commits a line (B, Nov 3), someone edits it by hand (R2, Nov 4)."""
    store = MemoryStore.objects.get(kind="nanobot.memory")
    workspace = Path(store.path).parents[1]
    r1 = seen(viewer_client, store, at(1))
    porcelain.init(str(workspace))
    (workspace / ".gitignore").write_text(GITIGNORE)
    a = dream_commit(workspace, "init: nanobot memory store", at(2))
    append(store, "- Dream learned this")
    b = dream_commit(workspace, "dream: periodic memory consolidation", at(3))
    append(store, "- typed in by hand")
    r2 = seen(viewer_client, store, at(4))
    return {"key": store.key, "R1": r1, "A": a, "B": b, "R2": r2}


def versions_rows(page: str) -> list[str]:
    table = page.split('<section id="versions">', 1)[1].split("</table>", 1)[0]
    return table.split("<tr")[2:]


def test_the_api_lists_revisions_and_commits_newest_first_by_time(viewer_client, timeline) -> None:
    items = viewer_client.get(f"/api/memory/{timeline['key']}/versions").json()["items"]
    assert [i["version"] for i in items] == [timeline[n] for n in ("R2", "B", "A", "R1")]
    dates = [i["date"] for i in items]
    assert dates == sorted(dates, reverse=True)


def test_the_store_page_lists_them_in_one_table_newest_first(viewer_client, timeline) -> None:
    rows = versions_rows(viewer_client.get(f"/memory/{timeline['key']}/").content.decode())
    assert [re.search(r'<code title="([^"]+)"', r).group(1) for r in rows] == [
        timeline[n] for n in ("R2", "B", "A", "R1")
    ]
    assert "git commit by nanobot &lt;nanobot@dream&gt;: dream: periodic memory consolidation" in rows[1]
    # only the oldest has nothing before it; every other row diffs with the one below it
    assert [("the first version" in r, "diff with the one before" in r) for r in rows] == [
        (False, True),
        (False, True),
        (False, True),
        (True, False),
    ]


@pytest.mark.parametrize(("to", "before"), [("R2", "B"), ("B", "A"), ("A", "R1")])
def test_a_diff_compares_with_the_version_before_it_in_time(viewer_client, timeline, to, before) -> None:
    r = viewer_client.get(f"/api/memory/{timeline['key']}/diff", {"to": timeline[to]})
    assert r.json()["from_version"] == timeline[before]
    page = viewer_client.get(f"/memory/{timeline['key']}/diff", {"to": timeline[to]}).content.decode()
    frm = page.split('name="frm"', 1)[1].split("</select>", 1)[0]
    assert f'<option value="{timeline[before]}" selected>' in frm


def test_the_diff_pages_choices_read_newest_first(viewer_client, timeline) -> None:
    page = viewer_client.get(f"/memory/{timeline['key']}/diff").content.decode()
    to = page.split('name="to"', 1)[1].split("</select>", 1)[0]
    assert re.findall(r'value="([^"]+)"', to) == [timeline[n] for n in ("R2", "B", "A", "R1")]


def test_commit_times_are_shown_in_utc_as_the_revisions_are(viewer_client, timeline) -> None:
    rows = versions_rows(viewer_client.get(f"/memory/{timeline['key']}/").content.decode())
    assert '<time datetime="2026-11-03T10:00:00+00:00">2026-11-03 10:00:00</time>' in rows[1]
    page = viewer_client.get(f"/memory/{timeline['key']}/diff").content.decode()
    assert f"2026-11-03 10:00:00 · git · {timeline['B'][4:12]} · dream: periodic" in page


@pytest.fixture
def cut(monkeypatch, timeline) -> dict[str, str]:
    """The same store with one commit listed: A and R1 are behind the cut."""
    monkeypatch.setattr(nanobot, "COMMITS_SHOWN", 1)
    return timeline


def test_a_cut_list_says_older_versions_exist_and_calls_none_the_first(viewer_client, cut) -> None:
    page = viewer_client.get(f"/memory/{cut['key']}/").content.decode()
    rows = versions_rows(page)
    listed = [re.search(r'<code title="([^"]+)"', r).group(1) for r in rows if "<code" in r]
    assert listed == [cut["R2"], cut["B"]]
    assert "the first version" not in page
    assert "Older versions are not listed here: the git history goes back further." in page
    assert f"/diff?to={cut['B']}" in page


def test_the_oldest_listed_commit_still_diffs_with_the_one_before_it(viewer_client, cut) -> None:
    r = viewer_client.get(f"/api/memory/{cut['key']}/diff", {"to": cut["B"]})
    assert r.json()["from_version"] == cut["A"]
    page = viewer_client.get(f"/memory/{cut['key']}/diff", {"to": cut["B"]}).content.decode()
    frm = page.split('name="frm"', 1)[1].split("</select>", 1)[0]
    assert f'<option value="{cut["A"]}" selected>' in frm and "Nothing comes before" not in page


def test_an_edit_through_tapeview_diffs_with_what_came_before_it_not_with_its_own_commit(
    viewer_client, writer, timeline
) -> None:
    """Tapeview keeps a revision of its edit and commits it to nanobot's git store: two versions of
    one text. "The one before" either of them is the version before the edit."""
    key = timeline["key"]
    base = viewer_client.get(f"/api/memory/{key}/versions").json()["items"][0]["version"]
    store = MemoryStore.objects.get(key=key)
    text = Path(store.path).read_text()
    edited = writer.put(
        f"/api/memory/{key}/long-term", {"content": text + "- edited here\n", "base_version": base}
    )
    assert edited.status_code == 200
    items = viewer_client.get(f"/api/memory/{key}/versions").json()["items"]
    revision, commit = items[0]["version"], items[1]["version"]
    assert commit.startswith("git:") and not revision.startswith("git:")  # the same text twice
    for newest in (revision, commit):
        r = viewer_client.get(f"/api/memory/{key}/diff", {"to": newest}).json()
        assert r["from_version"] == base, newest
        assert "+- edited here" in r["diff"]
