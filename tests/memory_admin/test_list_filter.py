"""The memory list filtered by a kind that matches no store says so, and how to see them all."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def test_a_kind_matching_no_store_says_the_filter_matched_none(viewer_client, memory_sources) -> None:
    page = viewer_client.get("/memory/?kind=zzz").content.decode()

    assert "No memory stores in these sources." not in page
    assert "No store is of the kind “zzz”" in page
    assert '<a href="/memory/" id="clear-filter">' in page


def test_sources_without_stores_still_say_so(viewer_client, db, settings, tmp_path) -> None:
    settings.TAPEVIEW_SOURCES = f"empty=bub:{tmp_path}"
    page = viewer_client.get("/memory/").content.decode()

    assert "No memory stores in these sources." in page and "clear-filter" not in page
