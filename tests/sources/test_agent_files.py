"""What the agents keep beside their tapes, read as they read it: araliya's spend.json, nanobot's
config.json, bub-acp-server's acp-sessions.json. A bad or missing file names nothing, never crashes."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from tapeview.sources import araliya, araliya_spend, bub, bub_acp, nanobot, nanobot_config

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SESSION = "01a200e4-e18d-7ffd-b1d0-f7592c930f76"


@pytest.fixture
def araliya_root(tmp_path: Path) -> Path:
    root = tmp_path / "araliya"
    shutil.copytree(FIXTURES / "araliya", root)
    return root


def session_dir(root: Path) -> Path:
    return root / "bot-pkey51aee87e" / "memory" / "sessions" / SESSION


def test_a_spend_file_is_read_as_araliya_writes_it(araliya_root: Path) -> None:
    shutil.copy(FIXTURES / "araliya_spend" / "spend.json", session_dir(araliya_root))
    spend, why = araliya_spend.read(araliya_root, session_dir(araliya_root) / "transcript.md")
    assert why == ""
    assert (spend.input_tokens, spend.output_tokens, spend.cached_tokens) == (18342, 2210, 6144)
    assert spend.tokens == 18342 + 6144 + 2210  # as araliya's own API totals them
    assert spend.cost_usd == 0.0114872 and spend.updated == "2026-11-22T01:35:41Z"


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "spend.json is unreadable (empty file)"),
        ('{"total_input_tokens": 1', "spend.json is unreadable (the document ends early"),
        ('{"total_input_tokens": 1, "total_output_tokens": 2}', "spend.json is malformed"),
        (
            '{"total_input_tokens": -1, "total_output_tokens": 2, "total_cached_tokens": 0,'
            ' "total_cost_usd": 0.1, "last_updated": "x"}',
            "spend.json is malformed",
        ),
        (
            '{"total_input_tokens": 1, "total_output_tokens": 2, "total_cached_tokens": 0,'
            ' "total_cost_usd": "0.1", "last_updated": "x"}',
            "spend.json is malformed",
        ),
        ("[1, 2]", "spend.json is malformed"),
    ],
)
def test_a_spend_file_araliya_could_not_read_gives_no_figures_and_says_why(
    araliya_root: Path, text: str, why: str
) -> None:
    (session_dir(araliya_root) / "spend.json").write_text(text)
    spend, said = araliya_spend.read(araliya_root, session_dir(araliya_root) / "transcript.md")
    assert spend is None and said.startswith(why)
    notes = {t.name: t.note for t in araliya.discover(araliya_root)}
    assert why in notes[SESSION]


def test_a_session_without_a_spend_file_has_no_figures_and_no_note(araliya_root: Path) -> None:
    assert araliya_spend.read(araliya_root, session_dir(araliya_root) / "transcript.md") == (None, "")
    assert "spend" not in {t.name: t.note for t in araliya.discover(araliya_root)}[SESSION]


def test_a_spend_file_that_links_out_of_the_source_is_not_read(araliya_root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.json"
    shutil.copy(FIXTURES / "araliya_spend" / "spend.json", outside)
    os.symlink(outside, session_dir(araliya_root) / "spend.json")
    spend, why = araliya_spend.read(araliya_root, session_dir(araliya_root) / "transcript.md")
    assert spend is None and why == "spend.json is a link to something outside the source: not read"
    assert araliya_spend.identity(araliya_root, session_dir(araliya_root) / "transcript.md") == ""


CONFIG = FIXTURES / "nanobot" / "current" / "config.json"


def config_with(**defaults: object) -> dict:
    config = json.loads(CONFIG.read_text())
    config["agents"]["defaults"].update(defaults)
    return config


@pytest.mark.parametrize(
    ("config", "model", "window"),
    [
        (json.loads(CONFIG.read_text()), "anthropic/claude-sonnet-4-5", 200_000),
        (config_with(contextWindowTokens=64_000), "anthropic/claude-sonnet-4-5", 64_000),
        # snake_case, as nanobot's pydantic models also take it
        (
            {"agents": {"defaults": {"model": "openai/gpt-4.1", "context_window_tokens": 1_000_000}}},
            "openai/gpt-4.1",
            1_000_000,
        ),
        # nanobot's defaults for what the file leaves out
        ({"agents": {"defaults": {}}}, "anthropic/claude-opus-4-5", 200_000),
        ({}, "anthropic/claude-opus-4-5", 200_000),
        # the active preset wins over the defaults
        (
            {
                "agents": {"defaults": {"modelPreset": "fast", "model": "a/b"}},
                "modelPresets": {"fast": {"model": "deepseek/deepseek-chat", "contextWindowTokens": 64_000}},
            },
            "deepseek/deepseek-chat",
            64_000,
        ),
        ({"agents": {"defaults": {"model_preset": "default", "model": "a/b"}}}, "a/b", 200_000),
        # what nanobot would refuse to start with names nothing
        ({"agents": {"defaults": {"modelPreset": "gone"}}}, "", None),
        (config_with(contextWindowTokens="200000"), "", None),
        (config_with(contextWindowTokens=0), "", None),
        (config_with(model=None, contextWindowTokens=True), "", None),
        ([], "", None),
    ],
)
def test_the_model_and_window_are_those_nanobot_runs_with(
    config: object, model: str, window: int | None
) -> None:
    assert nanobot_config.resolve(config) == nanobot_config.ModelConfig(model, window)


@pytest.fixture
def nanobot_root(tmp_path: Path) -> Path:
    root = tmp_path / "nanobot"
    shutil.copytree(FIXTURES / "nanobot" / "current", root)
    return root


def test_each_session_of_a_data_directory_names_its_configured_model_and_window(nanobot_root: Path) -> None:
    found = [t for t in nanobot.discover(nanobot_root) if t.role == "tape"]
    assert found and {(t.model, t.window) for t in found} == {("anthropic/claude-sonnet-4-5", 200_000)}


@pytest.mark.parametrize("damage", ["{not json", "", "null"])
def test_a_config_that_cannot_be_read_names_no_window(nanobot_root: Path, damage: str) -> None:
    config = nanobot_root / "config.json"
    config.chmod(0o644)
    config.write_text(damage)
    found = nanobot.discover(nanobot_root)
    assert found and {(t.model, t.window) for t in found} == {("", None)}


def test_a_config_that_links_out_of_the_source_is_not_read(nanobot_root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "other.json"
    shutil.move(nanobot_root / "config.json", outside)
    os.symlink(outside, nanobot_root / "config.json")
    assert nanobot_config.read(nanobot_root) == nanobot_config.ModelConfig()


def md5_16(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()[:16]


def test_an_acp_session_names_the_tape_bub_writes_for_it() -> None:
    # bub-acp-server: md5(resolved cwd)[:16] + "__" + md5("acp-server:" + session id)[:16]
    name = bub_acp.tape_name("sess_7f3a", "/home/sachi/projects/tapeview")
    assert name == f"{md5_16('/home/sachi/projects/tapeview')}__{md5_16('acp-server:sess_7f3a')}"


def acp_home(tmp_path: Path, sessions: object) -> Path:
    """A $BUB_HOME with the real tapes folder and an acp-sessions.json as the server writes it."""
    home = tmp_path / "bub-home"
    shutil.copytree(FIXTURES / "bub" / "tapes_dir", home / "tapes")
    text = sessions if isinstance(sessions, str) else json.dumps(sessions, indent=2, sort_keys=True)
    (home / "acp-sessions.json").write_text(text)
    return home


def acp_session(sid: str, cwd: str, title: str | None, updated_at: str = "2026-11-22T01:40:00+00:00") -> dict:
    return {
        "additional_directories": [],
        "cwd": cwd,
        "runtime": {},
        "session_id": sid,
        "title": title,
        "updated_at": updated_at,
    }


def rename_tape(home: Path, old: str, sid: str, cwd: str) -> str:
    """The real session tape under the name the server gives the session's tape."""
    name = bub_acp.tape_name(sid, cwd)
    (home / "tapes" / f"{old}.jsonl").rename(home / "tapes" / f"{name}.jsonl")
    return name


def test_the_tapes_the_server_drives_get_its_titles_and_folders(tmp_path: Path) -> None:
    home = acp_home(
        tmp_path,
        [
            acp_session("sess_1", "/work/app", "Fix the flaky upload test"),
            acp_session("sess_2", "/work/docs", None),
            acp_session("sess_elsewhere", "/work/none", "No tape of mine"),
            {"session_id": "no cwd"},
            "not an object",
        ],
    )
    first = rename_tape(home, "9d11f561157e98d3__0b871d5e50e7c192", "sess_1", "/work/app")
    second = rename_tape(home, "9d11f561157e98d3__bf2795869dc767e2", "sess_2", "/work/docs")
    found = {t.name: t for t in bub.discover(home / "tapes")}
    assert (found[first].label, found[first].workdir) == ("Fix the flaky upload test", "/work/app")
    assert (found[second].label, found[second].workdir) == (None, "/work/docs")  # untitled: its own label
    other = found["9d11f561157e98d3__f2234c5149b3f79d"]
    assert (other.label, other.workdir) == (None, "")
    assert all(t.workdir == "" for t in found.values() if t.role != "tape")


@pytest.mark.parametrize("text", ["", "{", '{"sessions": []}', "null", "\x00\x00\x00"])
def test_a_bad_acp_sessions_file_changes_nothing(tmp_path: Path, text: str) -> None:
    home = acp_home(tmp_path, text)
    labels = [(t.name, t.label, t.workdir) for t in bub.discover(home / "tapes")]
    (home / "acp-sessions.json").unlink()
    assert labels == [(t.name, t.label, t.workdir) for t in bub.discover(home / "tapes")]


def test_an_acp_sessions_file_that_links_out_of_bub_home_is_not_read(tmp_path: Path) -> None:
    home = acp_home(tmp_path, "[]")
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps([acp_session("sess_1", "/work/app", "Leaked title")]))
    (home / "acp-sessions.json").unlink()
    os.symlink(outside, home / "acp-sessions.json")
    rename_tape(home, "9d11f561157e98d3__0b871d5e50e7c192", "sess_1", "/work/app")
    assert all(t.label is None and t.workdir == "" for t in bub.discover(home / "tapes"))


def test_a_hostile_title_is_kept_as_one_bounded_line(tmp_path: Path) -> None:
    title = "line one\nline two\x00" + "x" * 1000
    home = acp_home(tmp_path, [acp_session("sess_1", "/work/app", title)])
    name = rename_tape(home, "9d11f561157e98d3__0b871d5e50e7c192", "sess_1", "/work/app")
    label = {t.name: t for t in bub.discover(home / "tapes")}[name].label
    assert label.startswith("line one line two\ufffd") and len(label) == bub_acp.TITLE_LENGTH
    assert label.endswith("…")
