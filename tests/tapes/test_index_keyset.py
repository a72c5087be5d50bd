"""The session index pages by keyset: next and previous walk every session once in the sort's order
(ties on a missing time and on equal labels included), a session added between two loads neither
repeats nor hides a row, and the counts the page shows equal the index's rows as tapes come and go."""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tapeview.tapes import discovery, listing
from tapeview.tapes.models import Tape
from tapeview.tapes.views import sessions
from tests.tapes.test_hosts import bub_tapes

KEY = re.compile(r'<td class="label"><a href="/tapes/(\w+)/"')
NEXT = re.compile(r'<a href="(\?[^"]*)"[^>]*>next →')
PREVIOUS = re.compile(r'<a href="(\?[^"]*)"[^>]*>← previous')
TALLY = re.compile(r'<small id="tally">([^<]*) tapes</small>')
WHEN = datetime(2026, 11, 1, tzinfo=UTC)


@pytest.fixture
def elsewhere(db, settings, monkeypatch) -> list[Tape]:
    """Ten sessions of another host (the sync of this one leaves them be), three a page: three with
    no time, four sharing one time and labels equal but for case."""
    settings.TAPEVIEW_HOST = "here"
    settings.TAPEVIEW_SOURCES = ""
    monkeypatch.setattr(sessions, "LIST_PAGE_SIZE", 3)
    made = []
    times = [
        None,
        None,
        None,
        WHEN,
        WHEN,
        WHEN,
        WHEN,
        WHEN + timedelta(hours=1),
        WHEN - timedelta(days=2),
        WHEN,
    ]
    labels = ["Same", "same", "other", "Same", "same", "SAME", "b", "newest", "oldest", "a"]
    for n, (at, label) in enumerate(zip(times, labels, strict=True)):
        made.append(
            Tape.objects.create(
                key=f"k{n:02d}", host="there", source="work", kind="bub", rel=f"t{n}.jsonl",
                path=f"/there/t{n}.jsonl", name=f"t{n}.jsonl", label=label, last_at=at, entries=n,
            )
        )  # fmt: skip
    return made


def expected(tapes: list[Tape], sort: str) -> list[str]:
    field = {"last": "last_at", "label": "label", "entries": "entries"}[sort.lstrip("-")]
    present = [t for t in tapes if getattr(t, field) is not None]
    absent = [t for t in tapes if getattr(t, field) is None]

    def value(t: Tape) -> object:
        v = getattr(t, field)
        return v.lower() if isinstance(v, str) else v

    def tie(t: Tape) -> tuple:
        return (t.label.lower(), t.key)

    desc = sort.startswith("-")
    # Equal values keep the label-then-key order whichever way the sort runs.
    groups = sorted({value(t) for t in present}, reverse=desc)
    ordered = [t for v in groups for t in sorted((t for t in present if value(t) == v), key=tie)]
    return [t.key for t in ordered + sorted(absent, key=tie)]


def walk(client, url: str, link: re.Pattern) -> list[list[str]]:
    """The keys on each page from `url` on, following `link` until there is none."""
    pages = []
    while True:
        response = client.get(url)
        assert response.status_code == 200
        body = response.content.decode()
        pages.append(KEY.findall(body))
        found = link.search(body)
        if not found:
            return pages
        url = "/" + html.unescape(found.group(1))


@pytest.mark.parametrize("sort", ["-last", "label", "-entries", "entries"])
def test_next_and_previous_walk_every_session_once_in_the_sorts_order(viewer_client, elsewhere, sort) -> None:
    forward = walk(viewer_client, f"/?sort={sort}", NEXT)
    assert [len(p) for p in forward] == [3, 3, 3, 1]
    assert [key for p in forward for key in p] == expected(elsewhere, sort)
    first = viewer_client.get(f"/?sort={sort}")
    url = "/?sort=" + sort
    for _ in forward[1:]:
        url = "/" + html.unescape(NEXT.search(viewer_client.get(url).content.decode()).group(1))
    backward = walk(viewer_client, url, PREVIOUS)
    assert backward == forward[::-1]
    assert "page 1 of 4" in first.content.decode()


def test_a_session_added_between_two_loads_neither_repeats_nor_hides_a_row(viewer_client, elsewhere) -> None:
    order = expected(elsewhere, "-last")
    first = viewer_client.get("/").content.decode()
    assert KEY.findall(first) == order[:3]
    Tape.objects.create(
        key="k99", host="there", source="work", kind="bub", rel="new.jsonl", path="/there/new.jsonl",
        name="new.jsonl", label="brand new", last_at=WHEN + timedelta(days=1),
    )  # fmt: skip
    second = viewer_client.get("/" + html.unescape(NEXT.search(first).group(1))).content.decode()
    assert KEY.findall(second) == order[3:6]
    back = viewer_client.get("/" + html.unescape(PREVIOUS.search(second).group(1))).content.decode()
    assert KEY.findall(back) == order[:3]
    assert PREVIOUS.search(back), "the new session is before them now: the page links to it"
    assert KEY.findall(viewer_client.get("/").content.decode()) == ["k99", *order[:2]]


def test_a_cursor_the_index_did_not_make_shows_the_first_page(viewer_client, elsewhere) -> None:
    order = expected(elsewhere, "-last")
    for cursor in ("nonsense", "WyJsYWJlbCIsMSwiYSIsImIiXQ", "W10", "x" * 999):
        response = viewer_client.get("/", {"after": cursor})
        assert response.status_code == 200
        assert KEY.findall(response.content.decode()) == order[:3]


def test_the_htmx_refresh_of_a_later_page_keeps_its_rows(viewer_client, elsewhere) -> None:
    first = viewer_client.get("/").content.decode()
    url = "/" + html.unescape(NEXT.search(first).group(1))
    page = KEY.findall(viewer_client.get(url).content.decode())
    polled = viewer_client.get(url, HTTP_HX_REQUEST="true", HTTP_HX_TRIGGER="rows")
    assert polled.status_code == 200
    assert KEY.findall(polled.content.decode()) == page


def test_past_the_bound_the_page_says_more_than(viewer_client, elsewhere, monkeypatch) -> None:
    monkeypatch.setattr(listing, "BOUND", 4)
    body = viewer_client.get("/").content.decode()
    assert TALLY.search(body).group(1).startswith("more than 4 of ")
    assert "page 1 of more than 2" in body
    assert NEXT.search(body)


def shown(client) -> str:
    return TALLY.search(client.get("/").content.decode()).group(1)


def counted() -> str:
    n = Tape.objects.filter(owner__isnull=True).count()
    return f"{n} of {n}"


def test_the_counts_equal_the_index_as_tapes_come_and_go(viewer_client, settings, tmp_path: Path) -> None:
    one = bub_tapes(tmp_path / "one", "a", "b", "c")
    two = bub_tapes(tmp_path / "two", "d")
    settings.TAPEVIEW_HOST = "here"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    settings.TAPEVIEW_SOURCES = f"one=bub:{one},two=bub:{two}"
    discovery.sync()
    assert shown(viewer_client) == counted() == "4 of 4"
    (one / "e.jsonl").write_bytes((one / "a.jsonl").read_bytes())  # a tape appended to the source
    discovery.sync()
    assert shown(viewer_client) == counted() == "5 of 5"
    (one / "b.jsonl").unlink()
    discovery.sync()
    assert shown(viewer_client) == counted() == "4 of 4"
    settings.TAPEVIEW_SOURCES = f"one=bub:{one}"  # a source removed
    discovery.sync()
    assert shown(viewer_client) == counted() == "3 of 3"
    assert listing.hosts() == sorted(set(Tape.objects.values_list("host", flat=True)))
    assert listing.kinds_held() == ["bub"]
