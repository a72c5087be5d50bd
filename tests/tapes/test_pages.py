"""The tape pages as a signed-in operator sees them, without JavaScript and through htmx."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tapeview.tapes.models import Tape

pytestmark = pytest.mark.django_db


def key(name: str) -> str:
    return Tape.objects.get(name=name).key


def test_it_redirects_anonymous_visitors_to_sign_in(client, served) -> None:
    r = client.get("/")
    assert r.status_code == 302 and r["Location"].startswith("/login/")
    assert client.get(f"/tapes/{key('session_realistic')}/").status_code == 302


def test_session_index_lists_every_session_with_its_statistics(viewer_client, served) -> None:
    html = viewer_client.get("/").content.decode()
    assert "cli:local" in html and "telegram:-1001234567890" in html
    row = re.search(r"cli:local</a>.*?</tr>", html, re.S).group(0)
    for text in ("home", "97", "auto_handoff/context_overflow", "27", "38,856", "47.0\xa0KB", ">3<"):
        assert text in row


def test_sidecars_and_archives_are_not_sessions_of_their_own(viewer_client, served) -> None:
    html = viewer_client.get("/?source=home").content.decode()
    assert "__sidecar__spill" not in html and ".bak" not in html
    page = viewer_client.get(f"/tapes/{key('9d11f561157e98d3__f2234c5149b3f79d')}/").content.decode()
    assert "9d11f561157e98d3__f2234c5149b3f79d.jsonl.20261122T013739Z.bak" in page
    assert "archive" in page


def test_filter_and_sort_rows(viewer_client, served) -> None:
    html = viewer_client.get("/?q=telegram").content.decode()
    assert "telegram:-1001234567890" in html and "cli:local" not in html
    html = viewer_client.get("/?sort=-tokens").content.decode()
    labels = re.findall(r'<td class="label"><a href="/tapes/\w+/"[^>]*>([^<]+)</a>', html)
    assert labels[0] in ("cli:local", "session_realistic", "truncated_last_line_CRASH")
    html = viewer_client.get("/?sort=tokens").content.decode()
    labels = re.findall(r'<td class="label"><a href="/tapes/\w+/"[^>]*>([^<]+)</a>', html)
    # The fewest tokens first; a tape without recorded usage ("–") last, as in either order.
    assert (
        labels[0] in ("9d11f561157e98d3__bf2795869dc767e2", "fork_merged")
        and labels[-1] == "hand_memory_zone"
    )


def test_htmx_gets_only_the_rows(viewer_client, served) -> None:
    r = viewer_client.get("/?q=cli", HTTP_HX_REQUEST="true")
    html = r.content.decode()
    assert html.lstrip().startswith('<div id="rows"') and "<html" not in html and "cli:local" in html


def test_timeline_draws_anchors_as_phases_with_counts(viewer_client, served) -> None:
    html = viewer_client.get(f"/tapes/{key('9d11f561157e98d3__0b871d5e50e7c192')}/").content.decode()
    assert '<div class="anchor phase' in html and "⚓ session/start" in html
    phases = re.search(r'<aside class="phases".*?</aside>', html, re.S).group(0)
    assert re.search(r"phase/explore-done</a> <span class=\"count\"[^>]*>12<", phases)
    assert "auto_handoff/context_overflow" in phases


def test_tool_calls_are_paired_with_their_results_and_failures_are_red(viewer_client, served) -> None:
    html = viewer_client.get(f"/tapes/{key('session_realistic')}/").content.decode()
    call = re.search(r'<article class="entry k-tool_call[^"]*" id="e20">.*?</article>', html, re.S).group(0)
    assert "fs_read" in call and "# csvkit-lite" in call
    assert '<li class="call error">' in call and "not a git repository" in call
    assert 'results shown with the call <a href="#e20">#20</a>' in html


def test_events_show_token_usage_and_system_prompts_are_collapsed(viewer_client, served) -> None:
    html = viewer_client.get(f"/tapes/{key('session_realistic')}/").content.decode()
    assert "total <strong>2,072</strong>" in html and "cached 1,536" in html
    assert "<details><summary>system prompt (" in html


def test_operational_entries_are_marked(viewer_client, served) -> None:
    html = viewer_client.get(f"/tapes/{key('session_realistic')}/?after=45").content.decode()
    assert re.search(r'id="e50">.*?operational', html, re.S)


def test_cjk_and_emoji_are_shown_intact(viewer_client, served) -> None:
    html = viewer_client.get(f"/tapes/{key('session_realistic')}/?end=1").content.decode()
    assert "中文：一张 1x1 的透明图片" in html


def test_tape_without_time_field_shows_time_unknown_never_1970(viewer_client, served) -> None:
    html = viewer_client.get(f"/tapes/{key('memory_zone_pr33_unmerged')}/").content.decode()
    assert "time unknown" in html and "1970" not in html


def test_unfinished_last_line_is_shown_as_unreadable(viewer_client, served) -> None:
    html = viewer_client.get(f"/tapes/{key('truncated_last_line_CRASH')}/?end=1").content.decode()
    assert "Unreadable line 98: unfinished last line" in html
    assert "This reply was being written" in html
    assert 'id="e97"' in html


def test_glued_line_is_shown_as_unreadable_with_the_entries_around_it(viewer_client, served) -> None:
    path = served["samples"] / "fork_merged.jsonl"
    text = path.read_text()
    with path.open("a") as f:
        f.write('{"id": 13, "kind": "message", "payload": {"role": "assi')
        f.write(
            '{"id": 14, "kind": "message", "payload": {"role": "user", "content": "after the crash"}, "meta": {}}\n'
        )
        f.write(
            '{"id": 15, "kind": "message", "payload": {"role": "user", "content": "still here"}, "meta": {}}\n'
        )
    html = viewer_client.get(f"/tapes/{key('fork_merged')}/").content.decode()
    assert "Unreadable line 13: glued line" in html
    assert "still here" in html and text.count("\n") == 12


def test_paging_reads_pages_of_entries_and_jumps(viewer_client, served) -> None:
    k = key("session_realistic")
    first = viewer_client.get(f"/tapes/{k}/").content.decode()
    assert 'id="e1"' in first and 'id="e50"' in first and 'id="e51"' not in first
    newer = viewer_client.get(f"/tapes/{k}/?after=50").content.decode()
    assert 'id="e51"' in newer and 'id="e97"' in newer and 'id="e50"' not in newer
    older = viewer_client.get(f"/tapes/{k}/?before=51").content.decode()
    assert 'id="e50"' in older and 'id="e1"' in older
    jump = viewer_client.get(f"/tapes/{k}/?at=70").content.decode()
    assert 'id="e65"' in jump and 'id="e64"' not in jump and "target" in jump
    end = viewer_client.get(f"/tapes/{k}/?end=1", HTTP_HX_REQUEST="true").content.decode()
    assert end.lstrip().startswith('<section id="entries"') and "end of tape" in end


def test_a_page_indexes_its_tape_when_it_grew(viewer_client, served) -> None:
    path = served["samples"] / "fork_merged.jsonl"
    with path.open("a") as f:
        f.write(
            '{"id": 13, "kind": "message", "payload": {"role": "user", "content": "appended just now"}, "meta": {}}\n'
        )
    assert "appended just now" in viewer_client.get(f"/tapes/{key('fork_merged')}/?end=1").content.decode()


def test_context_preview_follows_bubs_rules(viewer_client, served) -> None:
    html = viewer_client.get(f"/tapes/{key('session_realistic')}/context").content.decode()
    assert "after <em>auto_handoff/context_overflow</em>" in html
    assert '<dd id="message-count">6</dd>' in html
    assert "4,332" in html and "35%" in html
    assert "fs_write" in html and "sender_id=human" in html


def test_context_preview_after_a_chosen_anchor_by_name_or_position(viewer_client, served) -> None:
    k = key("session_realistic")
    by_name = viewer_client.get(f"/tapes/{k}/context?anchor=phase/implement").content.decode()
    by_pos = viewer_client.get(f"/tapes/{k}/context?anchor=45").content.decode()
    assert "after <em>phase/implement</em>" in by_name
    count = re.search(r'id="message-count">(\d+)<', by_name).group(1)
    assert count == re.search(r'id="message-count">(\d+)<', by_pos).group(1)
    assert "[Anchor created: auto_handoff/context_overflow]" in by_name
    assert viewer_client.get(f"/tapes/{k}/context?anchor=nope").status_code == 404


def test_memory_zone_is_shown_to_a_viewer_without_write_controls(viewer_client, served) -> None:
    k = key("hand_memory_zone")
    assert "Memory zone" in viewer_client.get(f"/tapes/{k}/").content.decode()
    html = viewer_client.get(f"/memory/tapes/{k}/", follow=True).content.decode()
    assert '<code id="version">8</code>' in html and "Fresh start: prefers concise answers." in html
    assert "cleared" in html and "daily 2026-10-08 removed" in html
    assert "Change memory" not in html and "Restore v" not in html


def test_huge_entry_has_a_bounded_preview_and_a_show_all(viewer_client, served) -> None:
    path: Path = served["samples"] / "fork_merged.jsonl"
    blob = "y" * (3 * 1024 * 1024)
    with path.open("a") as f:
        f.write('{"id": 13, "kind": "tool_result", "payload": {"results": ["' + blob + '"]}, "meta": {}}\n')
    k = key("fork_merged")
    html = viewer_client.get(f"/tapes/{k}/?end=1").content.decode()
    assert "too big to show here" in html and len(html) < 200_000
    raw = viewer_client.get(f"/tapes/{k}/entries/13/raw")
    assert len(b"".join(raw.streaming_content)) == len(blob) + len(
        '{"id": 13, "kind": "tool_result", "payload": {"results": [""]}, "meta": {}}\n'
    )


def test_entry_page_shows_the_whole_payload(viewer_client, served) -> None:
    html = viewer_client.get(f"/tapes/{key('session_realistic')}/entries/60/").content.decode()
    assert "complete: false" in html and "Raw line" in html


def test_missing_tape_and_missing_entry_are_404(viewer_client, served) -> None:
    assert viewer_client.get("/tapes/0000000000000000/").status_code == 404
    assert viewer_client.get(f"/tapes/{key('session_realistic')}/entries/999/").status_code == 404


def test_a_tape_deleted_under_us_is_404_not_500(viewer_client, served) -> None:
    k = key("fork_merged")
    (served["samples"] / "fork_merged.jsonl").unlink()
    assert viewer_client.get(f"/tapes/{k}/").status_code == 404


def test_a_non_ascii_digit_anchor_is_404_not_500(viewer_client, served) -> None:
    assert viewer_client.get(f"/tapes/{key('session_realistic')}/context?anchor=²").status_code == 404


def test_the_sort_and_page_links_on_the_page_work(viewer_client, served) -> None:
    import html as html_lib

    page = viewer_client.get("/?source=home").content.decode()
    link = html_lib.unescape(re.search(r'<a href="([^"]*sort=-?tokens[^"]*)"', page).group(1))
    assert link.startswith("?") and not link.startswith("??") and "source=home" in link
    sorted_page = viewer_client.get("/" + link).content.decode()
    labels = re.findall(r'<td class="label"><a href="/tapes/\w+/"[^>]*>([^<]+)</a>', sorted_page)
    assert labels[0] == "cli:local"  # a figure: the most tokens first
    again = html_lib.unescape(re.search(r'<a href="([^"]*sort=tokens[^"]*)"', sorted_page).group(1))
    labels = re.findall(
        r'<td class="label"><a href="/tapes/\w+/"[^>]*>([^<]+)</a>',
        viewer_client.get("/" + again).content.decode(),
    )
    assert labels[0] == "9d11f561157e98d3__bf2795869dc767e2"  # a second click reverses: fewest first


def test_a_key_that_cannot_be_a_tape_is_404_saying_no_such_tape(viewer_client, served) -> None:
    for url in ("/tapes/0000000000000000/", "/tapes/not-a-key/", f"/tapes/{'x' * 40}/context"):
        r = viewer_client.get(url)
        assert r.status_code == 404 and "no such tape" in r.content.decode()


def test_a_tape_deleted_under_us_says_its_file_is_gone_on_every_page(viewer_client, served) -> None:
    k = key("fork_merged")
    (served["samples"] / "fork_merged.jsonl").unlink()
    for url in (f"/tapes/{k}/", f"/tapes/{k}/context", f"/tapes/{k}/entries/1/", f"/tapes/{k}/entries/1/raw"):
        r = viewer_client.get(url)
        assert r.status_code == 404 and "this tape&#x27;s file is gone" in r.content.decode()


@pytest.mark.parametrize("pos", [999, 0, 10**30])
def test_an_entry_that_is_not_there_is_404_saying_so(viewer_client, served, pos) -> None:
    k = key("session_realistic")
    for url in (f"/tapes/{k}/entries/{pos}/", f"/tapes/{k}/entries/{pos}/raw"):
        r = viewer_client.get(url)
        assert r.status_code == 404 and f"no entry {pos} on this tape" in r.content.decode()


def test_a_raw_line_is_plain_text_that_browsers_do_not_sniff(viewer_client, served) -> None:
    path: Path = served["samples"] / "session_realistic.jsonl"
    line = path.read_bytes().splitlines(keepends=True)[59]
    r = viewer_client.get(f"/tapes/{key('session_realistic')}/entries/60/raw")
    assert r.status_code == 200 and r["Content-Type"] == "text/plain; charset=utf-8"
    assert r["X-Content-Type-Options"] == "nosniff" and r["Content-Length"] == str(len(line))
    assert b"".join(r.streaming_content) == line


@pytest.mark.parametrize("anchor", ["²", "9" * 30, "nope"])
def test_an_anchor_that_is_not_there_is_404_saying_no_anchor(viewer_client, served, anchor) -> None:
    r = viewer_client.get(f"/tapes/{key('session_realistic')}/context", {"anchor": anchor})
    assert r.status_code == 404 and "no anchor" in r.content.decode()


def test_an_anchor_longer_than_any_name_is_404_saying_no_anchor(viewer_client, served) -> None:
    r = viewer_client.get(f"/tapes/{key('session_realistic')}/context", {"anchor": "a" * 301})
    assert r.status_code == 404 and "no anchor" in r.content.decode()


@pytest.mark.parametrize(
    "url",
    ["/", "/?q=cli", "/tapes/{key}/", "/tapes/{key}/?end=1", "/search/?q=fs_read"],
)
@pytest.mark.parametrize("htmx", [False, True])
def test_pages_with_an_htmx_partial_vary_on_hx_request(viewer_client, served, url, htmx) -> None:
    headers = {"HX-Request": "true"} if htmx else {}
    r = viewer_client.get(url.format(key=key("session_realistic")), headers=headers)
    assert r.status_code == 200
    assert "HX-Request" in [v.strip() for v in r["Vary"].split(",")]


def test_the_session_index_and_the_api_list_the_same_sessions(viewer_client, reader, served) -> None:
    for params in ({"q": "telegram"}, {"source": "home"}, {"q": "phase", "source": "samples"}, {}):
        html = viewer_client.get("/", {**params, "sort": "label"}).content.decode()
        on_page = re.findall(r'<td class="label"><a href="/tapes/(\w+)/"', html)
        listed = reader.get("/api/tapes", **params, sort="label", limit=500).json()["items"]
        assert on_page == [t["id"] for t in listed] and on_page


@pytest.mark.parametrize(
    "query", ["after=" + "9" * 30, "before=" + "9" * 30, "at=" + "9" * 30, "at=²", "after=-1"]
)
def test_a_timeline_position_past_any_tape_never_fails(viewer_client, served, query) -> None:
    assert viewer_client.get(f"/tapes/{key('session_realistic')}/?{query}").status_code == 200
