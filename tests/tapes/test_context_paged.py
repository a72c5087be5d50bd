"""The context preview of a long context: totals of the whole of it, its messages a page at a time."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from tapeview.tapes import context, discovery
from tapeview.tapes.models import Tape

pytestmark = pytest.mark.django_db

FIXTURE = Path(__file__).parents[1] / "fixtures" / "bub" / "session_realistic.jsonl"


def long_tape(folder: Path, copies: int) -> list[str]:
    """One anchor, then the turns of a real session `copies` times over (its anchors left out), ids
    continuing: ~25 messages a copy, a tool call with two calls among them."""
    turns = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
    turns = [t for t in turns if t["kind"] != "anchor"]
    lines = [{"id": 1, "kind": "anchor", "payload": {"name": "session/start", "state": {}}, "meta": {}}]
    for _ in range(copies):
        lines += [{**t, "id": len(lines) + 1} for t in turns]
    text = [json.dumps(line) + "\n" for line in lines]
    (folder / "long.jsonl").write_text("".join(text))
    return text


@pytest.fixture
def tape(settings, tmp_path: Path) -> Tape:
    long_tape(tmp_path, 6)
    settings.TAPEVIEW_SOURCES = f"long=bub:{tmp_path}"
    settings.TAPEVIEW_REFRESH_SECONDS = 3600
    discovery.sync()
    return Tape.objects.get()


@pytest.fixture
def from_the_index(monkeypatch) -> None:
    """Totals as a context too long to read whole gets them: counted from the index."""
    monkeypatch.setattr(context, "EXACT_ROWS", 0)


def shown(page: str) -> list[tuple[str, int]]:
    """(role, source position) of each message on a page."""
    return [
        (role, int(pos))
        for role, pos in re.findall(r'<span class="role">([^<]*)</span>.*?>from #(\d+)<', page, re.S)
    ]


def link(page: str, text: str) -> str | None:
    found = re.search(rf'<a href="(\?[^"]*)"[^>]*>{text}</a>', page)
    return html.unescape(found.group(1)) if found else None


def test_totals_are_those_of_a_full_read_though_the_page_shows_fifty_entries(viewer_client, tape) -> None:
    full = context.preview(tape)
    assert len(full.messages) > context.PAGE_ENTRIES
    page = viewer_client.get(f"/tapes/{tape.key}/context").content.decode()
    assert f'<dd id="message-count">{len(full.messages)}</dd>' in page
    assert f'<dd id="char-count">{full.chars:,}</dd>' in page
    assert f'<dd id="dropped-count">{full.dropped}' in page
    assert len({pos for _, pos in shown(page)}) == context.PAGE_ENTRIES


def test_totals_from_the_index_count_the_entries_and_bytes_a_full_read_finds(
    viewer_client, tape, from_the_index
) -> None:
    full = context.preview(tape)
    page = viewer_client.get(f"/tapes/{tape.key}/context").content.decode()
    sent = len({m.source_pos for m in full.messages})
    assert f'<dd id="message-count">≈ {sent:,} ' in page
    assert f'<dd id="dropped-count">≈ {full.dropped:,} ' in page
    totals = context.summarize(tape)
    lines = Path(tape.path).read_bytes().splitlines(keepends=True)
    assert (totals.sent, totals.rows, totals.span) == (sent, len(lines) - 1, sum(map(len, lines[1:])))
    assert "Bytes after the anchor" in page and "char-count" not in page


@pytest.mark.usefixtures("from_the_index")
def test_page_two_and_every_later_one_show_the_next_messages_as_a_full_read_has_them(
    viewer_client, tape
) -> None:
    full = [(m.role, m.source_pos) for m in context.preview(tape).messages]
    page = viewer_client.get(f"/tapes/{tape.key}/context").content.decode()
    seen = shown(page)
    assert link(page, "⇤ first") is None and "start of the context" in page
    second = viewer_client.get(f"/tapes/{tape.key}/context{link(page, 'later →')}").content.decode()
    assert shown(second)[0] == full[len(seen)]
    page = second
    while (later := link(page, "later →")) is not None:
        seen += shown(page)
        page = viewer_client.get(f"/tapes/{tape.key}/context{later}").content.decode()
    seen += shown(page)
    assert seen == full and "end of the context" in page
    last = viewer_client.get(f"/tapes/{tape.key}/context{link(second, 'last ⇥')}").content.decode()
    assert "end of the context" not in second
    assert len({pos for _, pos in shown(last)}) == context.PAGE_ENTRIES  # the last 50, as the timeline's end
    assert shown(last) == full[-len(shown(last)) :]
    earlier = viewer_client.get(f"/tapes/{tape.key}/context{link(second, '← earlier')}").content.decode()
    assert shown(earlier) == full[: len(shown(earlier))]


def test_a_tool_result_whose_call_is_on_the_page_before_keeps_its_name_and_id(viewer_client, tape) -> None:
    full = context.preview(tape).messages
    call = next(m for m in full if m.tool_calls and len(m.tool_calls) == 2)
    results = [m for m in full if m.role == "tool" and m.source_pos == call.source_pos + 1]
    assert [r.tool_call_id for r in results] == [c["id"] for c in call.tool_calls]
    page = viewer_client.get(f"/tapes/{tape.key}/context?after={call.source_pos}").content.decode()
    first = page[page.index('<li class="ctx-msg') :]
    for result in results:
        assert result.tool_call_id in first and f"<code>{result.name}</code>" in first
    assert shown(page)[:2] == [("tool", call.source_pos + 1)] * 2


def test_the_pager_keeps_the_anchor_asked_for(viewer_client, tape) -> None:
    page = viewer_client.get(f"/tapes/{tape.key}/context", {"anchor": "session/start"}).content.decode()
    assert link(page, "later →").startswith("?anchor=session%2Fstart&after=")


def test_htmx_gets_the_page_of_messages_alone(viewer_client, tape) -> None:
    r = viewer_client.get(f"/tapes/{tape.key}/context?end=1", HTTP_HX_REQUEST="true")
    body = r.content.decode()
    assert r.status_code == 200 and body.startswith('<section id="messages"') and "<h1>" not in body


@pytest.mark.parametrize(
    "query",
    [
        "after=abc",
        "before=-3",
        "after=99999999999999999999",
        "before=0",
        "end=0",
        "end=false",
        "after=",
        "page=2",
    ],
)
def test_a_bad_page_is_ignored_and_shows_the_first_page(viewer_client, tape, query) -> None:
    first = shown(viewer_client.get(f"/tapes/{tape.key}/context").content.decode())
    r = viewer_client.get(f"/tapes/{tape.key}/context?{query}")
    assert r.status_code == 200 and shown(r.content.decode()) == first


def test_a_page_past_the_end_says_so_and_links_the_first(viewer_client, tape) -> None:
    page = viewer_client.get(f"/tapes/{tape.key}/context?after=100000").content.decode()
    assert "No messages on this page" in page and link(page, "the first page") == "?"


@pytest.mark.parametrize("exact", [True, False])
def test_the_queries_of_a_page_do_not_grow_with_the_tape(
    viewer_client, settings, tmp_path, monkeypatch, django_assert_max_num_queries, exact
) -> None:
    if not exact:
        monkeypatch.setattr(context, "EXACT_ROWS", 0)
    settings.TAPEVIEW_REFRESH_SECONDS = 3600
    for copies in (2, 10):
        folder = tmp_path / str(copies)
        folder.mkdir()
        long_tape(folder, copies)
        settings.TAPEVIEW_SOURCES = f"t{copies}=bub:{folder}"
        discovery.sync()
        key = Tape.objects.get(source=f"t{copies}").key
        viewer_client.get(f"/tapes/{key}/context")  # the session's first request
        for query in ("", "?end=1", "?after=60"):
            # One more where this host copies its files for a fleet (PostgreSQL): the copy's check.
            with django_assert_max_num_queries(16 + settings.TAPEVIEW_COPY_FILES):
                assert viewer_client.get(f"/tapes/{key}/context{query}").status_code == 200


def test_the_handoff_page_gives_the_totals_from_the_index_for_a_long_context(
    operator_client, settings, tape, from_the_index
) -> None:
    settings.TAPEVIEW_QUIET_SECONDS = 0
    page = operator_client.get(f"/tapes/{tape.key}/handoff").content.decode()
    sent = len({m.source_pos for m in context.preview(tape).messages})
    assert f"about {sent:,} messages (entries that become messages, counted from the index)" in page
