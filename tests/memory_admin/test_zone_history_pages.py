"""A Bub zone of many versions: its pages list a page of versions at a time, compare and blame
versions deep in its history, and cost the same queries however many versions it has."""

from __future__ import annotations

import html
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory_admin.blame import attribute
from memory_admin.history import collapse
from memory_admin.kinds import kind_of

pytestmark = pytest.mark.django_db

VERSION_ROW = re.compile(r'<tr(?: class="current")?><td>v(\d+)</td>')
LINK = r'<a href="([^"]+)#versions" id="{}-versions">'


def listed(page: str) -> list[int]:
    return [int(v) for v in VERSION_ROW.findall(page)]


def link(page: str, which: str) -> str | None:
    found = re.search(LINK.format(which), page)
    return html.unescape(found.group(1)) if found else None


def test_the_versions_table_pages_back_and_forth_without_losing_or_doubling_one(
    viewer_client, many_versions
) -> None:
    store = many_versions(zone=120)["zone"]
    page = viewer_client.get(f"/memory/{store.key}/").content.decode()
    assert "120 versions, newest first" in page
    assert link(page, "newer") is None

    pages = [listed(page)]
    while older := link(page, "older"):
        page = viewer_client.get(older).content.decode()
        pages.append(listed(page))
    assert [len(p) for p in pages] == [50, 50, 20]
    assert [v for p in pages for v in p] == list(range(120, 0, -1))
    assert "the first version" in page.split('id="versions"')[1]

    back = []
    while newer := link(page, "newer"):
        page = viewer_client.get(newer).content.decode()
        back.append(listed(page))
    assert back == pages[-2::-1]


def test_each_listed_version_says_what_it_changed(viewer_client, many_versions) -> None:
    store = many_versions(zone=60)["zone"]
    page = viewer_client.get(f"/memory/{store.key}/?before=1000000").content.decode()
    rows = page.split('id="versions"')[1].split("</table>")[0].split("<tr")[2:]
    assert len(rows) == 50
    assert all("long-term memory changed" in row or "long-term" in row for row in rows), rows[0]
    assert all(f"/diff?to={v}" in row for v, row in zip(range(60, 10, -1), rows, strict=True))


def test_the_diff_of_a_version_deep_in_history_compares_it_with_the_one_before(
    viewer_client, many_versions
) -> None:
    store = many_versions(zone=300)["zone"]
    page = viewer_client.get(f"/memory/{store.key}/diff?to=7").content.decode()
    assert "6 → 7" in page
    assert '<tr class="del"><td class="no">1</td>' in page and "version <mark>6</mark>" in page
    assert "version <mark>7</mark>" in page
    # The pickers offer the newest versions and the two compared, selected.
    assert '<option value="7" selected>v7</option>' in page
    assert '<option value="6" selected>v6</option>' in page
    assert '<option value="300" >v300</option>' in page


def test_blame_finds_a_line_written_deep_in_history(viewer_client, many_versions) -> None:
    store = many_versions(zone=130, kept_from=3)["zone"]
    page = viewer_client.get(f"/memory/{store.key}/blame").content.decode()
    kept = re.search(r'<td class="text">- kept since version 3</td>\s*<td><a href="[^"]+\?to=(\d+)"', page)
    assert kept and kept.group(1) == "3"
    first = re.search(r'<td class="text">version 130</td>\s*<td><a href="[^"]+\?to=(\d+)"', page)
    assert first and first.group(1) == "130"


def same_blame(store) -> None:
    from memory_admin import versions
    from memory_admin.blame import attribute_back

    snap = versions.snapshot(store)
    whole = attribute(collapse(kind_of(store).history(store)))
    back = attribute_back(kind_of(store).history_back(store), snap, store.changed_at)
    assert back and [(t, s.version, s.author, s.source) for t, s in back] == [
        (t, s.version, s.author, s.source) for t, s in whole
    ]


@pytest.mark.parametrize("name", ["hand_memory_zone.jsonl", "memory_zone_pr33_unmerged.jsonl"])
def test_blame_walking_back_gives_what_the_whole_history_gives(zone_before_clear, name) -> None:
    from memory_admin.models import MemoryStore

    # The real turns, with their tool calls, before the memory was cleared.
    same_blame(MemoryStore.objects.get(kind="bub.zone", tape__name=zone_before_clear(name).stem))


def test_blame_walking_back_a_zone_returned_to_gives_what_the_whole_history_gives(
    operator_client, memory_sources
) -> None:
    from memory_admin.models import MemoryStore

    store = MemoryStore.objects.get(kind="bub.zone", tape__name="hand_memory_zone")
    for text in ("Likes green tea.", "Likes black tea.", "Likes green tea."):  # an operator's edits, a return
        version = operator_client.get(f"/memory/{store.key}/").content.decode()
        base = re.search(r'<code id="version">(\d+)</code>', version).group(1)
        r = operator_client.post(
            f"/memory/{store.key}/zone", {"action": "long_term", "text": text, "base_version": base}
        )
        assert r.status_code == 302
    same_blame(store)


def test_the_as_of_page_deep_in_history_shows_that_version(viewer_client, many_versions) -> None:
    store = many_versions(zone=120)["zone"]
    page = viewer_client.get(f"/memory/{store.key}/?as_of=2026-01-01T00:09:30").content.decode()
    assert "version <code>9</code>" in page
    assert '<pre class="text" id="long-term">version 9\n- fact 2 holds at version 9</pre>' in page


def queries(client, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, url
    return len(captured.captured_queries)


@pytest.mark.parametrize(
    "page",
    [
        "/",
        "/?before={middle}",
        "/diff",
        "/diff?to={deep}",
        "/blame",
        "/?tape={tape}&pos={middle}",
        "/?as_of={when}",
    ],
)
def test_a_zone_page_costs_the_same_queries_at_50_and_500_versions(
    viewer_client, many_versions, page
) -> None:
    from memory_admin import zones

    counts = []
    for store in many_versions(small=50, large=500).values():
        found = zones.seals(zones.holder_of(store.tape))
        middle = found[len(found) // 2]
        fields = {
            "middle": middle.pos,
            "deep": 5,
            "tape": store.tape.key,
            "when": f"{middle.date:%Y-%m-%dT%H:%M:%S}",
        }
        url = f"/memory/{store.key}{page.format(**fields)}"
        viewer_client.get(url)  # the first look keeps the current version: a write of its own
        counts.append(queries(viewer_client, url))
    assert counts[1] <= counts[0], counts
