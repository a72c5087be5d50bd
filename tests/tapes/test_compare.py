"""Two sessions (or a phase of each) compared: figures, tools, errors, states diffed, steps aligned."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tapeview.tapes import discovery
from tapeview.tapes.models import Tape

pytestmark = pytest.mark.django_db

DAY = "2026-11-20T10:{:02d}:00+00:00"


def anchor(name: str, state: dict) -> dict:
    return {"kind": "anchor", "payload": {"name": name, "state": state}}


def said(role: str, text: str) -> dict:
    return {"kind": "message", "payload": {"role": role, "content": text}}


def calls(*names: str) -> dict:
    listed = [{"id": f"c{i}", "function": {"name": n, "arguments": "{}"}} for i, n in enumerate(names)]
    return {"kind": "tool_call", "payload": {"calls": listed}}


def results(*failed: bool) -> dict:
    out = [{"kind": "tool", "message": "boom"} if bad else "ok" for bad in failed]
    return {"kind": "tool_result", "payload": {"results": out}}


def run(tokens: int) -> dict:
    usage = {"prompt_tokens": tokens - 10, "completion_tokens": 10, "total_tokens": tokens}
    return {"kind": "event", "payload": {"name": "run", "data": {"status": "ok", "usage": usage}}}


def write_tape(path: Path, entries: list[dict]) -> None:
    lines = [
        json.dumps({"id": i, **e, "meta": {}, "date": DAY.format(i)}) for i, e in enumerate(entries, start=1)
    ]
    path.write_text("".join(line + "\n" for line in lines))


# Session A: explores with ls, then fixes with read_file and bash. B: explores with grep (which
# fails), says something else, then fixes as A did.
A = [
    anchor("session/start", {"owner": "human", "goal": "parse CSV"}),
    said("user", "list the files 2026-11-20"),
    calls("ls"),
    results(False),
    run(100),
    said("assistant", "There are three files."),
    anchor("phase/fix", {"summary": "Explored the repo", "owner": "human", "files": ["a.py", "b.py"]}),
    said("user", "fix the parser"),
    calls("read_file", "bash"),
    results(False, False),
    run(250),
    said("assistant", "Fixed."),
]
B = [
    anchor("session/start", {"owner": "human", "goal": "parse CSV"}),
    said("user", "list the files 2026-11-21"),
    calls("grep"),
    results(True),
    run(120),
    said("assistant", "The search failed."),
    said("user", "try again"),
    anchor("phase/fix", {"summary": "Explored the repo quickly", "files": ["a.py"], "model": "x"}),
    said("user", "fix the parser"),
    calls("read_file", "bash"),
    results(False, True),
    run(300),
    said("assistant", "Fixed."),
]


@pytest.fixture
def pair(settings, tmp_path: Path) -> tuple[Tape, Tape]:
    root = tmp_path / "tapes"
    root.mkdir()
    write_tape(root / "left.jsonl", A)
    write_tape(root / "right.jsonl", B)
    settings.TAPEVIEW_SOURCES = f"runs=bub:{root}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    discovery.sync()
    return Tape.objects.get(name="left"), Tape.objects.get(name="right")


def test_the_api_compares_two_tapes_figures_tools_and_errors(pair, reader) -> None:
    a, b = pair
    got = reader.get("/api/compare", a=a.key, b=b.key)
    assert got.status_code == 200, got.content
    body = got.json()
    left, right = body["a"], body["b"]
    assert (left["tape_id"], right["tape_id"]) == (a.key, b.key)
    assert (left["entries"], right["entries"]) == (len(A), len(B))
    assert (left["anchors"], right["anchors"]) == (2, 2)
    assert left["tool_calls"] == 3 and right["tool_calls"] == 3
    assert left["tools"] == [
        {"name": "bash", "calls": 1},
        {"name": "ls", "calls": 1},
        {"name": "read_file", "calls": 1},
    ]
    assert right["tools"][0] == {"name": "bash", "calls": 1}
    assert {t["name"] for t in right["tools"]} == {"bash", "grep", "read_file"}
    assert left["messages"] == {"assistant": 2, "user": 2}
    assert right["messages"] == {"user": 3, "assistant": 2}
    assert (left["tokens"], right["tokens"]) == (350, 420)
    assert (left["errors"], right["errors"]) == (0, 2)
    # B's failed results are entries 4 and 11.
    assert [e["pos"] for e in right["first_errors"]] == [4, 11]
    assert left["phase"] is None and left["state_anchor"] == "phase/fix"


def test_the_anchors_states_are_diffed_path_by_path(pair, reader) -> None:
    a, b = pair
    diff = reader.get("/api/compare", a=a.key, b=b.key).json()["state_diff"]
    assert not diff["same"]
    changes = {c["path"]: (c["op"], c["a"], c["b"]) for c in diff["changes"]}
    assert changes == {
        "$.summary": ("changed", '"Explored the repo"', '"Explored the repo quickly"'),
        "$.owner": ("removed", '"human"', None),
        "$.files[1]": ("removed", '"b.py"', None),
        "$.model": ("added", None, '"x"'),
    }
    assert {"op": "insert", "text": " quickly"} in diff["summary"]


def test_the_steps_are_aligned_so_what_differs_stands_out(pair, reader) -> None:
    a, b = pair
    lined = reader.get("/api/compare", a=a.key, b=b.key).json()["alignment"]
    ops = [(p["op"], p["a"] and p["a"]["pos"], p["b"] and p["b"]["pos"]) for p in lined["pairs"]]
    # Steps: A 1 anchor, 2 user, 3 ls, 6 assistant, 7 anchor, 8 user, 9 read_file+bash, 12 assistant;
    # B 1, 2, 3 grep, 6 other words, 7 "try again", 8 anchor, 9, 10, 13. Dates differ only in digits.
    assert ops == [
        ("equal", 1, 1),
        ("equal", 2, 2),
        ("replace", 3, 3),
        ("replace", 6, 6),
        ("insert", None, 7),
        ("equal", 7, 8),
        ("equal", 8, 9),
        ("equal", 9, 10),
        ("equal", 12, 13),
    ]
    assert (lined["equal"], lined["differ"], lined["more"]) == (6, 3, False)
    tools = next(p for p in lined["pairs"] if p["a"] and p["a"]["pos"] == 9)
    assert tools["a"]["text"] == tools["b"]["text"] == "read_file, bash"


def test_the_alignment_is_paged_for_long_tapes(pair, reader) -> None:
    a, b = pair
    first = reader.get("/api/compare", a=a.key, b=b.key, limit=3).json()["alignment"]
    assert first["more"] and (first["next_a"], first["next_b"]) == (3, 3)
    second = reader.get(
        "/api/compare", a=a.key, b=b.key, limit=3, after_a=first["next_a"], after_b=first["next_b"]
    ).json()["alignment"]
    assert [p["a"]["pos"] for p in second["pairs"] if p["a"]] == [6, 7, 8]


def test_two_phases_are_compared_on_their_own(pair, reader) -> None:
    a, b = pair
    body = reader.get("/api/compare", a=a.key, b=b.key, pa=7, pb=8).json()
    left, right = body["a"], body["b"]
    assert left["phase"] == {"index": 2, "anchor": "phase/fix", "start_pos": 7, "end_pos": 12}
    assert right["phase"]["start_pos"] == 8
    # The anchor is not an entry of its phase (phases.Phase.entries).
    assert (left["entries"], right["entries"]) == (5, 5)
    assert (left["tool_calls"], right["errors"]) == (2, 1)
    assert left["tokens"] == 250 and left["cost"] is None
    assert [p["a"]["pos"] for p in body["alignment"]["pairs"]] == [7, 8, 9, 12]


def test_an_unknown_tape_is_404_with_detail(pair, reader) -> None:
    a, _ = pair
    got = reader.get("/api/compare", a=a.key, b="nosuchtape")
    assert got.status_code == 404
    assert got.json() == {"detail": "no such tape"}
    phase = reader.get("/api/compare", a=a.key, b=a.key, pa=3)
    assert phase.status_code == 404 and "no phase starts at 3" in phase.json()["detail"]


def test_the_route_is_in_the_openapi_document(reader) -> None:
    doc = reader.get("/api/openapi.json").json()
    op = doc["paths"]["/api/compare"]["get"]
    assert op["operationId"] == "get_comparison"
    assert {p["name"] for p in op["parameters"]} >= {"a", "b", "pa", "pb", "after_a", "after_b", "limit"}
    assert {"200", "404", "422"} <= set(op["responses"])
    # Its shapes are its own: the lineage's diff keeps its name and fields.
    schemas = doc["components"]["schemas"]
    assert set(schemas["StateDiffOut"]["properties"]) == {"added", "removed", "changed", "summary"}
    answer = schemas[op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].split("/")[-1]]
    state = schemas[answer["properties"]["state_diff"]["$ref"].split("/")[-1]]
    assert set(state["properties"]) == {"same", "changes", "more", "summary"}


def test_the_page_shows_both_sides_and_the_steps(pair, viewer_client) -> None:
    a, b = pair
    page = viewer_client.get("/compare/", {"t": [a.key, b.key]})
    assert page.status_code == 200
    text = page.content.decode()
    assert '<td class="num" id="a-entries">12</td>' in text
    assert '<td class="num" id="b-entries">13</td>' in text
    assert '<span id="b-errors">2</span>' in text
    assert "<code>grep</code> × 1" in text
    assert '<tr class="op-insert">' in text and "try again" in text
    assert "<ins> quickly</ins>" in text


def test_the_page_for_an_unknown_tape_is_404(pair, viewer_client) -> None:
    a, _ = pair
    page = viewer_client.get("/compare/", {"a": a.key, "b": "nosuchtape"})
    assert page.status_code == 404
    assert "no such tape" in page.content.decode()


def test_the_page_says_what_is_wrong_with_a_bad_query(pair, viewer_client) -> None:
    a, b = pair
    page = viewer_client.get("/compare/", {"a": a.key, "b": b.key, "pa": "first"})
    assert page.status_code == 400
    assert "This comparison cannot be made" in page.content.decode()


def test_one_tape_given_offers_the_other_to_pick(pair, viewer_client) -> None:
    a, b = pair
    page = viewer_client.get("/compare/", {"a": a.key})
    text = page.content.decode()
    assert page.status_code == 200
    assert f'<option value="{a.key}" selected>' in text and f'<option value="{b.key}">' in text
    assert '<option value="7">2: phase/fix</option>' in text
