"""GET /api/tapes/{id}/lineage and its page: handoffs with their whole state, archives first, diffed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tapeview.tapes.lineage import diff_states, word_diff
from tapeview.tapes.models import Tape

from .test_phases import bub_lines

pytestmark = pytest.mark.django_db

LINK_KEYS = {"anchor", "pos", "date", "state", "diff_from_previous", "tape_id"}
RESET = "9d11f561157e98d3__f2234c5149b3f79d"


def anchors_of(path: Path) -> list[dict]:
    return [
        {"anchor": x["payload"]["name"], "pos": i, "state": x["payload"].get("state")}
        for i, x in enumerate(bub_lines(path), 1)
        if x["kind"] == "anchor" and not x["payload"]["name"].startswith(("memory/", "spill/"))
    ]


def test_lineage_is_the_chain_of_anchors_with_their_whole_state(reader, served) -> None:
    tape = Tape.objects.get(name="session_realistic")
    body = reader.get(f"/api/tapes/{tape.key}/lineage").json()
    assert set(body) == {"items", "next_cursor"} and body["next_cursor"] is None
    want = anchors_of(served["samples"] / "session_realistic.jsonl")
    assert all(set(item) == LINK_KEYS for item in body["items"])
    assert [{k: item[k] for k in ("anchor", "pos", "state")} for item in body["items"]] == want
    assert body["items"][0]["diff_from_previous"] is None
    assert all(item["tape_id"] == tape.key for item in body["items"])


def test_each_handoff_is_diffed_with_the_one_before(reader, served) -> None:
    items = reader.get(f"/api/tapes/{Tape.objects.get(name='session_realistic').key}/lineage").json()["items"]
    for before, after in zip(items, items[1:], strict=False):
        old, new = before["state"] or {}, after["state"] or {}
        diff = after["diff_from_previous"]
        assert diff["added"] == sorted(set(new) - set(old))
        assert diff["removed"] == sorted(set(old) - set(new))
        assert diff["changed"] == sorted(k for k in set(old) & set(new) if old[k] != new[k])
        if old.get("summary") != new.get("summary") and "summary" in {*old, *new}:
            ops = diff["summary"]
            assert "".join(o["text"] for o in ops if o["op"] != "insert") == old.get("summary", "")
            assert "".join(o["text"] for o in ops if o["op"] != "delete") == new.get("summary", "")
        else:
            assert diff["summary"] is None


def test_a_session_archive_comes_first_in_its_lineage(reader, served) -> None:
    home = served["home"]
    archive_file = next(home.glob(f"{RESET}.jsonl.*.bak"))
    tape = Tape.objects.get(source="home", name=RESET)
    archive = Tape.objects.get(source="home", name=archive_file.name)
    items = reader.get(f"/api/tapes/{tape.key}/lineage").json()["items"]
    want = anchors_of(archive_file) + anchors_of(home / f"{RESET}.jsonl")
    assert [(i["anchor"], i["pos"], i["state"]) for i in items] == [
        (w["anchor"], w["pos"], w["state"]) for w in want
    ]
    assert [i["tape_id"] for i in items] == [archive.key] * len(anchors_of(archive_file)) + [tape.key]
    # The reset's session/start names the archive it continues from.
    assert items[-1]["state"]["archived"].endswith(archive_file.name)
    assert "archived" in items[-1]["diff_from_previous"]["added"]


def test_lineage_pages_keep_their_diffs(reader, served) -> None:
    url = f"/api/tapes/{Tape.objects.get(source='home', name=RESET).key}/lineage"
    everything = reader.get(url).json()["items"]
    seen, cursor = [], None
    while True:
        page = reader.get(url, limit=1, **({"cursor": cursor} if cursor else {})).json()
        seen += page["items"]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == everything and len(seen) == 3


def test_a_long_state_is_read_whole_from_the_file(reader, served) -> None:
    summary = "word " * 400
    lines = [
        {
            "id": 1,
            "kind": "anchor",
            "payload": {"name": "session/start", "state": {"owner": "human"}},
            "meta": {},
        },
        {
            "id": 2,
            "kind": "anchor",
            "payload": {"name": "phase/long", "state": {"summary": summary}},
            "meta": {},
        },
    ]
    (served["samples"] / "long_state.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    from tapeview.tapes import discovery

    discovery.sync()
    items = reader.get(f"/api/tapes/{Tape.objects.get(name='long_state').key}/lineage").json()["items"]
    assert items[1]["state"] == {"summary": summary}
    assert items[1]["diff_from_previous"]["summary"] == [{"op": "insert", "text": summary}]


@pytest.mark.parametrize(
    ("old", "new", "ops"),
    [
        ("", "", []),
        ("a b", "a b", [{"op": "equal", "text": "a b"}]),
        ("a b", "a b c ", [{"op": "equal", "text": "a b"}, {"op": "insert", "text": " c "}]),
        (
            "plan the deploy",
            "plan the release",
            [
                {"op": "equal", "text": "plan the"},
                {"op": "delete", "text": " deploy"},
                {"op": "insert", "text": " release"},
            ],
        ),
        (
            "部署 周五",
            "部署 周六",
            [
                {"op": "equal", "text": "部署"},
                {"op": "delete", "text": " 周五"},
                {"op": "insert", "text": " 周六"},
            ],
        ),
    ],
)
def test_summaries_are_diffed_word_by_word(old: str, new: str, ops: list[dict]) -> None:
    assert word_diff(old, new) == ops


def test_a_state_that_is_not_an_object_diffs_as_empty() -> None:
    assert diff_states("DONE", {"summary": "x"}) == {
        "added": ["summary"],
        "removed": [],
        "changed": [],
        "summary": [{"op": "insert", "text": "x"}],
    }


def test_the_lineage_page_shows_the_chain_and_the_summary_diff(viewer_client, served) -> None:
    tape = Tape.objects.get(name="session_realistic")
    html = viewer_client.get(f"/tapes/{tape.key}/lineage").content.decode()
    names = [a["anchor"] for a in anchors_of(served["samples"] / "session_realistic.jsonl")]
    at = 0
    for name in names:
        at = html.index(name, at)
    assert "<del>Explored repo:" in html and "<ins>Implement quoted-field CSV parsing</ins>" in html
    detail = viewer_client.get(f"/tapes/{tape.key}/").content.decode()
    assert f'href="/tapes/{tape.key}/lineage"' in detail


def test_the_lineage_of_a_tape_without_anchors_is_empty(reader, served, tmp_path) -> None:
    (served["samples"] / "bare.jsonl").write_text(
        json.dumps({"id": 1, "kind": "message", "payload": {"role": "user", "content": "hi"}, "meta": {}})
        + "\n"
    )
    from tapeview.tapes import discovery

    discovery.sync()
    body = reader.get(f"/api/tapes/{Tape.objects.get(name='bare').key}/lineage").json()
    assert body == {"items": [], "next_cursor": None}
