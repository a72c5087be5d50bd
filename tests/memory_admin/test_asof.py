"""'As of': a memory store exactly as it stood at a time, an anchor or an entry of a tape."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlencode

import pytest
from django.utils import timezone

from memory_admin.models import MemoryStore
from memory_admin.stores import bub_zone
from tapeview.tapes import rows
from tapeview.tapes.models import Anchor

pytestmark = pytest.mark.django_db


def store(kind: str, title: str | None = None) -> MemoryStore:
    stores = MemoryStore.objects.filter(kind=kind)
    return stores.get(title=title) if title else stores.first()


def as_of(client, store_id: str, when: datetime | str):
    """GET the store as of `when`, with the Django client or a token's (tests.conftest.Api)."""
    query = urlencode({"as_of": when if isinstance(when, str) else when.isoformat()})
    return client.get(f"/api/memory/{store_id}?{query}")


def test_as_of_before_and_after_an_edit_gives_the_old_and_the_new_content(
    operator_client, memory_sources
) -> None:
    user_md = store("nanobot.file", "USER.md")
    old = operator_client.get(f"/api/memory/{user_md.key}").json()
    between = timezone.now()
    body = {"content": old["content"] + "Timezone: Europe/Berlin\n", "base_version": old["version"]}
    new = operator_client.put(
        f"/api/memory/{user_md.key}/long-term", body, content_type="application/json"
    ).json()
    after = timezone.now()

    then = as_of(operator_client, user_md.key, between)
    assert then.status_code == 200
    assert (then.json()["content"], then.json()["version"]) == (old["content"], old["version"])
    assert datetime.fromisoformat(then.json()["as_of"]) == between.replace(
        microsecond=between.microsecond // 1000 * 1000
    )
    now = as_of(operator_client, user_md.key, after).json()
    assert (now["content"], now["version"]) == (new["content"], new["version"])
    assert now["long_term_text"] == new["content"]
    assert operator_client.get(f"/api/memory/{user_md.key}").json()["as_of"] is None


def test_as_of_before_the_first_version_is_404(reader, memory_sources) -> None:
    user_md = store("nanobot.file", "USER.md")
    r = as_of(reader, user_md.key, "2001-01-01T00:00:00Z")
    assert r.status_code == 404
    assert r.json() == {"detail": "no version of this store as of 2001-01-01T00:00:00+00:00"}


def test_a_time_without_an_offset_is_utc(reader, memory_sources) -> None:
    zone = store("bub.zone")
    second = bub_zone.read_file(Path(zone.path)).zones[1]
    naive = second.date.astimezone(UTC).replace(tzinfo=None).isoformat()
    assert as_of(reader, zone.key, naive).json()["version"] == str(second.version)


def test_a_zone_as_of_each_seal_is_the_version_the_agent_read_then(reader, memory_sources) -> None:
    zone = store("bub.zone")
    for version in bub_zone.read_file(Path(zone.path)).zones:
        body = as_of(reader, zone.key, version.date).json()
        assert body["version"] == str(version.version)
        assert body["content"] == bub_zone.zone_text(version)
        assert body["long_term_text"] == version.long_term and body["daily"] == version.daily
    before = as_of(reader, zone.key, bub_zone.read_file(Path(zone.path)).zones[0].date - timedelta(seconds=1))
    assert before.status_code == 404


def test_a_bad_time_is_422(reader, memory_sources) -> None:
    r = as_of(reader, store("bub.zone").key, "yesterday")
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["query", "as_of"]


def test_the_store_page_as_of_an_anchor_shows_the_zone_then_as_a_past_version(
    viewer_client, memory_sources
) -> None:
    zone = store("bub.zone")
    anchor = Anchor.objects.get(tape=zone.tape, name="phase-1")
    then = bub_zone.current([z for z in bub_zone.read_file(Path(zone.path)).zones if z.seal_pos < anchor.pos])
    page = viewer_client.get(f"/memory/{zone.key}/", {"tape": zone.tape.key, "anchor": "phase-1"})
    html = page.content.decode()
    assert page.status_code == 200
    assert 'id="past-notice"' in html and "This is a past version" in html
    assert f"version <code>{then.version}</code>" in html
    assert "Refactored tape store; fixed reset bug." in html  # a note the agent had then, cleared since
    assert f"anchor phase-1 (#{anchor.pos})" in html
    same = viewer_client.get(f"/memory/{zone.key}/", {"tape": zone.tape.key, "anchor": str(anchor.pos)})
    assert f"version <code>{then.version}</code>" in same.content.decode()


def test_the_store_page_as_of_an_entry_of_an_undated_tape_goes_by_position(
    viewer_client, zone_before_clear
) -> None:
    path = zone_before_clear("memory_zone_pr33_unmerged.jsonl")
    zone = MemoryStore.objects.get(kind="bub.zone", tape__name=path.stem)
    zones = bub_zone.read_file(path).zones
    assert all(z.date is None for z in zones)  # PR #33's lines have no date
    for version in zones[1:]:
        page = viewer_client.get(f"/memory/{zone.key}/", {"tape": zone.tape.key, "pos": version.seal_pos})
        assert f"version <code>{version.version}</code>" in page.content.decode()
        before = viewer_client.get(f"/memory/{zone.key}/", {"tape": zone.tape.key, "pos": version.open_pos})
        assert f"version <code>{version.version - 1}</code>" in before.content.decode()


def test_the_store_page_as_of_an_entry_of_another_tape_takes_its_time(viewer_client, memory_sources) -> None:
    user_md = store("nanobot.file", "USER.md")
    tape = store("bub.zone").tape
    last = rows.of(tape).last()
    # USER.md appeared (and Tapeview saw it) a day after the tape's last entry.
    appeared = last.date + timedelta(days=1)
    os.utime(user_md.path, (appeared.timestamp(), appeared.timestamp()))
    user_md.revisions.update(seen_at=appeared)
    page = viewer_client.get(f"/memory/{user_md.key}/", {"tape": tape.key, "pos": last.pos})
    assert page.status_code == 404 and "no version of this store as of entry" in page.content.decode()
    later = viewer_client.get(
        f"/memory/{user_md.key}/", {"as_of": (appeared + timedelta(hours=1)).isoformat()}
    )
    assert later.status_code == 200 and "It is still the current version." in later.content.decode()


@pytest.mark.parametrize(
    ("query", "status", "says"),
    [
        ({"tape": "nosuchtape"}, 400, "name an anchor"),
        ({"pos": "3"}, 400, "needs its tape"),
        ({"as_of": "not a time"}, 400, "Enter a valid date/time"),
        ({"tape": "0000000000000000", "pos": "3"}, 404, "no such tape"),
        (
            {"tape": "TAPE", "anchor": "no/such/anchor"},
            404,
            "no anchor &#x27;no/such/anchor&#x27; on this tape",
        ),
        ({"tape": "TAPE", "pos": "99999"}, 404, "no entry 99999 on this tape"),
    ],
)
def test_a_point_that_is_not_one_says_why(viewer_client, memory_sources, query, status, says) -> None:
    zone = store("bub.zone")
    query = {k: zone.tape.key if v == "TAPE" else v for k, v in query.items()}
    page = viewer_client.get(f"/memory/{zone.key}/", query)
    assert page.status_code == status and says in page.content.decode()


def test_the_store_page_offers_as_of_and_each_zone_version_links_its_past(
    viewer_client, memory_sources
) -> None:
    zone = store("bub.zone")
    html = viewer_client.get(f"/memory/{zone.key}/").content.decode()
    assert 'name="as_of"' in html
    seal = bub_zone.read_file(Path(zone.path)).zones[2].seal_pos
    assert f"?tape={zone.tape.key}&amp;pos={seal}" in html
