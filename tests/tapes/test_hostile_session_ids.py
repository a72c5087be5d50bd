"""A session list naming a session by an id that is no safe name (a path, a control character) or
by an entry that is not an object: the Sources page names it as refused, the session list leaves
it out, and nothing is read for it (a session folder of that name is still listed, as not listed in
sessions.json)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from django.utils.html import escape

from tapeview.tapes import discovery
from tapeview.tapes.models import Tape

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
UNSAFE = "a session id that is not a safe name: not read"
LONG = "会" * 100  # 300 bytes: more than a file name holds
NOT_AN_OBJECT = "its entry is not an object: not read"


def add_sessions(index: Path, sessions: dict) -> None:
    doc = json.loads(index.read_text())
    doc["sessions"].update(sessions)
    index.write_text(json.dumps(doc, ensure_ascii=False, indent=2))


@pytest.fixture
def hostile_lists(settings, tmp_path: Path) -> dict[str, Path]:
    shutil.copytree(FIXTURES / "araliya", tmp_path / "araliya")
    shutil.copytree(FIXTURES / "yachiyo", tmp_path / "yachiyo")
    memory = tmp_path / "araliya" / "bot-pkey51aee87e" / "memory"
    real = json.loads((memory / "sessions.json").read_text())["sessions"]
    one = next(iter(real.values()))
    add_sessions(
        memory / "sessions.json",
        {sid: {**one, "session_id": sid} for sid in ("../../../../../../etc", "/tmp/x", "tab\there", LONG)}
        | {"x": 5},
    )
    store = tmp_path / "yachiyo" / "data" / "session-store"
    first = next(iter(json.loads((store / "index.json").read_text())["sessions"].values()))
    add_sessions(
        store / "index.json",
        {sid: {**first, "session_id": sid} for sid in ("nul\x00x", "sp ace/日本\n", LONG)} | {"notobj": 5},
    )
    sessions = sorted((store / "sessions").glob("*.json"))
    (store / "sessions" / "nul%0Ay.json").write_bytes(sessions[0].read_bytes())  # listed nowhere
    settings.TAPEVIEW_SOURCES = (
        f"ar=araliya:{tmp_path / 'araliya'},ya=yachiyo:{tmp_path / 'yachiyo' / 'data'}"
    )
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    discovery.sync()
    return {"araliya": memory, "yachiyo": store}


REFUSED = [
    ("ar", '"../../../../../../etc"', UNSAFE),
    ("ar", '"/tmp/x"', UNSAFE),
    ("ar", '"tab\\u0009here"', UNSAFE),
    ("ar", '"x"', NOT_AN_OBJECT),
    ("ar", f'"{"会" * 80}"…', UNSAFE),
    ("ya", '"nul\\u0000x"', UNSAFE),
    ("ya", '"sp ace/日本\\u000a"', UNSAFE),
    ("ya", '"notobj"', NOT_AN_OBJECT),
    ("ya", f'"{"会" * 80}"…', UNSAFE),
]


@pytest.mark.parametrize(("source", "shown", "why"), REFUSED)
def test_a_session_id_that_is_no_safe_name_is_refused_on_the_sources_page(
    viewer_client, hostile_lists, source: str, shown: str, why: str
) -> None:
    page = viewer_client.get("/sources/").content.decode()
    index = "sessions.json" if source == "ar" else "index.json"
    assert escape(f"{index}: session {shown}: {why}") in page


def test_refused_sessions_are_not_listed(viewer_client, hostile_lists) -> None:
    names = set(Tape.objects.values_list("name", flat=True))
    assert not names & {
        "../../../../../../etc",
        "/tmp/x",
        "tab\there",
        "x",
        "nul\x00x",
        "sp ace/日本\n",
        "notobj",
        LONG,
    }
    listed = viewer_client.get("/api/tapes", {"limit": 200}).json()
    shown = " ".join(t["label"] for t in listed["items"])
    assert "etc" not in shown and "/tmp/x" not in shown and "notobj" not in shown
    page = viewer_client.get("/").content.decode()
    assert "/tmp/x" not in page and "notobj" not in page


def test_a_session_file_whose_name_decodes_to_a_control_character_is_refused(
    viewer_client, hostile_lists
) -> None:
    page = viewer_client.get("/sources/").content.decode()
    assert escape(f'nul%0Ay.json: session "nul\\u000ay": {UNSAFE}') in page
    assert not Tape.objects.filter(name="nul\ny").exists()


def test_a_session_folder_whose_entry_is_not_an_object_is_still_listed_as_not_listed(
    viewer_client, settings, tmp_path: Path
) -> None:
    shutil.copytree(FIXTURES / "araliya", tmp_path / "araliya")
    index = tmp_path / "araliya" / "bot-pkey51aee87e" / "memory" / "sessions.json"
    sid = sorted(json.loads(index.read_text())["sessions"])[-1]
    add_sessions(index, {sid: 5})
    settings.TAPEVIEW_SOURCES = f"ar=araliya:{tmp_path / 'araliya'}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    discovery.sync()
    sources = viewer_client.get("/sources/").content.decode()
    assert escape(f'sessions.json: session "{sid}": {NOT_AN_OBJECT}') in sources
    sessions = viewer_client.get("/", {"source": "ar"}).content.decode()
    assert f"{sid} (no agent)" in sessions and "not listed in sessions.json" in sessions
    items = viewer_client.get("/api/tapes", {"source": "ar"}).json()["items"]
    notes = {t["name"]: viewer_client.get(f"/api/tapes/{t['id']}").json()["note"] for t in items}
    unlisted = [name for name, note in notes.items() if note.startswith("not listed in sessions.json")]
    assert len(notes) == 3 and unlisted == [sid]  # the other sessions are read as listed
