"""Odd query strings and form values: the page with its defaults and an error, or a conflict; never a 500."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_admin.models import MemoryStore
from memory_admin.stores import bub_zone, nanobot_history
from tapeview.accounts.models import AuditEvent

pytestmark = pytest.mark.django_db


def zone() -> MemoryStore:
    return MemoryStore.objects.get(kind=bub_zone.KIND)


@pytest.mark.parametrize("days", ["²", "abc", "-1", "99999999", "1e3", "3.5"])
def test_a_bad_prune_days_value_shows_the_page_with_the_default_and_why(
    operator_client, memory_sources, days
) -> None:
    r = operator_client.get(f"/memory/{zone().key}/", {"days": days})
    page = r.content.decode()
    assert r.status_code == 200
    assert 'id="prune-error"' in page and "No preview:" in page
    assert 'name="days" min="0" max="36500" value="30"' in page
    assert 'id="prune-preview"' not in page


def test_the_superscript_two_is_not_a_number_of_days(operator_client, memory_sources) -> None:
    r = operator_client.get(f"/memory/{zone().key}/?days=²")
    assert r.status_code == 200 and "No preview: Enter a whole number." in r.content.decode()


def test_a_good_prune_days_value_gets_its_preview(operator_client, memory_sources) -> None:
    page = operator_client.get(f"/memory/{zone().key}/", {"days": "0"}).content.decode()
    assert 'id="prune-preview"' in page and 'id="prune-error"' not in page


@pytest.mark.parametrize("base", ["²", "abc", "٣", "1e3", "8.0", "9" * 30])
@pytest.mark.parametrize("action", ["long_term", "daily", "clear", "move"])
def test_a_non_numeric_base_version_on_a_zone_write_is_a_conflict(
    operator_client, memory_sources, base, action
) -> None:
    store = zone()
    before = Path(store.path).read_bytes()
    r = operator_client.post(
        f"/memory/{store.key}/zone",
        {"action": action, "text": "my note", "base_version": base, "confirmed": "on"},
    )
    page = r.content.decode()
    assert r.status_code == 409
    assert "while you were editing" in page and "Nothing was written." in page
    assert Path(store.path).read_bytes() == before and not AuditEvent.objects.exists()


def test_a_zone_restore_of_a_version_that_is_not_a_number_is_refused(operator_client, memory_sources) -> None:
    store = zone()
    before = Path(store.path).read_bytes()
    r = operator_client.post(
        f"/memory/{store.key}/zone",
        {"action": "restore", "version": "²", "base_version": "8", "confirmed": "on"},
    )
    assert r.status_code == 400 and "Not written" in r.content.decode()
    assert Path(store.path).read_bytes() == before


def test_a_restore_of_a_zone_version_that_is_not_a_number_is_not_found(
    operator_client, memory_sources
) -> None:
    r = operator_client.post(
        f"/memory/{zone().key}/restore", {"version": "²", "base_version": "8", "confirmed": "on"}
    )
    assert r.status_code == 404


def test_a_too_long_history_search_shows_the_whole_history(viewer_client, memory_sources) -> None:
    history = MemoryStore.objects.get(kind=nanobot_history.KIND)
    r = viewer_client.get(f"/memory/{history.key}/", {"q": "x" * 5000})
    assert r.status_code == 200 and "nothing matches" not in r.content.decode()


@pytest.mark.parametrize("kind", ["x" * 500, "\x00", "nanobot"])
def test_any_kind_filter_gives_the_store_list(viewer_client, memory_sources, kind) -> None:
    assert viewer_client.get("/memory/", {"kind": kind}).status_code == 200


def test_a_write_meant_for_another_kind_of_store_is_not_found(operator_client, memory_sources) -> None:
    store = zone()
    r = operator_client.post(
        f"/memory/{store.key}/kv", {"action": "set", "key": "k", "value": "v", "base_version": "8"}
    )
    assert r.status_code == 404
