"""A 422 names each bad field where the client sent it: in the body by its own name, in the query by
the parameter's."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def test_a_bad_body_field_is_named_as_it_was_sent(writer, served) -> None:
    key = writer.get("/api/tapes", limit=1).json()["items"][0]["id"]
    r = writer.post(f"/api/tapes/{key}/handoff", {"summary": "no name"})
    assert r.status_code == 422
    assert [e["loc"] for e in r.json()["detail"]] == [["body", "name"]]
    nested = writer.post(f"/api/tapes/{key}/handoff", {"name": "x", "state": "not an object"})
    assert nested.status_code == 422 and nested.json()["detail"][0]["loc"] == ["body", "state"]


def test_a_bad_query_parameter_is_named_as_it_was_sent(reader, served) -> None:
    r = reader.get("/api/tapes", limit="many")
    assert r.status_code == 422 and [e["loc"] for e in r.json()["detail"]] == [["query", "limit"]]
