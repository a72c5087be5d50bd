"""The OpenAPI document names every operation once: client generators reject a repeated operationId."""

from __future__ import annotations

from collections import Counter

import pytest

pytestmark = pytest.mark.django_db

METHODS = {"get", "put", "post", "patch", "delete", "head", "options", "trace"}


def test_every_operation_id_in_the_document_is_unique(reader, capsys) -> None:
    r = reader.get("/api/openapi.json")
    assert r.status_code == 200
    ids = Counter(
        operation["operationId"]
        for item in r.json()["paths"].values()
        for method, operation in item.items()
        if method in METHODS
    )
    assert len(ids) >= 17
    assert [name for name, seen in ids.items() if seen > 1] == []
    # ninja prints a warning into the server's log each time it builds a document with a repeat.
    assert "already used" not in capsys.readouterr().out


def test_the_two_exports_have_their_own_operation_ids(reader) -> None:
    paths = reader.get("/api/openapi.json").json()["paths"]
    assert paths["/api/tapes/{tape_id}/export"]["get"]["operationId"] == "get_export"
    assert paths["/api/memory/{store_id}/export"]["get"]["operationId"] == "get_store_export"
