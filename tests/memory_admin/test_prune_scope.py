"""A prune preview is for operators in the browser, so a dry run over the API needs write scope, as documented."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_admin.models import MemoryStore

pytestmark = pytest.mark.django_db


def zone() -> MemoryStore:
    return MemoryStore.objects.filter(kind="bub.zone").first()


def test_the_store_page_shows_the_prune_preview_to_operators_only(
    viewer_client, user_factory, memory_sources
) -> None:
    page = viewer_client.get(f"/memory/{zone().key}/", {"days": "0"}).content.decode()
    assert 'id="prune-preview"' not in page and "Prune daily notes" not in page
    viewer_client.force_login(user_factory("olga", "operator"))
    page = viewer_client.get(f"/memory/{zone().key}/", {"days": "0"}).content.decode()
    assert 'id="prune-preview"' in page


def test_a_read_token_gets_403_naming_write_scope_even_for_a_dry_run(reader, writer, memory_sources) -> None:
    store = zone()
    before = Path(store.path).read_bytes()
    for dry_run in (True, False):
        r = reader.post(f"/api/memory/{store.key}/prune", {"older_than_days": 0, "dry_run": dry_run})
        assert r.status_code == 403 and "write scope" in r.json()["detail"]
    dry = writer.post(f"/api/memory/{store.key}/prune", {"older_than_days": 0, "dry_run": True})
    assert dry.status_code == 200 and dry.json()["dry_run"] is True
    assert Path(store.path).read_bytes() == before


def test_the_api_docs_say_a_prune_and_its_dry_run_both_need_write_scope(reader) -> None:
    doc = reader.get("/api/openapi.json").json()
    description = doc["paths"]["/api/memory/{store_id}/prune"]["post"]["description"]
    assert "Both need write scope" in description and "a dry run too" in description
    assert "A read token or a viewer gets 403" in description


@pytest.mark.parametrize("days", [True, False, "5", 5.5, None], ids=repr)
def test_a_prune_s_days_must_be_a_whole_number_in_json_not_a_boolean_a_fraction_or_a_string(
    writer, memory_sources, days
) -> None:
    store = zone()
    before = Path(store.path).read_bytes()

    r = writer.post(f"/api/memory/{store.key}/prune", {"older_than_days": days, "dry_run": False})

    assert r.status_code == 422
    assert r.json() == {
        "detail": [
            {"loc": ["body", "older_than_days"], "msg": "Input should be a valid integer", "type": "int_type"}
        ]
    }
    assert Path(store.path).read_bytes() == before


def test_a_prune_s_days_as_a_json_integer_is_taken(writer, memory_sources) -> None:
    r = writer.post(f"/api/memory/{zone().key}/prune", {"older_than_days": 5})
    assert r.status_code == 200 and r.json()["dry_run"] is True


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ({"older_than_days": 0, "dry_run": "no"}, ["body", "dry_run"]),
        ({"older_than_days": 0, "dry_run": 0}, ["body", "dry_run"]),
        ({"older_than_days": 0, "dry_run": False, "dryrun": True}, ["body", "dryrun"]),
        ([], ["body"]),
    ],
    ids=["dry_run-as-text", "dry_run-as-number", "unknown-field", "not-an-object"],
)
def test_a_prune_whose_body_is_not_what_it_means_is_422_and_prunes_nothing(
    writer, memory_sources, body, where
) -> None:
    store = zone()
    before = Path(store.path).read_bytes()
    r = writer.post(f"/api/memory/{store.key}/prune", body)
    assert r.status_code == 422 and [e["loc"] for e in r.json()["detail"]] == [where]
    assert Path(store.path).read_bytes() == before


def test_a_long_term_write_with_an_unknown_field_is_422_and_writes_nothing(writer, memory_sources) -> None:
    store = zone()
    before = Path(store.path).read_bytes()
    r = writer.put(
        f"/api/memory/{store.key}/long-term", {"content": "x", "base_version": "1", "mode": "append"}
    )
    assert r.status_code == 422 and [e["loc"] for e in r.json()["detail"]] == [["body", "mode"]]
    assert Path(store.path).read_bytes() == before
