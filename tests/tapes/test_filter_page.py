"""The session index's filter expression, column picker and time range, as the page shows them and
as a saved view keeps them."""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client

from tapeview.tapes.models import SavedView, Tape
from tests.tapes.operator_sources import serve

pytestmark = pytest.mark.django_db

LABELS = re.compile(r'<td class="label"><a href="/tapes/\w+/"[^>]*>([^<]+)</a>')
HEADERS = re.compile(r'<th class="c-(\w+)"')


@pytest.fixture
def families(settings, tmp_path) -> None:
    serve(settings, tmp_path)


def page(client: Client, **params) -> str:
    answer = client.get("/", params)
    assert answer.status_code == 200
    return answer.content.decode()


def labels(text: str) -> set[str]:
    return {html.unescape(label) for label in LABELS.findall(text)}


def sessions(**filters: object) -> set[str]:
    return set(Tape.objects.filter(owner__isnull=True, **filters).values_list("label", flat=True))


def test_a_filter_lists_the_sessions_it_keeps(viewer_client, families) -> None:
    shown = labels(page(viewer_client, filter='kind == "nanobot" and errors > 0'))
    assert shown == sessions(kind="nanobot", errors__gt=0) and shown


def test_a_bad_filter_says_where_above_the_index_and_keeps_the_form(viewer_client, families) -> None:
    text = page(viewer_client, filter="errors > 0 and (kind == bub", kind="nanobot")
    error = re.search(r'<p class="filter-error"[^>]*role="alert">(.*?)</p>', text, re.S)
    assert (
        error
        and "at character 28: expected &quot;)&quot;, &quot;and&quot; or &quot;or&quot;" in error.group(1)
    )
    assert "no session is listed" in error.group(1)
    assert text.index('class="filter-error"') < text.index('<table class="sessions">')
    assert 'value="errors &gt; 0 and (kind == bub"' in text and 'aria-invalid="true"' in text
    assert '<option value="nanobot" selected>' in text  # the other filters stay as they were
    assert labels(text) == set()


def test_a_bad_filter_in_the_rows_partial_shows_the_message_too(viewer_client, families) -> None:
    answer = viewer_client.get("/", {"filter": "tokens > lots"}, headers={"HX-Request": "true"})
    assert answer.status_code == 200
    assert "at character 10: tokens takes a number, not lots" in answer.content.decode()


def test_the_column_picker_shows_only_the_columns_picked(viewer_client, families) -> None:
    text = page(viewer_client, cols=["label", "tokens", "errors"])
    assert HEADERS.findall(text) == ["label", "tokens", "errors"]
    row = text.split("<tbody>")[1].split("</tr>")[0]
    assert 'class="num tokens"' in row and 'class="num errors' in row and 'class="num size"' not in row
    assert re.search(r'value="tokens" checked', text) and not re.search(r'value="size" checked', text)


def test_every_column_shows_when_none_is_picked(viewer_client, families) -> None:
    text = page(viewer_client)
    assert HEADERS.findall(text) == [
        "label", "source", "entries", "anchors", "last_anchor", "since", "first", "last", "activity",
        "size", "tokens", "cost", "context", "errors",
    ]  # fmt: skip


def test_the_address_bar_gets_the_view_as_a_saved_view_names_it(viewer_client, families) -> None:
    every = ["label", "host", "source", "entries", "anchors", "last_anchor", "since", "first", "last", "activity",
             "size", "tokens", "cost", "context", "errors"]  # fmt: skip
    answer = viewer_client.get("/", {"filter": "errors > 0", "cols": every}, headers={"HX-Request": "true"})
    assert answer["HX-Push-Url"] == "/?filter=errors+%3E+0"
    answer = viewer_client.get("/", {"cols": ["label", "size"], "page": 1}, headers={"HX-Request": "true"})
    assert answer["HX-Push-Url"] == "/?cols=label&cols=size"
    poll = viewer_client.get(
        "/", {"filter": "errors > 0"}, headers={"HX-Request": "true", "HX-Trigger": "rows"}
    )
    assert "HX-Push-Url" not in poll  # the live rows' poll changes no address


@pytest.mark.parametrize("span, back", [("1h", timedelta(hours=1)), ("30d", timedelta(days=30))])
def test_the_time_range_keeps_the_sessions_active_in_it(viewer_client, families, span, back) -> None:
    Tape.objects.filter(label="cli:direct").update(last_at=datetime.now(UTC) - timedelta(minutes=10))
    Tape.objects.filter(label__startswith="telegram").update(last_at=datetime.now(UTC) - timedelta(days=9))
    text = page(viewer_client, range=span)
    assert labels(text) == sessions(last_at__gte=datetime.now(UTC) - back) != set()
    assert f'<option value="{span}" selected>last {span}</option>' in text


def test_a_custom_range_takes_since_and_until(viewer_client, families) -> None:
    text = page(viewer_client, range="custom", since="2026-11-01T00:00", until="2026-11-15T00:00")
    expected = sessions(
        last_at__gte=datetime(2026, 11, 1, tzinfo=UTC), last_at__lt=datetime(2026, 11, 15, tzinfo=UTC)
    )
    assert labels(text) == expected != set()
    assert 'name="since" value="2026-11-01T00:00"' in text and 'name="until" value="2026-11-15T00:00"' in text


def test_a_saved_view_keeps_the_filter_the_columns_and_the_range(viewer_client, families) -> None:
    query = "filter=kind+%3D%3D+nanobot&cols=label&cols=errors&range=7d&evil=1"
    r = viewer_client.post("/saved-views/", {"name": "nano", "query": query})
    saved = SavedView.objects.get().query
    assert saved == "filter=kind+%3D%3D+nanobot&range=7d&cols=label&cols=errors"
    assert r["Location"] == f"/?{saved}"
    text = viewer_client.get(f"/?{saved}").content.decode()
    assert HEADERS.findall(text) == ["label", "errors"]
    assert 'value="kind == nanobot"' in text


def test_the_page_explains_the_language(viewer_client, families) -> None:
    text = page(viewer_client)
    help_text = text.split('id="filter-help"')[1].split("</details>")[0]
    for piece in ('<code>label:"needs-review"</code>', "<code>since:2d</code>", "<code>tokens</code>",
                  "a label of the tape&#x27;s current reviews"):  # fmt: skip
        assert piece in help_text
