"""A store whose versions are the revisions Tapeview kept: its page lists them a page at a time,
and what a page costs does not grow with them."""

from __future__ import annotations

import html
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory_admin import versions
from memory_admin.models import MemoryStore, Revision

pytestmark = pytest.mark.django_db

LISTED = re.compile(r'<td><time[^>]*>[^<]*</time></td><td><code title="([^"]+)">')


def kept(count: int) -> MemoryStore:
    """The araliya store with `count` revisions kept besides the one its file holds now."""
    store = MemoryStore.objects.filter(kind="araliya.kv").order_by("pk").first()
    versions.snapshot(store)
    for n in range(count):
        versions.remember(store, f"v{n:04d}", f'{{"n": {n}}}', "seen")
    store.refresh_from_db()
    return store


def link(page: str, which: str) -> str | None:
    found = re.search(rf'<a href="([^"]*)#versions" id="{which}-versions">', page)
    return html.unescape(found.group(1)) if found else None


def test_the_versions_table_pages_back_and_forth_without_losing_or_doubling_one(
    viewer_client, memory_sources
) -> None:
    store = kept(120)
    url = f"/memory/{store.key}/"
    page = viewer_client.get(url).content.decode()
    assert link(page, "newer") is None
    pages = [LISTED.findall(page)]
    while older := link(page, "older"):
        page = viewer_client.get(url + older).content.decode()
        pages.append(LISTED.findall(page))
    everything = list(
        Revision.objects.filter(store=store).order_by("-seen_at", "-id").values_list("version", flat=True)
    )
    assert [len(p) for p in pages] == [50, 50, 21]
    assert [v for p in pages for v in p] == everything
    assert "the first version" in page

    back = []
    while newer := link(page, "newer"):
        page = viewer_client.get(url + newer).content.decode()
        back.append(LISTED.findall(page))
    assert back == pages[-2::-1]


def test_the_diff_of_a_kept_version_compares_it_with_the_one_kept_before(
    viewer_client, memory_sources
) -> None:
    store = kept(120)
    page = viewer_client.get(f"/memory/{store.key}/diff?to=v0007").content.decode()
    assert "v0006 → v0007" in page
    assert "<mark>6</mark>" in page and "<mark>7</mark>" in page


def queries(client, url: str) -> int:
    client.get(url)
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return len(captured.captured_queries)


@pytest.mark.parametrize("page", ["/", "/?before={middle}", "/diff", "/diff?to=v0003"])
def test_a_store_page_costs_the_same_queries_at_50_and_500_revisions(
    viewer_client, memory_sources, page
) -> None:
    store = kept(50)
    middle = Revision.objects.get(store=store, version="v0025").pk
    counts = [queries(viewer_client, f"/memory/{store.key}{page.format(middle=middle)}")]
    for n in range(50, 500):
        versions.remember(store, f"v{n:04d}", f'{{"n": {n}}}', "seen")
    counts.append(queries(viewer_client, f"/memory/{store.key}{page.format(middle=middle)}"))
    assert Revision.objects.filter(store=store).count() == 501
    assert counts[1] <= counts[0], counts
