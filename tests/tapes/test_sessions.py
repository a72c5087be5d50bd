"""The session index's filters by errors and kind, its sort links, its saved views, its relative times."""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client

from tapeview.tapes.models import SavedView, Tape
from tapeview.tapes.templatetags.when import ago, relative
from tests.tapes.operator_sources import serve

pytestmark = pytest.mark.django_db

LABELS = re.compile(r'<td class="label"><a href="/tapes/\w+/"[^>]*>([^<]+)</a>')


def labels(client: Client, **params: str) -> list[str]:
    return [html.unescape(label) for label in LABELS.findall(client.get("/", params).content.decode())]


@pytest.fixture
def families(settings, tmp_path) -> None:
    """Sessions of every family: Bub samples, nanobot, yachiyo and araliya, indexed."""
    serve(settings, tmp_path)


def sessions(**filters: object) -> set[str]:
    return set(Tape.objects.filter(owner__isnull=True, **filters).values_list("label", flat=True))


def test_has_errors_lists_only_the_sessions_with_an_error(viewer_client, served) -> None:
    listed = labels(viewer_client, errors="1")
    assert set(listed) == sessions(errors__gt=0) and "cli:local" in listed
    assert "hand_memory_zone" not in listed and len(listed) < len(labels(viewer_client))


@pytest.mark.parametrize("kind", ["bub", "nanobot", "yachiyo", "araliya"])
def test_the_kind_filter_lists_only_that_familys_sessions(viewer_client, families, kind) -> None:
    listed = labels(viewer_client, kind=kind)
    assert listed and set(listed) == sessions(kind=kind)


def test_the_index_links_to_each_kind_held_and_to_the_sessions_with_errors(viewer_client, families) -> None:
    page = viewer_client.get("/", {"q": "a"}).content.decode()
    quick = re.search(r'<nav class="quick".*?</nav>', page, re.S).group(0)
    for kind in ("bub", "nanobot", "yachiyo", "araliya"):
        assert f'href="?q=a&amp;kind={kind}"' in quick
    assert 'href="?q=a&amp;errors=1"' in quick
    assert '<option value="nanobot" selected>' in viewer_client.get("/?kind=nanobot").content.decode()


@pytest.mark.parametrize("query", ["kind=cobol", "errors=0", "sort=password", "page=-1", "kind=" + "x" * 500])
def test_a_parameter_the_index_does_not_know_is_ignored(viewer_client, served, query) -> None:
    r = viewer_client.get(f"/?{query}")
    assert r.status_code == 200 and set(LABELS.findall(r.content.decode())) == sessions()
    assert labels(viewer_client, errors="0") == labels(viewer_client)


def test_figures_sort_largest_first_on_the_first_click_and_text_a_to_z(viewer_client, served) -> None:
    page = viewer_client.get("/?sort=label").content.decode()
    heads = dict(re.findall(r'<th class="c-(\w+)"[^>]*><a href="\?sort=(-?\w+)"', page))
    assert heads["label"] == "-label"  # the current sort: a second click reverses
    assert (heads["source"], heads["last_anchor"]) == ("source", "last_anchor")
    for key in ("entries", "tokens", "errors", "size", "last", "anchors", "since"):
        assert heads[key] == f"-{key}"


def test_the_filter_form_and_the_rows_carry_the_current_sort(viewer_client, served) -> None:
    page = viewer_client.get("/?sort=-tokens&q=session").content.decode()
    form = re.search(r'<form class="filters".*?</form>', page, re.S).group(0)
    assert '<input type="hidden" name="sort" id="sort" value="-tokens">' in form
    rows = viewer_client.get("/?sort=tokens&q=session", headers={"HX-Request": "true"}).content.decode()
    # The filter's hidden sort follows a sort clicked in the rows (an out-of-band swap).
    assert '<input type="hidden" name="sort" id="sort" value="tokens" hx-swap-oob="true">' in rows
    poll = re.search(r'<div id="rows" hx-get="([^"]*)" hx-trigger="every 2s', rows).group(1)
    assert parse_qs(urlsplit(poll.replace("&amp;", "&")).query) == {"sort": ["tokens"], "q": ["session"]}


def test_a_saved_view_keeps_only_the_known_parameters_and_opens_them(viewer_client, served) -> None:
    r = viewer_client.post(
        "/saved-views/",
        {
            "name": "failing",
            "query": "q=cli&errors=1&sort=-tokens&page=3&kind=cobol&evil=<script>&source=home",
        },
    )
    assert r.status_code == 302 and r["Location"] == "/?q=cli&source=home&errors=1&sort=-tokens"
    assert SavedView.objects.get().query == "q=cli&source=home&errors=1&sort=-tokens"
    html = viewer_client.get("/").content.decode()
    assert (
        '<a href="/?q=cli&amp;source=home&amp;errors=1&amp;sort=-tokens" title="failing">failing</a>' in html
    )
    assert labels(viewer_client, **{k: v[0] for k, v in parse_qs(SavedView.objects.get().query).items()}) == [
        "cli:local"
    ]


def test_saving_a_name_again_replaces_that_view(viewer_client, served) -> None:
    viewer_client.post("/saved-views/", {"name": "mine", "query": "q=cli"})
    r = viewer_client.post("/saved-views/", {"name": "mine", "query": "q=telegram"}, follow=True)
    assert [v.query for v in SavedView.objects.all()] == ["q=telegram"]
    assert "Replaced the view “mine”." in r.content.decode()


@pytest.mark.parametrize("name", ["", "   ", "x" * 101])
def test_a_view_without_a_usable_name_is_not_saved(viewer_client, served, name) -> None:
    r = viewer_client.post("/saved-views/", {"name": name, "query": "q=cli"}, follow=True)
    assert r.status_code == 200 and "needs a name" in r.content.decode()
    assert not SavedView.objects.exists()


def test_saved_views_are_each_persons_own(client, served, user_factory) -> None:
    vera, olga = user_factory("vera", "viewer"), user_factory("olga", "operator")
    client.force_login(vera)
    client.post("/saved-views/", {"name": "vera's errors", "query": "errors=1"})
    view = SavedView.objects.get()
    assert "vera&#x27;s errors" in client.get("/").content.decode()

    client.force_login(olga)
    assert "vera&#x27;s errors" not in client.get("/").content.decode()
    assert client.post(f"/saved-views/{view.pk}/delete").status_code == 404
    assert SavedView.objects.filter(user=vera).count() == 1

    client.force_login(vera)
    page = client.get("/").content.decode()
    assert "Delete the saved view “vera&#x27;s errors”?" in page  # the confirmation, before the button
    r = client.post(f"/saved-views/{view.pk}/delete", follow=True)
    assert "Deleted the saved view" in r.content.decode() and not SavedView.objects.exists()


def test_saving_and_deleting_a_view_need_a_post_with_the_csrf_token(served, user_factory) -> None:
    vera = user_factory("vera", "viewer")
    client = Client(enforce_csrf_checks=True)
    client.force_login(vera)
    assert client.post("/saved-views/", {"name": "x", "query": ""}).status_code == 403
    assert client.get("/saved-views/").status_code == 405
    view = SavedView.objects.create(user=vera, name="x")
    assert client.post(f"/saved-views/{view.pk}/delete").status_code == 403
    assert client.get(f"/saved-views/{view.pk}/delete").status_code == 405
    assert SavedView.objects.filter(pk=view.pk).exists()


def test_anonymous_visitors_cannot_save_a_view(client, served) -> None:
    r = client.post("/saved-views/", {"name": "x", "query": ""})
    assert r.status_code == 302 and r["Location"].startswith("/login/") and not SavedView.objects.exists()


NOW = datetime(2026, 11, 23, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("before", "said"),
    [
        (timedelta(seconds=2), "just now"),
        (timedelta(seconds=42), "42 s ago"),
        (timedelta(minutes=5, seconds=59), "5 min ago"),
        (timedelta(hours=3, minutes=59), "3 h ago"),
        (timedelta(days=2), "2 d ago"),
        (timedelta(days=65), "2 mo ago"),
        (timedelta(days=800), "2 y ago"),
        (timedelta(hours=-2), "in 2 h"),
    ],
)
def test_a_time_reads_as_how_long_ago_in_its_largest_whole_unit(before, said) -> None:
    assert relative(NOW - before, NOW) == said


def test_a_relative_time_shows_the_exact_utc_time_on_hover() -> None:
    shown = ago(datetime(2026, 11, 23, 9, 0, 5, tzinfo=UTC), NOW)
    assert (
        shown == '<time datetime="2026-11-23T09:00:05+00:00" title="2026-11-23 09:00:05 UTC">2 h ago</time>'
    )
    assert "unknown" in ago(None)


def test_the_index_shows_activity_as_relative_times_with_the_exact_time_as_title(
    viewer_client, served
) -> None:
    t = Tape.objects.get(label="cli:local")
    page = viewer_client.get("/", {"q": "cli:local"}).content.decode()
    exact = t.last_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    cell = f'<td class="when last"><time datetime="{t.last_at.isoformat()}" title="{exact}">'
    assert re.search(re.escape(cell) + r"(\d+ (s|min|h|d|mo|y) ago|just now)</time></td>", page)


def test_labels_sort_a_to_z_whatever_their_case(viewer_client, served) -> None:
    Tape.objects.filter(label="cli:local").update(label="Zeta:local")
    listed = labels(viewer_client, sort="label")
    assert listed == sorted(listed, key=str.lower) and listed != sorted(listed)
    assert labels(viewer_client, sort="-label") == sorted(listed, key=str.lower, reverse=True)
