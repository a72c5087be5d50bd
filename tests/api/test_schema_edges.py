"""Requests the OpenAPI document calls valid are taken as it says, and each refusal it can give is in it:
a whole number written as 3096.0, a cursor this API never handed out, an empty import."""

from __future__ import annotations

import pytest

from tapeview.accounts.audit import Actor
from tapeview.reviews import queues

pytestmark = pytest.mark.django_db


def test_a_whole_number_written_with_a_point_is_an_integer(writer, memory_sources) -> None:
    zone = next(s for s in writer.get("/api/memory").json()["items"] if s["kind"] == "bub.zone")
    pruned = writer.post(f"/api/memory/{zone['id']}/prune", {"older_than_days": 3096.0, "dry_run": True})
    assert pruned.status_code == 200, pruned.content
    assert pruned.json()["dry_run"] is True and pruned.json()["removed"] == []  # no note is that old
    for not_whole in (3096.5, True, "30", float("inf")):
        body = {"older_than_days": not_whole, "dry_run": True}
        refused = writer.post(f"/api/memory/{zone['id']}/prune", body)
        assert refused.status_code == 422 and refused.json()["detail"][0]["loc"] == [
            "body",
            "older_than_days",
        ]
    tape = writer.get("/api/tapes", source="bub", limit=1).json()["items"][0]
    review = writer.post(f"/api/tapes/{tape['id']}/reviews", {"pos": 1.0, "score": 4.0})
    assert review.status_code == 201 and (review.json()["pos"], review.json()["score"]) == (1, 4)


def _paged_reads(document: dict) -> list[tuple[str, dict]]:
    found = []
    for path, item in document["paths"].items():
        operation = item.get("get")
        if operation and any(p["name"] == "cursor" for p in operation.get("parameters", [])):
            found.append((path, operation))
    return found


def test_a_cursor_this_api_never_handed_out_is_a_documented_400(reader, memory_sources) -> None:
    document = reader.get("/api/openapi.json").json()
    ids = {
        "tape_id": reader.get("/api/tapes", source="bub", limit=1).json()["items"][0]["id"],
        "store_id": reader.get("/api/memory", kind="nanobot.memory").json()["items"][0]["id"],
        "queue_id": queues.create("triage", "", Actor("ada")).pk,
    }
    paged = _paged_reads(document)
    assert len(paged) >= 10
    for path, operation in paged:
        url = path.format(**ids)
        required = {
            p["name"]: "x" for p in operation["parameters"] if p.get("required") and p["in"] == "query"
        }
        answer = reader.get(url, cursor="0" * 40, **required)
        assert answer.status_code == 400, (path, answer.content)
        assert "cursor" in answer.json()["detail"], path
        assert "400" in operation["responses"], path


def test_an_empty_import_is_refused_with_why(writer, memory_sources) -> None:
    for body in (b"", b"\n  \n"):
        answer = writer.client.post(
            "/api/reviews/import", body, content_type="application/x-ndjson", headers=writer.headers
        )
        assert answer.status_code == 400 and "no reviews to import" in answer.json()["detail"]
    documented = writer.get("/api/openapi.json").json()["paths"]["/api/reviews/import"]["post"]["responses"]
    assert "400" in documented and "201" in documented
