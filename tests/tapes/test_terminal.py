"""`tapeview search` and `tapeview show` as a terminal user runs them: over the local index (a real
`tapeview index` of a copied fixture folder, its own database), and over a running `tapeview serve`
with `--url` and a token. Also on PostgreSQL (TAPEVIEW_DATABASE_URL, `.ci/postgres_server.py`)."""

from __future__ import annotations

import json
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest
import requests

from tests.servers import environment, own_database, tapeview_serve

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
HIT = re.compile(r"^(?P<tape>[0-9a-f]+):(?P<pos>\d+): \[(?P<label>[^\]]*)\] (?P<snippet>.+)$")
ENTRY = re.compile(
    r"^\s*(?P<pos>\d+)  (?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d|\(time unknown\))\s+(?P<kind>\w+)\s+(?P<text>.*)$"
)
WAIT = 60


@dataclass
class Site:
    env: dict[str, str]
    home: Path
    folder: Path


def tapeview(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tapeview", *args], env=env, capture_output=True, text=True, timeout=120
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Iterator[Site]:
    root = tmp_path_factory.mktemp("terminal")
    folder = root / "bub"
    shutil.copytree(FIXTURES / "bub" / "tapes_dir", folder)
    home = root / "home"
    home.mkdir()
    env = environment(home, f"bub=bub:{folder}", TAPEVIEW_REFRESH_SECONDS="0")
    with own_database(env, "tapeview_terminal") as env:
        done = tapeview(env, "index")
        assert done.returncode == 0, done.stderr[-2000:]
        yield Site(env, home, folder)


@pytest.fixture(scope="module")
def server(site: Site) -> Iterator[tuple[str, str]]:
    """The same database served by `tapeview serve`, and a read token for it."""
    with tapeview_serve(site.env, site.home, first=False) as (base, _, _):
        done = tapeview(site.env, "token", "create", "terminal", "--scope", "read")
        assert done.returncode == 0, done.stderr[-2000:]
        yield base, done.stdout.strip().splitlines()[-1]
    assert "Traceback" not in (site.home / "serve.log").read_text()


def hits(out: str) -> list[re.Match]:
    lines = out.splitlines()
    found = [HIT.match(line) for line in lines]
    assert all(found), lines
    return found


def entries(out: str) -> list[re.Match]:
    lines = out.splitlines()
    found = [ENTRY.match(line) for line in lines]
    assert all(found), [line for line, m in zip(lines, found, strict=True) if not m]
    return found


@pytest.fixture(scope="module")
def key(site: Site) -> str:
    """The id of the tape labelled cli:local, as a user finds it: in a search's hits."""
    done = tapeview(site.env, "search", "README", "--json")
    assert done.returncode == 0, done.stderr
    return next(h["tape_id"] for h in json.loads(done.stdout)["items"] if h["tape_label"] == "cli:local")


def bub_line(n: int, text: str) -> bytes:
    entry = {"id": n, "kind": "message", "payload": {"role": "user", "content": text}, "meta": {}}
    return orjson.dumps({**entry, "date": "2026-11-30T10:00:00+00:00"}) + b"\n"


class Follower:
    """`tapeview show --follow` running, its output read line by line as it comes."""

    def __init__(self, env: dict[str, str], *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tapeview", "show", *args, "--follow"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))

    def wait_for(self, text: str) -> str:
        while True:
            try:
                line = self.lines.get(timeout=WAIT)
            except queue.Empty:
                raise AssertionError(f"no line with {text!r} within {WAIT} s") from None
            if text in line:
                return line

    def interrupt(self) -> subprocess.CompletedProcess:
        self.process.send_signal(signal.SIGINT)
        code = self.process.wait(WAIT)
        return subprocess.CompletedProcess(self.process.args, code, "", self.process.stderr.read())


# The local index


def test_search_prints_tape_position_and_snippet_as_grep_does(site: Site) -> None:
    done = tapeview(site.env, "search", "csvkit")
    assert done.returncode == 0, done.stderr
    found = hits(done.stdout)
    assert {m["label"] for m in found} >= {"cli:local"}
    assert all("csvkit" in m["snippet"].lower() for m in found)
    pos = {int(m["pos"]) for m in found if m["label"] == "cli:local"}
    assert 26 in pos  # "README describes csvkit-lite. ..."


def test_search_json_is_the_apis_answer(site: Site) -> None:
    done = tapeview(site.env, "search", "README", "--kind", "tool_result", "--json")
    page = json.loads(done.stdout)
    assert set(page) == {"items", "next_cursor", "total", "total_capped", "total_exact", "total_note"}
    assert page["items"] and all(h["kind"] == "tool_result" for h in page["items"])
    assert {"tape_id", "tape_label", "pos", "snippet", "highlights", "date"} <= set(page["items"][0])


def test_search_with_nothing_found_prints_nothing_and_exits_1(site: Site) -> None:
    done = tapeview(site.env, "search", "README", "--since", "2030-01-01")
    assert (done.returncode, done.stdout, done.stderr) == (1, "", "")


@pytest.mark.parametrize(
    "args, said",
    [
        (["search", ""], "QUERY"),
        (["search", "README", "--since", "yesterday"], "--since"),
        (["search", "README", "--limit", "0"], "--limit"),
        (["show", "nosuchtape"], "no such tape"),
        (["show", "KEY", "--anchor", "phase/none"], "no anchor 'phase/none'"),
        (["show", "KEY", "--from", "0"], "--from"),
        (["search", "README", "--url", "http://127.0.0.1:9", "--token", "tv_x"], "cannot reach"),
        (["search", "README", "--url", "http://127.0.0.1:9"], "needs a token"),
    ],
)
def test_a_bad_query_or_tape_is_one_line_and_exit_2(site: Site, key: str, args: list[str], said: str) -> None:
    args = [key if a == "KEY" else a for a in args]
    done = tapeview({k: v for k, v in site.env.items() if k != "TAPEVIEW_TOKEN"}, *args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert len(done.stderr.strip().splitlines()) == 1 and said in done.stderr, done.stderr
    assert done.stdout == ""


def test_show_prints_the_timeline_one_line_an_entry(site: Site, key: str) -> None:
    found = entries(tapeview(site.env, "show", key).stdout)
    assert [int(m["pos"]) for m in found] == list(range(1, len(found) + 1))
    assert len(found) >= 97
    assert (found[0]["kind"], found[0]["text"]) == ("anchor", "session/start")
    said = next(m for m in found if m["pos"] == "26")
    assert said["kind"] == "message" and said["text"].startswith("assistant: README describes csvkit-lite")
    call = next(m for m in found if m["pos"] == "7")
    assert call["kind"] == "tool_call" and 'bash({ "command": "ls -la" })' in call["text"]

    start = entries(tapeview(site.env, "show", key, "--from", "30").stdout)
    assert start[0]["pos"] == "30" and len(start) == len(found) - 29
    phase = entries(tapeview(site.env, "show", key, "--anchor", "phase/implement").stdout)
    assert (phase[0]["pos"], phase[0]["kind"], phase[0]["text"]) == ("45", "anchor", "phase/implement")


def test_show_follow_prints_lines_appended_to_the_tape_and_stops_on_ctrl_c(site: Site) -> None:
    tape = site.folder / "followed_here.jsonl"
    tape.write_bytes(b"".join(bub_line(n, f"earlier line {n} of followed-here") for n in range(1, 4)))
    assert tapeview(site.env, "index").returncode == 0
    done = tapeview(site.env, "search", "followed-here", "--json")
    key = json.loads(done.stdout)["items"][0]["tape_id"]

    follower = Follower(site.env, key)
    assert ENTRY.match(follower.wait_for("earlier line 3"))
    with tape.open("ab") as f:
        f.write(bub_line(4, "appended while followed"))
    line = follower.wait_for("appended while followed")
    assert ENTRY.match(line)["pos"] == "4" and "user: appended while followed" in line
    stopped = follower.interrupt()
    assert stopped.returncode == 0 and "Traceback" not in stopped.stderr, stopped.stderr


# A remote Tapeview, through its REST API


def test_remote_search_prints_the_apis_hits(site: Site, server: tuple[str, str]) -> None:
    base, token = server
    answer = requests.get(
        f"{base}/api/search",
        params={"q": "csvkit"},
        headers={"Authorization": f"Bearer {token}"},
        timeout=WAIT,
    ).json()
    remote = tapeview({**site.env, "TAPEVIEW_TOKEN": token}, "search", "csvkit", "--url", base, "--json")
    assert remote.returncode == 0, remote.stderr
    assert json.loads(remote.stdout)["items"] == answer["items"]
    local = tapeview(site.env, "search", "csvkit", "--json")  # the same database: the same answer
    assert json.loads(local.stdout) == answer
    shown = hits(tapeview(site.env, "search", "csvkit", "--url", base, "--token", token).stdout)
    assert [(m["tape"], int(m["pos"])) for m in shown] == [(h["tape_id"], h["pos"]) for h in answer["items"]]


def test_remote_show_prints_what_the_local_index_shows(site: Site, key: str, server: tuple[str, str]) -> None:
    base, token = server
    local = tapeview(site.env, "show", key, "--anchor", "phase/explore-done")
    remote = tapeview(
        site.env, "show", key, "--anchor", "phase/explore-done", "--url", base, "--token", token
    )
    assert remote.returncode == 0, remote.stderr
    assert remote.stdout == local.stdout and entries(remote.stdout)[0]["pos"] == "32"


def test_remote_show_follow_prints_an_appended_line(site: Site, server: tuple[str, str]) -> None:
    base, token = server
    tape = site.folder / "followed_there.jsonl"
    tape.write_bytes(b"".join(bub_line(n, f"first words {n} of followed-there") for n in range(1, 3)))
    assert tapeview(site.env, "index").returncode == 0
    key = json.loads(tapeview(site.env, "search", "followed-there", "--json").stdout)["items"][0]["tape_id"]

    follower = Follower(site.env, key, "--url", base, "--token", token)
    follower.wait_for("first words 2")
    with tape.open("ab") as f:
        f.write(bub_line(3, "appended for the remote"))
    assert ENTRY.match(follower.wait_for("appended for the remote"))["pos"] == "3"
    stopped = follower.interrupt()
    assert stopped.returncode == 0 and "Traceback" not in stopped.stderr, stopped.stderr


@pytest.mark.parametrize(
    "args, said",
    [
        (["search", "README", "--token", "tv_not-a-token"], "401"),
        (["show", "nosuchtape", "--token", "TOKEN"], "no such tape"),
        (["search", "x" * 501, "--token", "TOKEN"], "q: String should have at most 500 characters"),
    ],
)
def test_remote_errors_are_one_line_and_exit_2(
    site: Site, server: tuple[str, str], args: list[str], said: str
) -> None:
    base, token = server
    done = tapeview(site.env, *[token if a == "TOKEN" else a for a in args], "--url", base)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert len(done.stderr.strip().splitlines()) == 1 and said in done.stderr, done.stderr
