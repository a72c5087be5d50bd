"""What the agents record beside their tapes, shown where the tapes are: araliya's spend (tokens and
its reported cost), the titles and folders of bub-acp-server's sessions, in the session index, on the
tape's page and in the API."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from tapeview.sources import bub_acp
from tapeview.tapes import discovery
from tapeview.tapes.models import Tape

from .operator_sources import FIXTURES, serve

pytestmark = pytest.mark.django_db

SESSION = "01a200e4-e18d-7ffd-b1d0-f7592c930f76"


def session_dir(root: Path) -> Path:
    return root / "bot-pkey51aee87e" / "memory" / "sessions" / SESSION


def row_of(html: str, key: str) -> str:
    return next(r for r in html.split("<tr>") if f"/tapes/{key}/" in r)


def text(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


@pytest.fixture
def sources(settings, tmp_path: Path) -> dict[str, Path]:
    return serve(settings, tmp_path)


def test_an_araliya_session_shows_the_tokens_and_cost_araliya_reported(
    viewer_client, reader, sources
) -> None:
    shutil.copy(FIXTURES / "araliya_spend" / "spend.json", session_dir(sources["araliya"]))
    discovery.sync()
    tape = Tape.objects.get(source="ar", name=SESSION)
    total = 18342 + 6144 + 2210

    api = reader.get(f"/api/tapes/{tape.key}").json()
    assert (api["tokens"], api["cost"], api["cost_source"]) == (total, 0.0114872, "reported")
    listed = {t["id"]: t for t in reader.get("/api/tapes", source="ar").json()["items"]}
    assert (listed[tape.key]["tokens"], listed[tape.key]["cost"]) == (total, 0.0114872)
    others = [t for key, t in listed.items() if key != tape.key]
    assert others and all((t["tokens"], t["cost"], t["cost_source"]) == (None, None, None) for t in others)

    cell = row_of(viewer_client.get("/", {"source": "ar"}).content.decode(), tape.key)
    assert f"{total:,}" in text(cell.split('class="num tokens"')[1]) and "$0.0115 reported" in text(cell)

    page = viewer_client.get(f"/tapes/{tape.key}/").content.decode()
    tokens = text(re.search(r"<dt>Tokens</dt>(.*?)</div>", page, re.S).group(1))
    assert tokens == f"{total:,} the session's totals, reported by araliya"
    cost = text(re.search(r"<dt>Cost</dt>(.*?)</div>", page, re.S).group(1))
    assert cost == "$0.0115 reported by araliya (its own figure, at its own rates)"


def test_spend_written_after_the_transcript_is_read_at_the_next_look(reader, sources) -> None:
    """araliya appends to the transcript, then writes spend.json: a change to it alone is read too."""
    tape = Tape.objects.get(source="ar", name=SESSION)
    assert reader.get(f"/api/tapes/{tape.key}").json()["tokens"] is None
    spend = json.loads((FIXTURES / "araliya_spend" / "spend.json").read_text())
    (session_dir(sources["araliya"]) / "spend.json").write_text(json.dumps(spend, indent=2))
    assert reader.get(f"/api/tapes/{tape.key}").json()["tokens"] == 26696
    spend["total_output_tokens"] += 100
    spend["total_cost_usd"] = 0.02
    (session_dir(sources["araliya"]) / "spend.json").write_text(json.dumps(spend, indent=2))
    body = reader.get(f"/api/tapes/{tape.key}").json()
    assert (body["tokens"], body["cost"]) == (26796, 0.02)
    (session_dir(sources["araliya"]) / "spend.json").write_text("{ torn")
    discovery.sync()
    body = reader.get(f"/api/tapes/{tape.key}").json()
    assert (body["tokens"], body["cost"]) == (None, None)
    assert "spend.json is unreadable" in body["note"]


def acp_sessions(home: Path, sessions: list[dict]) -> None:
    (home / "acp-sessions.json").write_text(json.dumps(sessions, indent=2, sort_keys=True))


def acp_session(sid: str, cwd: str, title: str | None) -> dict:
    stamp = "2026-11-22T01:40:00.000000+00:00"
    return {
        "additional_directories": [],
        "cwd": cwd,
        "runtime": {},
        "session_id": sid,
        "title": title,
        "updated_at": stamp,
    }


def test_the_sessions_bub_acp_server_drives_show_its_titles_and_folders(
    viewer_client, reader, settings, bub_home: Path
) -> None:
    home = bub_home.parent  # $BUB_HOME, holding tapes/
    name = bub_acp.tape_name("sess_42", "/home/sachi/src/tapeview")
    (bub_home / "9d11f561157e98d3__0b871d5e50e7c192.jsonl").rename(bub_home / f"{name}.jsonl")
    acp_sessions(home, [acp_session("sess_42", "/home/sachi/src/tapeview", "Fix the <flaky> upload test")])
    settings.TAPEVIEW_SOURCES = f"home=bub:{bub_home}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    discovery.sync()
    tape = Tape.objects.get(name=name)

    api = reader.get(f"/api/tapes/{tape.key}").json()
    assert (api["label"], api["workdir"], api["name"]) == (
        "Fix the <flaky> upload test",
        "/home/sachi/src/tapeview",
        name,
    )
    others = [t for t in reader.get("/api/tapes").json()["items"] if t["id"] != tape.key]
    assert others and all(t["workdir"] == "" for t in others)

    cell = row_of(viewer_client.get("/").content.decode(), tape.key)
    assert "Fix the &lt;flaky&gt; upload test</a>" in cell and "in /home/sachi/src/tapeview" in cell
    page = viewer_client.get(f"/tapes/{tape.key}/").content.decode()
    assert "<h1>Fix the &lt;flaky&gt; upload test" in page
    assert '<dd id="workdir"' in page and "/home/sachi/src/tapeview</dd>" in page

    # The server renames the session: the label follows. A file gone bad changes nothing.
    acp_sessions(home, [acp_session("sess_42", "/home/sachi/src/tapeview", "Upload test fixed")])
    discovery.sync()
    assert reader.get(f"/api/tapes/{tape.key}").json()["label"] == "Upload test fixed"
    (home / "acp-sessions.json").write_text("[{")
    discovery.sync()
    body = reader.get(f"/api/tapes/{tape.key}").json()
    assert (body["label"], body["workdir"]) == ("Upload test fixed", "/home/sachi/src/tapeview")


def test_an_acp_sessions_file_linked_from_outside_bub_home_is_not_read(
    reader, settings, bub_home: Path, tmp_path_factory
) -> None:
    name = bub_acp.tape_name("sess_42", "/srv/app")
    (bub_home / "9d11f561157e98d3__0b871d5e50e7c192.jsonl").rename(bub_home / f"{name}.jsonl")
    outside = tmp_path_factory.mktemp("someone-elses")  # not below $BUB_HOME
    acp_sessions(outside, [acp_session("sess_42", "/srv/app", "A title from elsewhere")])
    os.symlink(outside / "acp-sessions.json", bub_home.parent / "acp-sessions.json")
    settings.TAPEVIEW_SOURCES = f"home=bub:{bub_home}"
    discovery.sync()
    body = reader.get(f"/api/tapes/{Tape.objects.get(name=name).key}").json()
    assert (body["label"], body["workdir"]) == (name, "")
