"""A handoff's body is a JSON object of the fields the API documents: anything else is a 422 that
says what is wrong with it, and nothing is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tapeview.tapes import lookup

pytestmark = pytest.mark.django_db


def _tape(writer) -> tuple[str, Path]:
    key = writer.get("/api/tapes", limit=1).json()["items"][0]["id"]
    return key, Path(lookup.find_tape(key).path)


@pytest.mark.parametrize("body", [[], [{"name": "x"}], 3, '"a string"', "null", "true"])
def test_a_body_that_is_no_json_object_gets_422_saying_so(writer, served, idle, body) -> None:
    key, path = _tape(writer)
    size = path.stat().st_size
    r = writer.post(f"/api/tapes/{key}/handoff", body)
    assert r.status_code == 422
    assert r.json() == {
        "detail": [{"loc": ["body"], "msg": "the body must be a JSON object", "type": "object_type"}]
    }
    assert path.stat().st_size == size, "nothing written"


def test_unknown_fields_get_422_naming_each(writer, served, idle) -> None:
    key, path = _tape(writer)
    size = path.stat().st_size
    r = writer.post(f"/api/tapes/{key}/handoff", {"name": "phase-2", "sumary": "typo", "force": True})
    assert r.status_code == 422
    assert [(e["loc"], e["type"]) for e in r.json()["detail"]] == [
        (["body", "sumary"], "extra_forbidden"),
        (["body", "force"], "extra_forbidden"),
    ]
    assert path.stat().st_size == size, "nothing written"


def test_a_body_of_known_fields_is_written(writer, served, idle) -> None:
    key, _path = _tape(writer)
    r = writer.post(
        f"/api/tapes/{key}/handoff", {"name": "phase-2", "summary": "done", "confirm_stopped": False}
    )
    assert r.status_code == 201
    assert [e["name"] for e in r.json()["entries"]] == ["phase-2", "handoff"]
