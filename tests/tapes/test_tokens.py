"""Token totals from every family's usage records, and "–" (null in the API) where a family records none."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tapeview.tapes import discovery
from tapeview.tapes.models import Tape

from .operator_sources import NANOBOT_SESSIONS, serve, tape

pytestmark = pytest.mark.django_db


@pytest.fixture
def sources(settings, tmp_path: Path) -> dict[str, Path]:
    return serve(settings, tmp_path)


def last_usage(path: Path) -> dict:
    return json.loads(path.read_text().split("\n", 1)[0])["metadata"]["_last_usage"]


@pytest.mark.parametrize(
    ("stem", "label"),
    [
        ("ZGlzY29yZDoxMTg3NjU0MzIxMDk4NzY1NDMy", "discord:1187654321098765432"),
        ("dGVsZWdyYW06ODEyMzQ1Njc4OQ", "telegram:8123456789"),
        ("Y2xpOmRpcmVjdA", "cli:direct"),
    ],
)
def test_a_nanobot_session_counts_the_tokens_of_its_last_turn(
    viewer_client, reader, sources, stem, label
) -> None:
    usage = last_usage(sources["nanobot"] / NANOBOT_SESSIONS / f"{stem}.jsonl")
    t = tape(label, "nb")
    assert t.tokens == usage["total_tokens"] > 0
    assert reader.get(f"/api/tapes/{t.key}").json()["tokens"] == usage["total_tokens"]
    page = viewer_client.get(f"/tapes/{t.key}/").content.decode()
    assert (
        f'>{usage["total_tokens"]:,}</span> <span class="sub">last turn only · last prompt {usage["input_tokens"]:,}'
        in page
    )


def test_a_bub_tape_sums_the_usage_of_its_runs(reader, sources) -> None:
    lines = (sources["bub"] / "session_realistic.jsonl").read_text().splitlines()
    runs = [json.loads(line)["payload"] for line in lines if '"name": "run"' in line]
    total = sum(p["data"]["usage"]["total_tokens"] for p in runs if isinstance(p["data"].get("usage"), dict))
    assert reader.get(f"/api/tapes/{tape('session_realistic', 'bub').key}").json()["tokens"] == total == 38856


@pytest.mark.parametrize(
    ("label", "source"),
    [
        ("记住：我最喜欢的颜色是蓝色，我每天早上七点起床。 · sess-zh-prefs-0001", "ya"),
        ("01a200e4-e18d-7ffd-b1d0-f7592c930f76 (chat)", "ar"),
        ("discord:1187654321098765432", "old"),  # nanobot 0.1.4 kept no usage at all
        ("dream:20261118-211144", "nb"),  # a Dream run's session: no _last_usage
        ("hand_memory_zone", "bub"),  # no run reported usage
    ],
)
def test_a_tape_without_recorded_usage_shows_a_dash_and_null(
    viewer_client, reader, sources, label, source
) -> None:
    t = tape(label, source)
    assert reader.get(f"/api/tapes/{t.key}").json()["tokens"] is None
    listed = [
        i for i in reader.get("/api/tapes", source=source, limit=500).json()["items"] if i["id"] == t.key
    ]
    assert listed[0]["tokens"] is None
    page = viewer_client.get(f"/tapes/{t.key}/").content.decode()
    assert '<span id="tokens"' in page and ">–</span>" in page.split('<span id="tokens"')[1][:200]
    html = viewer_client.get("/", {"source": source}).content.decode()
    row = next(r for r in html.split("<tr>") if f'href="/tapes/{t.key}/"' in r)
    assert '<td class="num tokens"' in row and ">–</td>" in row.split('<td class="num tokens"')[1][:200]


def test_the_index_says_why_yachiyo_shows_no_tokens(viewer_client, sources) -> None:
    html = viewer_client.get("/", {"source": "ya"}).content.decode()
    assert 'title="yachiyo records no token usage">–</td>' in html


def test_a_tape_indexed_with_zero_tokens_before_this_version_shows_a_dash_after_the_migration(
    sources, settings
) -> None:
    from importlib import import_module

    from django.apps import apps

    t = tape("hand_memory_zone", "bub")
    nanobot = tape("telegram:8123456789", "nb")
    Tape.objects.filter(pk=t.pk).update(tokens=0)
    Tape.objects.filter(pk=nanobot.pk).update(tokens=0)
    import_module("tapeview.tapes.migrations.0006_tape_tokens_unknown").forget_zero_tokens(apps, None)
    t.refresh_from_db()
    nanobot.refresh_from_db()
    assert t.tokens is None and nanobot.indexed_at is None
    discovery.sync()
    nanobot.refresh_from_db()
    assert nanobot.tokens == 30494
