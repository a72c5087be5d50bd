"""nanobot, yachiyo and araliya sessions in the index, on the timeline and in the context preview."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from django.utils.html import escape

from tapeview.tapes import discovery
from tapeview.tapes.models import Tape

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
NANOBOT_SESSIONS = "current/sessions/b8ca9e09c12a8b370fe81503daa78f45"


@pytest.fixture
def families(settings, tmp_path: Path) -> dict[str, Path]:
    roots = {}
    for name in ("nanobot", "yachiyo", "araliya"):
        roots[name] = tmp_path / name
        shutil.copytree(FIXTURES / name, roots[name])
    # Bare paths: the kind is recognised from what each folder holds.
    settings.TAPEVIEW_SOURCES = ",".join(
        [
            f"nb={roots['nanobot'] / 'current'}",
            f"old={roots['nanobot'] / 'legacy-0.1.4' / 'workspace'}",
            f"ya={roots['yachiyo'] / 'data'}",
            f"ar={roots['araliya']}",
        ]
    )
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    discovery.sync()
    return roots


def page_of(client, label: str, source: str, query: str = "") -> str:
    tape = Tape.objects.get(label=label, source=source)
    return client.get(f"/tapes/{tape.key}/{query}").content.decode()


def snippet(text: str, n: int = 40) -> str:
    return escape(text.strip()[:n].split("\n")[0])


def assert_in_order(page: str, snippets: list[str]) -> None:
    at = 0
    for s in snippets:
        found = page.find(s, at)
        assert found >= 0, f"{s!r} missing or out of order"
        at = found + len(s)


def test_sources_page_shows_detected_kinds_and_health(viewer_client, families) -> None:
    page = viewer_client.get("/sources/").content.decode()
    for label, kind in (("nb", "nanobot"), ("old", "nanobot"), ("ya", "yachiyo"), ("ar", "araliya")):
        row = re.search(rf">{label}</a></td>\s*<td>{kind} <span class=\"badge\"[^>]*>detected</span>", page)
        assert row, f"{label} not detected as {kind}"
    assert page.count("<td>yes</td>") == 8


def test_sources_page_reports_a_missing_folder(viewer_client, settings, families, tmp_path) -> None:
    settings.TAPEVIEW_SOURCES += f",gone=bub:{tmp_path / 'nowhere'}"
    page = viewer_client.get("/sources/").content.decode()
    assert "nowhere does not exist" in page


def test_every_family_is_in_the_session_index_under_its_label(viewer_client, families) -> None:
    page = viewer_client.get("/").content.decode()
    for label in (
        "telegram:8123456789",
        "discord:1187654321098765432",
        "dream:20261118-211144",
        "sess-zh-prefs-0001",
        "01a200e4-e18d-7ffd-b1d0-f7592c930f76 (chat)",
    ):
        assert label in page
    nanobot_file = families["nanobot"] / NANOBOT_SESSIONS / "dGVsZWdyYW06ODEyMzQ1Njc4OQ.jsonl"
    records = [json.loads(line) for line in nanobot_file.read_text().split("\n") if line]
    assert Tape.objects.get(source="nb", label="telegram:8123456789").entries == len(records)


def test_nanobot_messages_appear_in_order_with_tool_results_paired(viewer_client, families) -> None:
    path = families["nanobot"] / NANOBOT_SESSIONS / "dGVsZWdyYW06ODEyMzQ1Njc4OQ.jsonl"
    records = [json.loads(line) for line in path.read_text().split("\n") if line][1:]
    page = page_of(viewer_client, "telegram:8123456789", "nb")
    chat = [
        r["content"]
        for r in records
        if r["role"] != "tool" and isinstance(r["content"], str) and r["content"]
    ]
    assert_in_order(page, [snippet(c) for c in chat])
    for tool in (r for r in records if r["role"] == "tool"):
        call = re.search(
            rf'<li class="call[^"]*">(?:(?!</li>).)*{tool["tool_call_id"]}(?:(?!</li>).)*</li>', page, re.S
        )
        assert call and snippet(tool["content"], 20) in call.group(0)
    failed = re.search(r'<li class="call error">(?:(?!</li>).)*</li>', page, re.S).group(0)
    assert "File not found: notes/router.md" in failed


def test_nanobot_archive_pointer_is_drawn_as_a_boundary(viewer_client, families) -> None:
    page = page_of(viewer_client, "discord:1187654321098765432", "nb")
    boundary = page.index("consolidated into memory up to here")
    # last_archived = 14 points at a tool row: the boundary sits right before the entry with id 14.
    assert re.match(r'</div>\s*<article class="entry k-tool_result[^"]*" id="e\d+">', page[boundary + 35 :])
    assert '<span class="id">id 14</span>' in page[boundary : boundary + 600]


def test_nanobot_context_is_the_unconsolidated_tail_without_the_orphan_result(
    viewer_client, families
) -> None:
    tape = Tape.objects.get(source="nb", label="discord:1187654321098765432")
    page = viewer_client.get(f"/tapes/{tape.key}/context").content.decode()
    roles = re.findall(r'<span class="role">(\w+)</span>', page)
    assert roles and roles[0] == "user"
    positions = [int(p) for p in re.findall(r">from #(\d+)<", page)]
    assert min(positions) > 16  # the metadata line, 14 archived rows and the orphan tool row are not sent


def test_nanobot_commands_are_marked_and_not_sent(viewer_client, families) -> None:
    page = page_of(viewer_client, "telegram:8123456789", "nb")
    first = re.search(r'<article class="entry k-message n-user[^"]*" id="e2">', page).group(0)
    assert "operational" in first


def test_old_nanobot_workspace_sessions_are_found(viewer_client, families) -> None:
    tapes = Tape.objects.filter(source="old")
    assert {t.label for t in tapes} >= {"telegram:8123456789", "discord:1187654321098765432"}
    assert all(t.entries > 0 for t in tapes if t.label != "cli:direct")


def test_yachiyo_messages_runs_and_tool_errors(viewer_client, families) -> None:
    store = families["yachiyo"] / "data" / "session-store" / "sessions"
    for file in store.glob("*.json"):
        session = json.loads(file.read_text())
        tape = Tape.objects.get(source="ya", label__endswith=session["session_id"])
        pages = "".join(
            viewer_client.get(f"/tapes/{tape.key}/?after={after}").content.decode()
            for after in range(0, 400, 50)
        )
        texts = [
            m["content"] for m in session["messages"] if isinstance(m.get("content"), str) and m["content"]
        ]
        assert_in_order(pages, [snippet(t, 25) for t in texts])
        assert pages.count('<div class="anchor phase') == len(session.get("runs", []))


def test_yachiyo_permission_denied_tool_is_red(viewer_client, families) -> None:
    tape = Tape.objects.get(source="ya", label__endswith="sess-low-permission")
    assert tape.errors >= 1
    pages = "".join(viewer_client.get(f"/tapes/{tape.key}/?after={a}").content.decode() for a in (0, 50))
    assert '<li class="call error">' in pages


def test_yachiyo_ids_with_url_characters_and_cjk_work(viewer_client, families) -> None:
    store = families["yachiyo"] / "data" / "session-store"
    weird = "team/运维#1?x"
    source = json.loads((store / "sessions" / "sess-markdown-demo.json").read_text())
    source["session_id"] = weird
    from urllib.parse import quote

    (store / "sessions" / f"{quote(weird, safe='')}.json").write_text(json.dumps(source, ensure_ascii=False))
    idx = json.loads((store / "index.json").read_text())
    idx["sessions"][weird] = {**idx["sessions"]["sess-markdown-demo"], "session_id": weird, "title": "运维"}
    (store / "index.json").write_text(json.dumps(idx, ensure_ascii=False))
    discovery.sync()
    tape = Tape.objects.get(source="ya", label__contains=weird)
    assert viewer_client.get(f"/tapes/{tape.key}/").status_code == 200
    assert weird in viewer_client.get("/?source=ya").content.decode()


def test_a_yachiyo_file_caught_half_written_keeps_the_last_good_read(viewer_client, families) -> None:
    file = families["yachiyo"] / "data" / "session-store" / "sessions" / "sess-zh-prefs-0001.json"
    tape = Tape.objects.get(source="ya", label__endswith="sess-zh-prefs-0001")
    good = tape.entries
    file.write_text(file.read_text()[:500])
    page = viewer_client.get(f"/tapes/{tape.key}/").content.decode()
    tape.refresh_from_db()
    assert tape.entries == good and "showing the last good read" in page
    assert "记住：我最喜欢的颜色是蓝色" in page


def test_a_half_written_file_with_no_good_read_is_shown_as_unreadable(viewer_client, families) -> None:
    file = families["yachiyo"] / "data" / "session-store" / "sessions" / "sess-zh-prefs-0001.json"
    file.write_text(file.read_text()[:500])
    Tape.objects.all().delete()
    discovery.sync()
    tape = Tape.objects.get(source="ya", label__endswith="sess-zh-prefs-0001")
    page = viewer_client.get(f"/tapes/{tape.key}/").content.decode()
    assert "Unreadable line 1" in page and tape.unreadable == 1


def test_araliya_transcript_entries_in_order(viewer_client, families) -> None:
    transcript = next((families["araliya"]).glob("*/memory/sessions/01a200e4-*/transcript.md"))
    headers = re.findall(r"^### (\w+) — ", transcript.read_text(), re.M)
    page = page_of(viewer_client, "01a200e4-e18d-7ffd-b1d0-f7592c930f76 (chat)", "ar")
    roles = re.findall(r'<span class="kind">message</span> <span class="name">(\w+)</span>', page)
    assert roles == headers


def test_the_araliya_pager_counts_entries_not_transcript_lines(viewer_client, families) -> None:
    transcript = next((families["araliya"]).glob("*/memory/sessions/01a200e4-*/transcript.md"))
    entries = len(re.findall(r"^### ", transcript.read_text(), re.M))
    page = page_of(viewer_client, "01a200e4-e18d-7ffd-b1d0-f7592c930f76 (chat)", "ar")
    assert f'#1 – <span class="pager-last">#{entries}</span>' in page
    assert f'id="e{entries}"' in page and f'id="e{entries + 1}"' not in page


def test_yachiyo_dates_run_forwards_a_question_before_its_run(viewer_client, families) -> None:
    tape = Tape.objects.get(source="ya", label__endswith="sess-zh-prefs-0001")
    page = viewer_client.get(f"/tapes/{tape.key}/").content.decode()
    stamps = re.findall(r'<time datetime="([^"]+)"', page.split('id="entries"', 1)[1])
    assert len(stamps) > 10 and stamps == sorted(stamps)
    assert_in_order(page, ["记住：我最喜欢的颜色是蓝色", "run 1: ", "好的，我记住了"])


def test_araliya_split_off_heading_is_shown_for_what_it_is(viewer_client, families) -> None:
    transcript = next((families["araliya"]).glob("*/memory/sessions/01a200e4-*/transcript.md"))
    with transcript.open("a") as f:
        f.write("\n### user — 2026-11-22T09:00:00Z\n\nRelease notes:\n### Fixed\n- the parser\n")
    page = page_of(viewer_client, "01a200e4-e18d-7ffd-b1d0-f7592c930f76 (chat)", "ar", "?end=1")
    assert "split off by araliya" in page


def test_nanobot_flags_reasoning_and_media_are_shown_for_what_they_are(viewer_client, families) -> None:
    page = page_of(viewer_client, "telegram:8123456789", "nb")
    assert '<span class="badge flag-command">command</span>' in page
    assert '<span class="badge flag-channel_delivery">channel delivery</span>' in page
    assert "<summary>reasoning</summary>" in page
    assert "AgACAgIAAxkBAAIBQ2c_photo.png" in page


def test_yachiyo_streamed_deltas_are_folded_with_the_raw_events_one_click_away(
    viewer_client, families
) -> None:
    tape = Tape.objects.get(source="ya", label__endswith="sess-low-permission")
    page = viewer_client.get(f"/tapes/{tape.key}/").content.decode()
    assert "streamed events folded into this text" in page
    assert "I could not save that: memory writes are disabled" in page
    pos = re.search(r'id="e(\d+)">(?:(?!</article>).)*streamed events folded', page, re.S).group(1)
    detail = viewer_client.get(f"/tapes/{tape.key}/entries/{pos}/").content.decode()
    assert ".delta" in detail and "event_indices" in detail


@pytest.mark.parametrize("source", ["nb", "ya", "ar"])
def test_a_record_of_a_rewritten_file_is_its_payload_as_json_text_on_page_and_api(
    viewer_client, reader, families, source
) -> None:
    tape = Tape.objects.filter(source=source, entries__gt=1).order_by("label").first()
    entry = reader.get(f"/api/tapes/{tape.key}/entries", limit=2).json()["items"][-1]
    assert entry["payload"] is not None
    page = viewer_client.get(f"/tapes/{tape.key}/entries/{entry['pos']}/raw")
    api = reader.get(f"/api/tapes/{tape.key}/entries/{entry['pos']}/raw")
    for r in (page, api):
        assert r.status_code == 200 and r["Content-Type"] == "text/plain; charset=utf-8"
        assert r["X-Content-Type-Options"] == "nosniff"
        body = b"".join(r.streaming_content)
        assert json.loads(body) == entry["payload"] and r["Content-Length"] == str(len(body))


def test_a_nanobot_record_too_long_to_parse_is_shown_truncated_and_keeps_its_place(
    viewer_client, families
) -> None:
    """A 5 MB tool output in a nanobot session: shown from its head, marked truncated; the messages
    after it keep their ids (nanobot's loader counts it), and no page or API answer fails."""
    path = families["nanobot"] / NANOBOT_SESSIONS / "dGVsZWdyYW06ODEyMzQ1Njc4OQ.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    big = {"role": "tool", "tool_call_id": "call_big", "name": "exec", "content": "y" * (5 << 20)}
    after = {"role": "assistant", "content": "the last word after the big output"}
    path.write_bytes(b"".join([*lines, json.dumps(big).encode() + b"\n", json.dumps(after).encode() + b"\n"]))
    discovery.sync()
    tape = Tape.objects.get(source="nb", label="telegram:8123456789")
    page = viewer_client.get(f"/tapes/{tape.key}/?end=1").content.decode()
    assert "yyyyyyyy" in page and "the last word after the big output" in page
    assert "truncated" in page.lower()
    # The metadata line is not a message: the messages before the big one are lines[1:].
    assert f'<span class="id">id {len(lines)}</span>' in page  # the one after the big record
    for url in (f"/tapes/{tape.key}/context", f"/api/tapes/{tape.key}/entries?limit=500"):
        assert viewer_client.get(url).status_code == 200, url
