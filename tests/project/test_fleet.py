"""A fleet: agents on two hosts, one PostgreSQL, and a web tier that cannot see their files.

Real processes: `tapeview index --watch` as host-a and as host-b, each over its own folder, and
`tapeview serve --no-index` as host "web" in a mount namespace where a tmpfs hides both folders.
Everything the web tier shows of the hosts' tapes and memory comes from the database: the index,
the files' copies (tapes.filecopy) and, for writes, the outbox their watchers carry out.
"""

from __future__ import annotations

import html
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import orjson
import pytest
import requests

from memory_admin.stores.model import version_of
from tapeview.sources import bub as bub_reader
from tests.conftest import FIXTURES
from tests.servers import environment, postgres_database, sign_in_by_link, tapeview_serve
from tests.tapes.test_watcher import eventually

TIMEOUT = 30
LIVE = 2.0  # seconds: an agent's append on a host is on the web tier within this
BULK, MARK = 150_000, 5_000  # the append a watcher is killed in, and every how many lines a marked one

pytestmark = pytest.mark.skipif(not shutil.which("unshare"), reason="needs util-linux unshare")


def message(n: int, text: str, role: str = "user") -> bytes:
    entry = {"id": n, "kind": "message", "payload": {"role": role, "content": text}, "meta": {}}
    return orjson.dumps({**entry, "date": "2026-11-20T10:00:00+00:00"}) + b"\n"


def last_id(path: Path) -> int:
    return max(e.id for e in bub_reader.scan(path) if e.id is not None)


def append(path: Path, *texts: str) -> None:
    """A turn of the agent: its messages, then the step's end (formats/bub.md §4: the tape is idle)."""
    n = last_id(path)
    end = {
        "id": n + len(texts) + 1,
        "kind": "event",
        "payload": {"name": "loop.step", "data": {"status": "ok"}},
    }
    with path.open("ab") as f:
        for i, text in enumerate(texts, 1):
            f.write(message(n + i, text, "assistant"))
        f.write(orjson.dumps({**end, "meta": {}, "date": "2026-11-20T10:00:01+00:00"}) + b"\n")


def entries_on_disk(path: Path) -> int:
    """What the agent's own reader finds in the file."""
    return sum(1 for e in bub_reader.scan(path) if e.readable)


def hidden(folder: Path) -> list[str]:
    """A command prefix that runs a program in a mount namespace where `folder` is an empty tmpfs
    (as root; otherwise in a user namespace of one's own, where mounting is allowed too)."""
    unshare = ["unshare", "-m", "--propagation", "private"] if os.geteuid() == 0 else ["unshare", "-rm"]
    return [*unshare, "sh", "-c", 'mount -t tmpfs tmpfs "$0" && exec "$@"', str(folder)]


class Host:
    """One agent host: its folder of sources and its `tapeview index --watch`."""

    def __init__(self, name: str, root: Path, env: dict[str, str]) -> None:
        self.name, self.root, self.env = name, root, env
        self.watcher: subprocess.Popen | None = None

    def start(self) -> None:
        log = self.root.parent / f"{self.name}-watch.log"
        with log.open("a") as out:
            self.watcher = subprocess.Popen(
                [sys.executable, "-m", "tapeview", "index", "--watch"], env=self.env, stdout=out, stderr=out
            )

    def kill(self) -> None:
        """SIGKILL: no clean stop, whatever it was writing."""
        self.watcher.kill()
        self.watcher.wait(10)

    def stop(self) -> None:
        if self.watcher is None or self.watcher.poll() is not None:
            return
        self.watcher.send_signal(signal.SIGINT)
        try:
            self.watcher.wait(30)
        except subprocess.TimeoutExpired:
            self.watcher.kill()
            self.watcher.wait()

    def log(self) -> str:
        return (self.root.parent / f"{self.name}-watch.log").read_text()


@contextmanager
def fleet(tmp_path: Path) -> Iterator[dict]:
    hosts = tmp_path / "hosts"  # what the web tier cannot see
    a_bub, a_nanobot, b_bub = hosts / "a" / "bub", hosts / "a" / "nanobot", hosts / "b" / "bub"
    a_bub.mkdir(parents=True)
    b_bub.mkdir(parents=True)
    shutil.copy(FIXTURES / "bub" / "session_realistic.jsonl", a_bub / "idle.jsonl")
    (a_bub / "busy.jsonl").write_bytes(message(1, "a question") + message(2, "and another"))
    shutil.copy(FIXTURES / "bub" / "fork_merged.jsonl", b_bub / "work.jsonl")
    shutil.copytree(FIXTURES / "nanobot_memory" / "current", a_nanobot)
    append(a_bub / "idle.jsonl", "zebracorn sighted on host a")
    append(b_bub / "work.jsonl", "quokkaline sighted on host b")

    homes = {name: tmp_path / f"home-{name}" for name in ("web", "web2", "a", "b")}
    for home in homes.values():
        home.mkdir()
    web = environment(homes["web"], "", TAPEVIEW_HOST="web")
    with ExitStack() as stack:
        web = stack.enter_context(postgres_database(web, "tapeview_fleet"))
        url = web["TAPEVIEW_DATABASE_URL"]
        base, link, _ = stack.enter_context(
            tapeview_serve(web, homes["web"], "--no-index", inside=hidden(hosts))
        )
        # A second web process over the same database, as behind a load balancer.
        base2, _, _ = stack.enter_context(
            tapeview_serve(
                {**web, "TAPEVIEW_HOME": str(homes["web2"])},
                homes["web2"],
                "--no-index",
                inside=hidden(hosts),
                first=False,
            )
        )
        host_env = {"TAPEVIEW_DATABASE_URL": url, "TAPEVIEW_QUIET_SECONDS": "0"}
        a = Host(
            "host-a",
            hosts / "a",
            environment(
                homes["a"],
                f"a-bub=bub:{a_bub},a-nanobot=nanobot:{a_nanobot}",
                TAPEVIEW_HOST="host-a",
                **host_env,
            ),
        )
        b = Host(
            "host-b",
            hosts / "b",
            environment(homes["b"], f"b-bub=bub:{b_bub}", TAPEVIEW_HOST="host-b", **host_env),
        )
        stack.callback(a.stop)
        stack.callback(b.stop)
        token = (
            subprocess.run(
                [sys.executable, "-m", "tapeview", "token", "create", "fleet", "--scope", "write"],
                env=web,
                capture_output=True,
                text=True,
                timeout=60,
                check=True,
            )
            .stdout.strip()
            .splitlines()[-1]
        )
        api = requests.Session()
        api.headers["Authorization"] = f"Bearer {token}"
        browser = requests.Session()
        assert sign_in_by_link(browser, link, TIMEOUT).status_code == 200  # signed in
        a.start()
        b.start()
        yield {
            "base": base,
            "base2": base2,
            "api": api,
            "browser": browser,
            "a": a,
            "b": b,
            "hosts": hosts,
            "web_home": homes["web"],
        }
        for home in (homes["web"], homes["web2"]):
            log = (home / "serve.log").read_text()
            assert "Traceback" not in log, log[-3000:]
    for host in (a, b):
        assert "Traceback" not in host.log(), host.log()[-3000:]


def tapes(f: dict) -> dict[tuple[str, str], dict]:
    r = f["api"].get(f"{f['base']}/api/tapes", params={"limit": 500}, timeout=TIMEOUT)
    assert r.status_code == 200, r.text[:500]
    return {(t["host"], t["label"]): t for t in r.json()["items"]}


def search(f: dict, q: str) -> list[dict]:
    r = f["api"].get(f"{f['base']}/api/search", params={"q": q}, timeout=TIMEOUT)
    assert r.status_code == 200, r.text[:500]
    return r.json()["items"]


def test_a_web_tier_serves_two_hosts_it_cannot_see(tmp_path: Path) -> None:
    with fleet(tmp_path) as f:
        base, api, hosts = f["base"], f["api"], f["hosts"]
        # The web tier really cannot see the hosts' files.
        seen = subprocess.run([*hidden(hosts), "ls", "-A", str(hosts)], capture_output=True, text=True)
        assert seen.returncode == 0 and seen.stdout.strip() == "", seen
        a_idle, a_busy, b_work = (
            hosts / "a/bub/idle.jsonl",
            hosts / "a/bub/busy.jsonl",
            hosts / "b/bub/work.jsonl",
        )
        expected = {
            ("host-a", "idle"): entries_on_disk(a_idle),
            ("host-a", "busy"): entries_on_disk(a_busy),
            ("host-b", "work"): entries_on_disk(b_work),
        }

        # 1. The index lists both hosts' tapes with the right counts.
        def listed():
            found = tapes(f)
            got = {k: found[k]["entries"] for k in expected if k in found}
            return found if got == expected else None

        found = eventually(listed, 60, "both hosts' tapes indexed")

        # 2. A timeline of each shows entry text, read from the copies (made in a pass behind the
        # index: until then the page says what is not copied yet).
        for host, label, text in (
            ("host-a", "idle", "zebracorn sighted on host a"),
            ("host-b", "work", "quokkaline sighted on host b"),
        ):

            def timeline(host=host, label=label, text=text):
                page = f["browser"].get(
                    f"{base}/tapes/{found[(host, label)]['id']}/", params={"end": 1}, timeout=TIMEOUT
                )
                # Not copied at all yet (404), or not this far yet (503 with Retry-After).
                if page.status_code in (404, 503) and "not copied from host" in html.unescape(page.text):
                    return None
                assert page.status_code == 200 and text in html.unescape(page.text), (host, label)
                return page

            eventually(timeline, 10, f"{host}'s timeline copied")

        # 3. Search finds text from both hosts.
        a_hit = eventually(lambda: search(f, "zebracorn"), 30, "host-a's text searchable")
        b_hit = eventually(lambda: search(f, "quokkaline"), 30, "host-b's text searchable")
        assert [(h["tape_id"], h["host"]) for h in a_hit] == [(found[("host-a", "idle")]["id"], "host-a")]
        assert [(h["tape_id"], h["host"]) for h in b_hit] == [(found[("host-b", "work")]["id"], "host-b")]

        # 4. A handoff and a memory edit through the web land on host-a's files by the guest-write rules.
        before = a_idle.read_bytes()
        r = api.post(
            f"{base}/api/tapes/{found[('host-a', 'idle')]['id']}/handoff",
            json={"name": "phase/fleet"},
            timeout=TIMEOUT,
        )
        assert r.status_code == 201, r.text
        written = a_idle.read_bytes()
        assert written.startswith(before)
        anchor, event = (json.loads(line) for line in written[len(before) :].splitlines())
        assert (anchor["kind"], anchor["payload"]["name"], event["payload"]["name"]) == (
            "anchor",
            "phase/fleet",
            "handoff",
        )
        assert r.json()["ids"] == [anchor["id"], event["id"]] == [last_id(a_idle) - 1, last_id(a_idle)]
        assert b_work.read_bytes().count(b"phase/fleet") == 0

        stores = api.get(f"{base}/api/memory", params={"kind": "nanobot.memory"}, timeout=TIMEOUT).json()[
            "items"
        ]
        memory = hosts / "a/nanobot/workspace/memory/MEMORY.md"
        r = api.put(
            f"{base}/api/memory/{stores[0]['id']}/long-term",
            json={
                "content": "# Facts\n\nEdited from the web tier.\n",
                "base_version": version_of(memory.read_bytes()),
            },
            timeout=TIMEOUT,
        )
        assert r.status_code == 200, r.text
        assert memory.read_text() == "# Facts\n\nEdited from the web tier.\n"
        shown = api.get(f"{base}/api/memory/{stores[0]['id']}", timeout=TIMEOUT).json()
        assert "Edited from the web tier." in (shown["long_term_text"] or "")

        r = api.post(
            f"{base}/api/tapes/{found[('host-b', 'work')]['id']}/handoff",
            json={"name": "phase/on-b"},
            timeout=TIMEOUT,
        )
        assert r.status_code == 201, r.text  # host-b's watcher wrote this one, into host-b's file
        on_b = [json.loads(line) for line in b_work.read_bytes().splitlines()[-2:]]
        assert [e["kind"] for e in on_b] == ["anchor", "event"] and on_b[0]["payload"]["name"] == "phase/on-b"
        assert b"phase/on-b" not in a_idle.read_bytes()

        # The second web process answers the same, to the same signed-in browser (sessions in the database).
        for path in ("/api/tapes?limit=500", "/api/search?q=zebracorn"):
            assert (
                api.get(f"{f['base2']}{path}", timeout=TIMEOUT).json()
                == api.get(f"{base}{path}", timeout=TIMEOUT).json()
            )
        page = f["browser"].get(f"{f['base2']}/", timeout=TIMEOUT, allow_redirects=False)
        assert page.status_code == 200 and "work" in page.text

        # 5. A busy tape gives 409 with a retry hint, and nothing is written.
        busy = a_busy.read_bytes()
        r = api.post(
            f"{base}/api/tapes/{found[('host-a', 'busy')]['id']}/handoff",
            json={"name": "phase/no"},
            timeout=TIMEOUT,
        )
        assert r.status_code == 409 and r.headers.get("Retry-After"), r.text
        assert a_busy.read_bytes() == busy

        # 6. An agent appending on host-a is on the web within 2 s.
        key = found[("host-a", "idle")]["id"]
        append(a_idle, "fresh words from the live agent")
        appended = time.monotonic()

        def shown_live():
            tape = api.get(f"{base}/api/tapes/{key}", timeout=TIMEOUT).json()
            if tape["entries"] != entries_on_disk(a_idle):
                return None
            # Indexed, then copied by the pass behind the index: the new line's bytes are readable.
            last = api.get(
                f"{base}/api/tapes/{key}/entries/{entries_on_disk(a_idle) - 1}/raw", timeout=TIMEOUT
            )
            page = api.get(
                f"{base}/api/tapes/{key}/entries", params={"limit": 1, "cursor": ""}, timeout=TIMEOUT
            )
            return last if last.status_code == page.status_code == 200 else None

        last = eventually(shown_live, 10, "the append indexed and copied")
        seconds = time.monotonic() - appended
        assert b"fresh words from the live agent" in last.content
        assert seconds < LIVE, f"the append took {seconds:.2f} s to reach the web tier"

        # 7. host-b's watcher killed while it indexes a big append, then started again: nothing lost or doubled.
        b = f["b"]
        size_before, entries_before = b_work.stat().st_size, entries_on_disk(b_work)
        n = last_id(b_work)
        with b_work.open("ab") as out:
            out.write(
                b"".join(
                    message(n + i, f"bulk line {i}" + (f" mark{i}z" if i % MARK == 0 else ""))
                    for i in range(1, BULK + 1)
                )
            )
        work = found[("host-b", "work")]["id"]
        eventually(
            lambda: api.get(f"{base}/api/tapes/{work}", timeout=TIMEOUT).json()["entries"] > entries_before,
            60,
            "host-b started on the append",
        )
        b.kill()
        partial = api.get(f"{base}/api/tapes/{work}", timeout=TIMEOUT).json()["entries"]
        b.start()
        total = entries_on_disk(b_work)
        eventually(
            lambda: api.get(f"{base}/api/tapes/{work}", timeout=TIMEOUT).json()["entries"] == total,
            120,
            "host-b caught up",
        )
        assert b_work.stat().st_size > size_before
        tape = api.get(f"{base}/api/tapes/{work}", timeout=TIMEOUT).json()
        assert (tape["entries"], tape["unreadable"]) == (total, 0), (partial, tape)

        def exported():  # the copy: byte for byte, once the copy pass behind the index is done
            export = api.get(f"{base}/api/tapes/{work}/export", params={"format": "jsonl"}, timeout=TIMEOUT)
            if export.status_code == 200:
                return export
            assert export.status_code == 503 and export.headers["Retry-After"] == "2", export.status_code
            assert "not copied from host host-b yet" in export.json()["detail"], export.text[:300]
            return None

        assert eventually(exported, 30, "host-b's copy caught up").content == b_work.read_bytes()
        # Every 5,000th line carries a word of its own: each is found exactly once, none doubled.
        for i in range(MARK, BULK + 1, MARK):
            eventually(lambda i=i: search(f, f"mark{i}z"), 60, f"line {i} searchable")
            assert len(search(f, f"mark{i}z")) == 1, i
        print(f"\nfleet: killed host-b at {partial} of {total} entries; live append shown in {seconds:.2f} s")


def test_the_hosts_may_all_start_at_once_on_a_new_database(tmp_path: Path) -> None:
    """Every host's `tapeview index` migrates a database it finds new: one at a time, none fails."""
    envs = []
    for n in range(4):
        folder = tmp_path / f"host-{n}"
        folder.mkdir()
        (folder / "t.jsonl").write_bytes(message(1, f"from host {n}"))
        home = tmp_path / f"home-{n}"
        home.mkdir()
        envs.append(environment(home, f"bub=bub:{folder}", TAPEVIEW_HOST=f"host-{n}"))
    with postgres_database(envs[0], "tapeview_fleet_start") as first:
        url = first["TAPEVIEW_DATABASE_URL"]
        runs = [
            subprocess.Popen(
                [sys.executable, "-m", "tapeview", "index"],
                env={**env, "TAPEVIEW_DATABASE_URL": url},
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for env in envs
        ]
        outcomes = [(run.wait(120), *run.communicate()) for run in runs]
        assert [code for code, _, _ in outcomes] == [0] * 4, [err[-2000:] for _, _, err in outcomes]
        assert all("1 tapes, 1 indexed" in out for _, out, _ in outcomes), outcomes
