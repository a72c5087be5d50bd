"""Times read alike on every page: the Users page and a yachiyo store show them as the rest of the site does."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory_admin.models import MemoryStore

pytestmark = pytest.mark.django_db


def updated_cells(page: str) -> list[str]:
    """The Updated column of a yachiyo store page, one cell per entry (the third cell of each row)."""
    rows = re.findall(r'<tr id="entry-[^"]+">(.*?)</tr>', page, re.S)
    return [re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)[2] for row in rows]


def test_the_users_page_shows_last_sign_in_as_the_site_shows_times(client, user_factory) -> None:
    olga = user_factory("olga", "operator")
    olga.last_login = datetime(2026, 11, 24, 17, 45, tzinfo=UTC)
    olga.save()
    user_factory("nadia", "viewer")
    client.force_login(user_factory("ada", "admin"))
    page = client.get("/users/").content.decode()
    assert '<time datetime="2026-11-24T17:45:00+00:00">2026-11-24 17:45:00</time>' in page
    assert "Nov. 24, 2026" not in page and "p.m." not in page
    nadia_row = re.search(r"<td>nadia</td>.*?</tr>", page, re.S).group(0)
    assert "<td>never</td>" in nadia_row


def test_a_yachiyo_store_shows_entry_times_as_the_site_shows_times(viewer_client, memory_sources) -> None:
    memory = MemoryStore.objects.get(kind="yachiyo.memory")
    stored = [e["updated_at"] for e in json.loads(Path(memory.path).read_text())["entries"]]
    page = viewer_client.get(f"/memory/{memory.key}/").content.decode()
    cells = updated_cells(page)
    assert len(cells) == len(stored) and cells
    for cell in cells:
        assert re.fullmatch(r'<time datetime="[^"]+">\d{4}-\d\d-\d\d \d\d:\d\d:\d\d</time>', cell), cell
    assert "2026-11-22 01:38:15" in page
    assert not any(raw in page for raw in stored)  # no raw ISO text "2026-11-22T01:38:15.103Z" left


def test_a_yachiyo_time_that_is_no_time_is_shown_as_it_is(viewer_client, memory_sources) -> None:
    memory = MemoryStore.objects.get(kind="yachiyo.memory")
    doc = json.loads(Path(memory.path).read_text())
    doc["entries"][0]["updated_at"] = "last <Tuesday>"
    doc["entries"][1]["updated_at"] = ""
    doc["entries"][2]["updated_at"] = "2026-11-23T15:02:05.553+09:00"
    Path(memory.path).write_text(json.dumps(doc, ensure_ascii=False))
    r = viewer_client.get(f"/memory/{memory.key}/")
    assert r.status_code == 200
    cells = updated_cells(r.content.decode())
    assert "last &lt;Tuesday&gt;" in cells
    assert '<span class="unknown">time unknown</span>' in cells
    # Another zone's time is shown in UTC, as every time on the site is.
    assert '<time datetime="2026-11-23T06:02:05.553000+00:00">2026-11-23 06:02:05</time>' in cells


def test_the_tokens_page_shows_its_times_to_the_second(client, user_factory) -> None:
    from tapeview.accounts import tokens
    from tapeview.accounts.models import ApiToken

    tokens.create("ci-bot", "read")
    ApiToken.objects.update(created_at=datetime(2026, 11, 24, 17, 45, 12, tzinfo=UTC))
    client.force_login(user_factory("ada", "admin"))
    page = client.get("/tokens/").content.decode()
    assert "2026-11-24 17:45:12" in page
