"""A tape's turns as trees of model and tool calls, for each family: the page, its detail pane, the API."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
from django.utils.html import escape

from tapeview.tapes import prices
from tapeview.tapes.models import Tape

from .turn_sources import FIXTURES, index_families

pytestmark = pytest.mark.django_db

NANOBOT = "ZGlzY29yZDoxMTg3NjU0MzIxMDk4NzY1NDMy"
ARALIYA = "01a200e4-e18d-7ffd-b1d0-f7592c930f76"


@pytest.fixture
def families(settings, tmp_path: Path) -> dict[str, Path]:
    return index_families(settings, tmp_path)


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# The model calls and tool calls of each turn, counted from the file as its agent wrote it.


def bub_calls() -> list[tuple[int, int]]:
    """Bub 0.5.1: a turn per `loop.start`, and per `run` outside a loop (a command's); a model call per
    `run` event, a tool call per call listed."""
    turns: list[list[int]] = []
    looping = False
    for line in _lines(FIXTURES / "bub" / "session_realistic.jsonl"):
        payload = line.get("payload") or {}
        name = payload.get("name") if line["kind"] == "event" else None
        if name == "loop.start":
            turns.append([0, 0])
            looping = True
        elif name == "loop.step" and payload["data"]["status"] in ("ok", "error"):  # the loop's end
            looping = False
        elif name == "run":
            if not looping:
                turns.append([0, 0])
            turns[-1][0] += 1
        elif line["kind"] == "tool_call":
            turns[-1][1] += len(payload["calls"])
    return [tuple(t) for t in turns]


def next_calls() -> list[tuple[int, int]]:
    """Bub-next: a turn per `bubturnid`; a model call per model.completed, a tool call per tool.started."""
    turns: dict[str, list[int]] = {}
    for line in _lines(FIXTURES / "bub-next" / "session_realistic.jsonl"):
        turn = turns.setdefault(line["bubturnid"], [0, 0]) if "bubturnid" in line else [0, 0]
        turn[0] += line["type"] in ("build.bub.model.completed.v1", "build.bub.model.failed.v1")
        turn[1] += line["type"] == "build.bub.tool.started.v1"
    return [tuple(t) for t in turns.values()]


def nanobot_calls() -> list[tuple[int, int]]:
    """nanobot: a turn per user message; a model call per assistant row, a tool call per call in it."""
    turns: list[list[int]] = []
    path = next((FIXTURES / "nanobot" / "current" / "sessions").glob(f"*/{NANOBOT}.jsonl"))
    for line in _lines(path):
        if line.get("role") == "user":
            turns.append([0, 0])
        elif line.get("role") == "assistant":
            turns[-1][0] += 1
            turns[-1][1] += len(line.get("tool_calls") or [])
    return [tuple(t) for t in turns]


def yachiyo_calls() -> list[tuple[int, int]]:
    """yachiyo: a turn per run; a model call per llm.final event of its trace, a tool call per tool.call."""
    doc = json.loads((FIXTURES / "yachiyo/data/session-store/sessions/sess-zh-prefs-0001.json").read_text())
    events = Counter((e["event"]["trace_id"], e["event"]["event"]) for e in doc["events"])
    return [(events[(r["trace_id"], "llm.final")], events[(r["trace_id"], "tool.call")]) for r in doc["runs"]]


def araliya_calls() -> list[tuple[int, int]]:
    """araliya: a turn per `### user` section, a model call per `### assistant` one; no tools."""
    text = (FIXTURES / f"araliya/bot-pkey51aee87e/memory/sessions/{ARALIYA}/transcript.md").read_text()
    turns: list[list[int]] = []
    for role in re.findall(r"^### (user|assistant) — ", text, re.M):
        if role == "user":
            turns.append([0, 0])
        else:
            turns[-1][0] += 1
    return [tuple(t) for t in turns]


FAMILIES = {
    "bub": ("bub", "session_realistic", bub_calls),
    "bub-next": ("next", "session_realistic", next_calls),
    "nanobot": ("nanobot", NANOBOT, nanobot_calls),
    "yachiyo": ("yachiyo", "sess-zh-prefs-0001", yachiyo_calls),
    "araliya": ("araliya", ARALIYA, araliya_calls),
}


def tape_of(family: str) -> Tape:
    source, name, _ = FAMILIES[family]
    return Tape.objects.get(source=source, name=name)


def all_turns(reader, tape: Tape, limit: int = 100) -> list[dict]:
    items, cursor = [], None
    while True:
        answer = reader.get(
            f"/api/tapes/{tape.key}/turns", limit=limit, **({"cursor": cursor} if cursor else {})
        )
        assert answer.status_code == 200, answer.content
        items += answer.json()["items"]
        cursor = answer.json()["next_cursor"]
        if cursor is None:
            return items


@pytest.mark.parametrize("family", FAMILIES)
def test_the_api_gives_each_turn_the_model_and_tool_calls_of_the_file(families, reader, family) -> None:
    expected = FAMILIES[family][2]()
    turns = all_turns(reader, tape_of(family))
    got = [
        (
            sum(c["kind"] == "model_call" for c in t["children"]),
            sum(c["kind"] == "tool_call" for c in t["children"]),
        )
        for t in turns
    ]
    assert got == expected
    assert [t["number"] for t in turns] == list(range(1, len(expected) + 1))
    assert [(t["model_calls"], t["tool_calls"]) for t in turns] == expected
    for t in turns:
        assert set(t) >= {"id", "number", "first_pos", "last_pos", "tokens", "cost", "error", "children"}
        for c in t["children"]:
            assert t["first_pos"] <= c["pos"] <= t["last_pos"]
            if c["kind"] == "tool_call":
                assert c["cost"] is None
            elif c["cost"] is not None:  # priced where the table knows the model, else never guessed
                price = prices.current().find(c["name"])
                assert price is not None
                prompt, completion, cached = (
                    c.get(k) or 0 for k in ("input_tokens", "output_tokens", "cached_tokens")
                )
                assert c["cost"] == pytest.approx(price.cost(prompt, completion, cached))
            assert c["error"] is False or isinstance(c["error"], str)
    if family == "bub":  # its runs name models the shipped table prices
        assert any(c["cost"] for t in turns for c in t["children"] if c["kind"] == "model_call")


@pytest.mark.parametrize("family", FAMILIES)
def test_the_turns_page_draws_the_same_tree(families, viewer_client, family) -> None:
    expected = FAMILIES[family][2]()
    html = viewer_client.get(f"/tapes/{tape_of(family).key}/turns/").content.decode()
    trees = html.split('<details class="turn-node')[1:]
    assert [
        (t.count('class="node k-model_call'), t.count('class="node k-tool_call')) for t in trees
    ] == expected


def test_bub_model_calls_carry_the_usage_of_their_run_event(families, reader) -> None:
    runs = {
        line["id"]: line["payload"]["data"]["usage"]
        for line in _lines(FIXTURES / "bub" / "session_realistic.jsonl")
        if line["kind"] == "event"
        and line["payload"].get("name") == "run"
        and "usage" in line["payload"]["data"]
    }
    calls = {c["pos"]: c for t in all_turns(reader, tape_of("bub")) for c in t["children"]}
    for pos, usage in runs.items():
        assert calls[pos]["tokens"] == usage["total_tokens"]
        assert calls[pos]["input_tokens"] == usage["prompt_tokens"]


def test_failed_calls_are_marked_in_the_api_and_on_the_page(families, reader, viewer_client) -> None:
    # Bub 0.5.1: a run with status error; Bub-next: the call a tool.failed event names.
    failed_runs = [
        line["id"]
        for line in _lines(FIXTURES / "bub" / "session_realistic.jsonl")
        if line["kind"] == "event"
        and line["payload"].get("name") == "run"
        and line["payload"]["data"]["status"] == "error"
    ]
    lines = _lines(FIXTURES / "bub-next" / "session_realistic.jsonl")
    failed_tool = next(line["bubtoolcallid"] for line in lines if line["type"] == "build.bub.tool.failed.v1")
    asked = next(
        (n, i)
        for n, line in enumerate(lines, 1)
        for i, call in enumerate(line["data"].get("tool_calls") or [])
        if call["tool_call_id"] == failed_tool
    )
    failed_models = [n for n, line in enumerate(lines, 1) if line["type"] == "build.bub.model.failed.v1"]
    bub = {c["id"]: c for t in all_turns(reader, tape_of("bub")) for c in t["children"]}
    nxt = {c["id"]: c for t in all_turns(reader, tape_of("bub-next")) for c in t["children"]}
    assert failed_runs and all(bub[f"m{pos}"]["error"] for pos in failed_runs)
    assert {i for i, c in nxt.items() if c["error"]} == {
        f"x{asked[0]}.{asked[1]}",
        *(f"m{n}" for n in failed_models),
    }
    html = viewer_client.get(f"/tapes/{tape_of('bub-next').key}/turns/").content.decode()
    row = re.search(rf'<a class="node k-tool_call error" id="node-x{asked[0]}\.{asked[1]}".*?</a>', html)
    assert row and "✕ error" in row.group(0)


def test_a_deep_link_selects_the_node_and_shows_its_input_and_output(families, viewer_client) -> None:
    tape = tape_of("nanobot")
    path = next((FIXTURES / "nanobot" / "current" / "sessions").glob(f"*/{NANOBOT}.jsonl"))
    rows = path.read_text().splitlines()
    pos = next(n for n, row in enumerate(rows, 1) if '"tool_calls"' in row)  # a line is its position
    call = json.loads(rows[pos - 1])["tool_calls"][0]
    html = viewer_client.get(f"/tapes/{tape.key}/turns/?node=x{pos}.0").content.decode()
    assert re.search(rf'id="node-x{pos}\.0"[^>]*aria-current="true"', html)
    pane = html[html.index('id="node-detail"') :]
    assert f'Tool call <span class="sub">{call["function"]["name"]}</span>' in pane
    argument = next(iter(json.loads(call["function"]["arguments"]).values()))
    assert argument.split("\n")[0] in pane  # the arguments, decoded, as a tree
    assert '<details class="json" open>' in pane


def test_the_raw_and_attributes_tabs_show_the_lines_and_positions(families, viewer_client) -> None:
    tape = tape_of("bub")
    raw = (FIXTURES / "bub" / "session_realistic.jsonl").read_text().splitlines()
    html = viewer_client.get(f"/tapes/{tape.key}/turns/?node=x20.1&tab=raw").content.decode()
    assert 'aria-current="page">Raw lines</a>' in html
    assert "line 20" in html and "line 21" in html  # the call and its result
    assert escape(raw[20][:200]) in html  # the result's line as the agent wrote it
    html = viewer_client.get(f"/tapes/{tape.key}/turns/?node=x20.1&tab=attributes").content.decode()
    attrs = html[html.index('id="node-attributes"') :]
    assert "<dt>positions</dt><dd>[20, 21]</dd>" in attrs
    assert "<dt>error</dt><dd>the tool reported an error</dd>" in attrs
    html = viewer_client.get(f"/tapes/{tape.key}/turns/?node=t16&tab=attributes").content.decode()
    assert "<dt>positions</dt><dd>16–28</dd>" in html  # a turn's lines as a range, however many


def test_htmx_gets_the_detail_pane_alone(families, viewer_client) -> None:
    tape = tape_of("bub")
    answer = viewer_client.get(
        f"/tapes/{tape.key}/turns/?node=m9", headers={"HX-Request": "true", "HX-Target": "node-detail"}
    )
    html = answer.content.decode().strip()
    assert html.startswith('<section class="node-detail" id="node-detail"')
    assert "Model call" in html and "2,072 tokens" in html and "turn-tree" not in html


def test_a_node_not_on_the_page_says_so_and_a_bad_one_is_a_400(families, viewer_client, reader) -> None:
    tape = tape_of("bub")
    html = viewer_client.get(f"/tapes/{tape.key}/turns/?node=m9999").content.decode()
    assert "No node m9999 on this page of turns." in html
    assert viewer_client.get(f"/tapes/{tape.key}/turns/?node=<script>").status_code == 400
    assert viewer_client.get(f"/tapes/{tape.key}/turns/?cursor=bm90LWEtY3Vyc29y").status_code == 400
    bad = reader.get(f"/api/tapes/{tape.key}/turns", cursor="bm90LWEtY3Vyc29y")
    assert bad.status_code == 400 and "cursor" in bad.json()["detail"]


def test_the_api_needs_a_token_or_a_session(families, anonymous) -> None:
    assert anonymous.get(f"/api/tapes/{tape_of('bub').key}/turns").status_code == 401


def test_the_timeline_links_to_the_turns_and_the_conversation(families, viewer_client) -> None:
    tape = tape_of("bub")
    html = viewer_client.get(f"/tapes/{tape.key}/").content.decode()
    assert f'href="/tapes/{tape.key}/turns/">Turns</a>' in html
    assert f'href="/tapes/{tape.key}/conversation/">Conversation</a>' in html
