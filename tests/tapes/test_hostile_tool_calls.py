"""A tool call that is not the object an agent writes (null, a number, a string where the function
goes) is shown as malformed on the context and handoff pages and in the API, never a 500."""

from __future__ import annotations

import json

import pytest

from tapeview.tapes import discovery
from tapeview.tapes.models import Tape

from .operator_sources import NANOBOT_SESSIONS, serve
from .test_budget import line, write_tape

pytestmark = pytest.mark.django_db

CALLS = {
    "null": [None],
    "number": [5],
    "function_a_string": [{"id": "c1", "function": "x"}],
    "function_null": [{"id": "c1", "function": None}],
    "arguments_an_object": [{"id": "c1", "function": {"name": "x", "arguments": {"a": 1}}}],
}


def bad_calls(calls: list) -> list[dict]:
    return [
        line(1, "anchor", {"name": "start", "state": {}}),
        line(2, "message", {"role": "user", "content": "go"}),
        line(3, "tool_call", {"calls": calls}),
        line(4, "message", {"role": "assistant", "content": "done"}),
    ]


@pytest.mark.parametrize("calls", CALLS.values(), ids=CALLS.keys())
def test_a_malformed_tool_call_is_shown_on_the_context_and_handoff_pages(
    operator_client, served, calls: list
) -> None:
    k = write_tape(served["samples"], "badcalls", bad_calls(calls))
    for url in (f"/tapes/{k}/context", f"/tapes/{k}/context?anchor=1", f"/tapes/{k}/handoff"):
        answer = operator_client.get(url)
        assert answer.status_code == 200, url
        assert "done" in answer.content.decode() or "handoff" in url, url
    api = operator_client.get(f"/api/tapes/{k}/context")
    assert api.status_code == 200
    assert [m["role"] for m in api.json()["messages"]][-1] == "assistant"


def test_the_context_page_names_the_malformed_call(operator_client, served) -> None:
    k = write_tape(served["samples"], "badcalls", bad_calls([None, {"id": "c2", "function": "x"}]))
    page = operator_client.get(f"/tapes/{k}/context").content.decode()
    assert page.count("(malformed tool call)") == 2
    api = operator_client.get(f"/api/tapes/{k}/context").json()
    calls = [m for m in api["messages"] if m["tool_calls"]][0]["tool_calls"]
    assert [c["function"] for c in calls] == [
        {"name": "(malformed tool call)", "arguments": "null"},
        {"name": "(malformed tool call)", "arguments": '"x"'},
    ]


@pytest.mark.parametrize(
    "call",
    [
        {"id": "c1", "type": "function", "function": {"name": "x", "arguments": 5}},
        {"id": "c1", "type": "function", "function": {"arguments": "{}"}},
    ],
    ids=["arguments_a_number", "no_name"],
)
def test_a_malformed_nanobot_tool_call_is_shown_on_the_context_page(
    operator_client, settings, tmp_path, call: dict
) -> None:
    roots = serve(settings, tmp_path)
    path = next((roots["nanobot"] / NANOBOT_SESSIONS).glob("Y2xpOmRpcmVjdA.jsonl"))
    rows = [
        {"role": "user", "content": "go", "timestamp": "2026-11-22T01:00:00"},
        {"role": "assistant", "content": "", "tool_calls": [call], "timestamp": "2026-11-22T01:00:01"},
        {
            "role": "tool",
            "tool_call_id": "c1",
            "name": "x",
            "content": "ok",
            "timestamp": "2026-11-22T01:00:02",
        },
        {"role": "assistant", "content": "done", "timestamp": "2026-11-22T01:00:03"},
    ]
    with path.open("a") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    discovery.sync()
    k = Tape.objects.get(source="nb", rel__endswith="Y2xpOmRpcmVjdA.jsonl").key
    page = operator_client.get(f"/tapes/{k}/context")
    assert page.status_code == 200 and "done" in page.content.decode()
    assert operator_client.get(f"/api/tapes/{k}/context").status_code == 200
