"""A stale edit of a Bub memory zone: the conflict page compares like with like, says who changed it,
and resolving it writes the user's text over the newer version by the zone's own rules."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memory_admin.models import MemoryStore
from tapeview.accounts.models import AuditEvent

pytestmark = pytest.mark.django_db


def zone() -> MemoryStore:
    return MemoryStore.objects.get(kind="bub.zone")


def stale_long_term(client, key: str) -> str:
    """Tab 2 appends a daily note on v8; tab 1 then saves its long-term text on the stale v8."""
    client.post(f"/memory/{key}/zone", {"action": "daily", "text": "Tab two's note.", "base_version": "8"})
    r = client.post(
        f"/memory/{key}/zone", {"action": "long_term", "text": "Likes green tea.", "base_version": "8"}
    )
    assert r.status_code == 409
    return r.content.decode()


def resolving_form(page: str) -> tuple[str, dict[str, str]]:
    form = re.search(
        r'<form method="post" action="([^"]+)" class="editor" id="resolve">(.*?)</form>', page, re.S
    )
    assert form, "the conflict page offers no form to resolve it"
    fields = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', form.group(2)))
    fields["text"] = re.search(r'<textarea name="text"[^>]*>(.*?)</textarea>', form.group(2), re.S).group(1)
    return form.group(1), fields


def test_saving_mine_over_a_newer_zone_writes_my_long_term_text_and_keeps_the_note(
    operator_client, memory_sources
) -> None:
    store = zone()
    page = stale_long_term(operator_client, store.key)

    action, fields = resolving_form(page)
    r = operator_client.post(action, fields)

    assert r.status_code == 302, r.content.decode()[:300]
    shown = operator_client.get(f"/memory/{store.key}/").content.decode()
    assert re.search(r'<pre class="text" id="long-term">Likes green tea.</pre>', shown)
    assert "Tab two&#x27;s note." in shown or "Tab two's note." in shown
    assert '<code id="version">10</code>' in shown
    audited = [(a.action, a.outcome) for a in AuditEvent.objects.order_by("at", "id")]
    assert audited == [
        ("zone.daily", "written"),
        ("zone.long_term", "refused"),
        ("zone.long_term", "written"),
    ]


def test_resolving_a_zone_conflict_is_itself_conditional(operator_client, memory_sources) -> None:
    store = zone()
    action, fields = resolving_form(stale_long_term(operator_client, store.key))
    operator_client.post(
        f"/memory/{store.key}/zone", {"action": "daily", "text": "The agent again.", "base_version": "9"}
    )
    before = Path(store.path).read_bytes()

    r = operator_client.post(action, fields)

    assert r.status_code == 409 and Path(store.path).read_bytes() == before


def test_a_zone_conflict_compares_my_long_term_text_with_the_newer_long_term_text(
    operator_client, memory_sources
) -> None:
    page = stale_long_term(operator_client, zone().key)

    mine = re.search(r'<h2 id="mine-diff">(.*?)</h2>(.*?)<div class="split">', page, re.S)
    assert mine and "long-term memory" in mine.group(1)
    rows = [
        re.sub(r"<[^>]+>", "", row)
        for row in re.findall(r'<tr class="(?:del|add)">(.*?)</tr>', mine.group(2), re.S)
    ]
    # Only the long-term line differs: no daily note shows as deleted.
    assert rows == ["1−Fresh start: prefers concise answers.", "1+Likes green tea."]


def test_a_conflict_says_who_changed_the_store_through_tapeview(
    operator_client, memory_sources, user_factory, client
) -> None:
    store = zone()
    from django.test import Client

    other = Client()
    other.force_login(user_factory("otto", "operator"))
    other.post(f"/memory/{store.key}/zone", {"action": "daily", "text": "Otto's note.", "base_version": "8"})

    r = operator_client.post(
        f"/memory/{store.key}/zone", {"action": "long_term", "text": "x", "base_version": "8"}
    )
    page = r.content.decode()

    assert r.status_code == 409
    assert "otto changed memory zone in Tapeview while you were editing" in page
    assert "The agent changed" not in page


def test_a_conflict_with_my_own_other_tab_says_so(operator_client, memory_sources) -> None:
    page = stale_long_term(operator_client, zone().key)

    assert "You (olga) changed memory zone in another tab while you were editing" in page


def test_a_stale_daily_note_is_offered_again_on_top_of_the_newer_version(
    operator_client, memory_sources
) -> None:
    store = zone()
    # Tab two clears the note this tab appended to, then writes its own text (an append that only
    # follows newer lines is no conflict).
    for sent in (
        {"action": "daily", "text": "Morning note.", "base_version": "8"},
        {"action": "clear", "base_version": "9", "confirmed": "on"},
        {"action": "long_term", "text": "Tab two.", "base_version": "10"},
    ):
        operator_client.post(f"/memory/{store.key}/zone", sent)
    r = operator_client.post(
        f"/memory/{store.key}/zone", {"action": "daily", "text": "Late note.", "base_version": "9"}
    )
    page = r.content.decode()
    assert r.status_code == 409 and "Make my change again on top of version 11" in page
    assert 'id="mine-diff"' not in page  # a note is not compared with the long-term text

    form = re.search(
        r'<form method="post" action="([^"]+)" class="editor" id="resolve">(.*?)</form>', page, re.S
    )
    fields = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', form.group(2)))
    assert operator_client.post(form.group(1), fields).status_code == 302

    shown = operator_client.get(f"/memory/{store.key}/").content.decode()
    assert "Late note." in shown and "Tab two." in shown and '<code id="version">12</code>' in shown


def test_saving_mine_over_a_newer_text_file_still_works(operator_client, memory_sources) -> None:
    memory = MemoryStore.objects.get(kind="nanobot.memory")
    path = Path(memory.path)
    page = operator_client.get(f"/memory/{memory.key}/edit").content.decode()
    base = re.search(r'name="base_version" value="(\w+)"', page).group(1)
    path.write_text(path.read_text() + "\n- Dream's fact.\n")
    page = operator_client.post(
        f"/memory/{memory.key}/edit", {"text": "mine\n", "base_version": base}
    ).content.decode()
    assert "The agent changed MEMORY.md while you were editing" in page

    action, fields = resolving_form(page)
    assert operator_client.post(action, fields).status_code == 302
    assert path.read_text() == "mine\n"
