"""A live agent of each family beside `tapeview serve`: nothing the agents or the dashboard write is lost.

Four sources (copies of the real samples), one simulated agent per family writing as the real
program does (tests/project/agents.py), and the production server with readers and writers at
once. At the end:

- zero 5xx, and every page and API read answered 200;
- every Bub line the agent wrote is on disk byte for byte (in the live tape, or in the .bak its
  reset wrote), and in the index, line for line; the only unreadable line is the crash residue;
- every handoff and memory-zone write that got 201/200 is on disk once, right after the end of a
  turn (never inside one), with ids continuing the tape's; every 409 wrote nothing;
- no memory edit was lost on either side: MEMORY.md holds every note Dream added and every edit
  that got 200; an edit whose base the agent changed got a 409 conflict instead;
- the nanobot, yachiyo and araliya files parse and hold exactly what their agent last wrote, and
  the index holds what a fresh read of each file finds.

The index is SQLite in the server's own TAPEVIEW_HOME, or, when TAPEVIEW_DATABASE_URL names a
PostgreSQL server (`.ci/postgres_server.py`), a database of this test's own on it, dropped after.
"""

from __future__ import annotations

import multiprocessing
import random
import re
import shutil
import subprocess
import sys
import threading
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import requests

from tapeview.sources import araliya as araliya_reader
from tapeview.sources import nanobot as nanobot_reader
from tapeview.sources import yachiyo as yachiyo_reader
from tests.servers import environment, own_database, sign_in_by_link, tapeview_serve

from .agents import (
    AraliyaAgent,
    BubAgent,
    DiskLine,
    NanobotAgent,
    Runner,
    YachiyoAgent,
    bub_entry,
    bub_tape_name,
    nanobot_stem,
    split_lines,
    walk,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SECONDS = 15  # the agents' run
READERS = 10
QUIET = 0.3  # TAPEVIEW_QUIET_SECONDS: a tape still for this long after a turn's end is idle
ARALIYA_EXISTING = "01a200e5-0f28-7b32-bd7c-5edc518e2448"
TIMEOUT = 30  # seconds for any one request
WRITERS_AFTER = 20  # seconds the writers may go on after the agents stop, until each write succeeded once


# --- the four sources, copied from the samples -------------------------------------------------


def copy_sources(root: Path) -> dict[str, Path]:
    bub = root / "bub"
    shutil.copytree(FIXTURES / "bub" / "tapes_dir", bub)  # a real $BUB_HOME/tapes
    # Another session whose tape holds a memory zone (the hand-written 0.5.1-format sample).
    shutil.copy(FIXTURES / "bub" / "hand_memory_zone.jsonl", bub / f"{bub_tape_name('telegram:4242')}.jsonl")
    nanobot = root / "nanobot"
    shutil.copytree(FIXTURES / "nanobot" / "current", nanobot)  # data dir: config.json, sessions/
    shutil.copytree(
        FIXTURES / "nanobot_memory" / "current" / "workspace", nanobot / "workspace", dirs_exist_ok=True
    )
    yachiyo = root / "yachiyo" / "data"
    shutil.copytree(FIXTURES / "yachiyo" / "data", yachiyo)
    shutil.copytree(FIXTURES / "yachiyo_memory" / "data" / "long-term-memory", yachiyo / "long-term-memory")
    araliya = root / "araliya"
    shutil.copytree(FIXTURES / "araliya", araliya)
    return {"bub": bub, "nanobot": nanobot, "yachiyo": yachiyo, "araliya": araliya}


# --- the server ---------------------------------------------------------------------------------


@contextmanager
def index_database(home: Path, sources: dict[str, Path]) -> Iterator[dict[str, str]]:
    """The environment of `tapeview serve` and `tapeview index`: the sources, and the server's own
    SQLite file in `home` or its own PostgreSQL database."""
    env = environment(
        home,
        # Both commands must see the same sources: `tapeview index` drops the tapes of any other.
        ",".join(f"{label}={label}:{path}" for label, path in sources.items()),
        TAPEVIEW_QUIET_SECONDS=str(QUIET),
        TAPEVIEW_REFRESH_SECONDS="1",
    )
    with own_database(env, "tapeview_live") as env:
        yield env


def tapeview(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "tapeview", *args], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


# --- what the threads record --------------------------------------------------------------------


@dataclass
class Answer:
    what: str  # the URL pattern, not the URL (keys and queries vary)
    status: int
    detail: str = ""
    seconds: float = 0.0


@dataclass
class Handoff:
    key: str
    name: str
    status: int
    body: dict


@dataclass
class MemoryEdit:
    store: str  # "memory.md" or "zone"
    marker: str
    status: int
    body: dict
    after: str = ""  # the long-term text right after a 200
    sent: float = 0.0  # time.monotonic() when the PUT was sent, and when it was answered
    answered: float = 0.0


@dataclass
class Record:
    answers: list[Answer] = field(default_factory=list)
    handoffs: list[Handoff] = field(default_factory=list)
    edits: list[MemoryEdit] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, what: str, r: requests.Response) -> None:
        detail = r.text[:300] if r.status_code != 200 else ""
        with self.lock:
            self.answers.append(Answer(what, r.status_code, detail, r.elapsed.total_seconds()))


def guarded(record: Record, work: Callable[[], None]) -> Callable[[], None]:
    def run() -> None:
        try:
            work()
        except BaseException as exc:  # noqa: BLE001 - a dropped connection is a failure too
            with record.lock:
                record.failures.append(f"{threading.current_thread().name}: {exc!r}")

    return run


# --- the test -----------------------------------------------------------------------------------


def test_live_agents_of_every_family_beside_the_dashboard(tmp_path: Path) -> None:
    roots = copy_sources(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    bub_main = roots["bub"] / f"{bub_tape_name('cli:local')}.jsonl"
    bub_other = roots["bub"] / f"{bub_tape_name('telegram:4242')}.jsonl"
    bub = BubAgent(bub_main, bub_other, seed=11)
    nanobot = NanobotAgent(roots["nanobot"], seed=12)
    yachiyo = YachiyoAgent(roots["yachiyo"], seed=13)
    araliya = AraliyaAgent(roots["araliya"] / "bot-pkey51aee87e", ARALIYA_EXISTING, seed=14)
    # Their new sessions exist before the server starts, so every page has a key from the start.
    yachiyo.step()
    araliya.step()
    record = Record()
    stop = threading.Event()
    # Set by the writers once a write of each kind succeeded: on a slow machine the agents may keep
    # every tape busy for their whole run, and the writers then go on a little after it.
    handed_off, edited_both = threading.Event(), threading.Event()
    stop_agents = multiprocessing.get_context("fork").Event()
    runners: list[Runner] = []
    threads: list[threading.Thread] = []
    started = time.monotonic()

    with ExitStack() as stack:
        env = stack.enter_context(index_database(home, roots))
        base, link, _ = stack.enter_context(tapeview_serve(env, home))
        token = tapeview(env, "token", "create", "t", "--scope", "write").strip().splitlines()[-1]
        bearer = {"Authorization": f"Bearer {token}"}
        browser = requests.Session()
        assert sign_in_by_link(browser, link, TIMEOUT).status_code == 200  # signed in (the first admin)

        def get_json(path: str) -> dict:
            r = requests.get(base + path, headers=bearer, timeout=TIMEOUT)
            record.answer(path.split("?")[0], r)
            assert r.status_code == 200, (path, r.status_code, r.text[:500])
            return r.json()

        def one_tape(source: str, q: str) -> str:
            items = get_json(f"/api/tapes?source={source}&q={quote(q)}&limit=500")["items"]
            assert len(items) == 1, (source, q, items)
            return items[0]["id"]

        keys = {
            "bub_main": one_tape("bub", bub_main.stem.split("__")[1]),
            "bub_other": one_tape("bub", bub_other.stem.split("__")[1]),
            "nanobot": one_tape("nanobot", nanobot_stem(nanobot.key)),
            "yachiyo": one_tape("yachiyo", "sess-live"),
            "araliya_new": one_tape("araliya", araliya.created or ""),
            "araliya_old": one_tape("araliya", ARALIYA_EXISTING),
        }
        stores = get_json("/api/memory?limit=500")["items"]

        def store(kind: str, pick: Callable[[dict], bool] = lambda s: True) -> str:
            found = [s["id"] for s in stores if s["kind"] == kind and pick(s)]
            assert len(found) == 1, (kind, [s for s in stores if s["kind"] == kind])
            return found[0]

        memory_md = store("nanobot.memory")
        zone = store("bub.zone", lambda s: s["tape_id"] == keys["bub_other"])
        store_keys = {
            "memory_md": memory_md,
            "zone": zone,
            "history": store("nanobot.history"),
            "yachiyo": store("yachiyo.memory"),
            "araliya_kv": store("araliya.kv", lambda s: araliya.created in s["owner"]),
        }

        # Readers: pages signed in, the API with the token.
        pages = [
            ("/", "/"),
            ("/?sort=-last", "/"),
            *((f"/tapes/{k}/?end=1", f"timeline {name}") for name, k in keys.items()),
            ("/memory/", "/memory/"),
            *((f"/memory/{k}/", f"store page {name}") for name, k in store_keys.items()),
        ]
        api = [
            *((f"/api/tapes/{k}/entries?limit=100", f"entries {name}") for name, k in keys.items()),
            *((f"/api/tapes/{k}", f"tape {name}") for name, k in keys.items()),
            ("/api/search?q=parser", "/api/search"),
            ("/api/search?q=atlas", "/api/search"),
            ("/api/search?q=%E4%B8%AD%E6%96%87", "/api/search"),  # 中文
            ("/api/memory/search?q=atlas", "/api/memory/search"),
            (f"/api/memory/{memory_md}", "memory md"),
        ]

        def reader(n: int) -> None:
            rng = random.Random(n)
            signed_in = requests.Session()  # one per thread: a Session is not thread-safe
            signed_in.cookies.update(browser.cookies)
            token_client = requests.Session()
            token_client.headers.update(bearer)
            gets = [(signed_in, *p) for p in pages] + [(token_client, *a) for a in api]
            while not stop.is_set():
                rng.shuffle(gets)
                for client, url, what in gets:
                    if stop.is_set():
                        return
                    # No redirects: a page that sent us to sign in again would not be a 200.
                    record.answer(what, client.get(base + url, timeout=TIMEOUT, allow_redirects=False))

        def hand_off() -> None:
            rng = random.Random(21)
            client = requests.Session()
            client.headers.update(bearer)
            for n in range(10_000):
                if stop.is_set():
                    return
                key = keys["bub_main"] if n % 2 else keys["bub_other"]
                name = f"phase/live-{n}"
                r = client.post(
                    f"{base}/api/tapes/{key}/handoff",
                    json={"name": name, "summary": f"live handoff {n}"},
                    timeout=TIMEOUT,
                )
                record.answer("POST handoff", r)
                body = r.json() if r.headers.get("content-type", "").startswith("application/json") else {}
                if r.status_code == 409 and not r.headers.get("Retry-After"):
                    record.failures.append(f"409 without Retry-After: {r.text[:300]}")
                with record.lock:
                    record.handoffs.append(Handoff(key, name, r.status_code, body))
                if r.status_code == 201:
                    handed_off.set()
                stop.wait(rng.uniform(0.08, 0.25))

        def edit_memory() -> None:
            rng = random.Random(22)
            client = requests.Session()
            client.headers.update(bearer)
            which, tries = "zone", 0
            for n in range(10_000):
                if stop.is_set():
                    return
                sid = memory_md if which == "memory.md" else zone
                r = client.get(f"{base}/api/memory/{sid}", timeout=TIMEOUT)
                record.answer("GET memory store", r)
                if r.status_code != 200:
                    continue
                current = r.json()
                marker = f"dashboard edit {n} ({which})"
                text = (current["long_term_text"] or "").rstrip("\n")
                content = f"{text}\n- {marker}\n" if which == "memory.md" else f"{text} [{marker}]".strip()
                stop.wait(rng.uniform(0, 0.3))  # the operator types; the agent may write meanwhile
                sent = time.monotonic()
                r = client.put(
                    f"{base}/api/memory/{sid}/long-term",
                    json={"content": content, "base_version": current["version"]},
                    timeout=TIMEOUT,
                )
                record.answer("PUT long-term", r)
                edit = MemoryEdit(
                    which, marker, r.status_code, r.json() if r.status_code in (200, 409) else {}
                )
                edit.sent, edit.answered = sent, time.monotonic()
                if r.status_code == 200:
                    # What is there right after: the edit, or the agent's own later rewrite.
                    if which == "memory.md":
                        edit.after = nanobot.memory.read_text(encoding="utf-8")
                        for _ in range(5):  # empty: Dream's rewrite caught between truncate and write
                            if edit.after:
                                break
                            time.sleep(0.005)
                            edit.after = nanobot.memory.read_text(encoding="utf-8")
                    else:
                        edit.after = get_json(f"/api/memory/{zone}")["long_term_text"] or ""
                with record.lock:
                    record.edits.append(edit)
                    if {"memory.md", "zone"} <= {e.store for e in record.edits if e.status == 200}:
                        edited_both.set()
                # The other store next; after a 409 the same one again, as an operator re-opens and re-applies
                # an edit that met a conflict or a busy tape (three tries at most).
                tries = tries + 1 if r.status_code == 409 and tries < 3 else 0
                if not tries:
                    which = "memory.md" if which == "zone" else "zone"
                stop.wait(rng.uniform(0.1, 0.3))

        def stop_all() -> None:
            stop_agents.set()
            for runner in runners:
                runner.join(TIMEOUT)
            for done in (handed_off, edited_both):  # the agents have stopped: their tapes are idle
                done.wait(WRITERS_AFTER)
            stop.set()
            for t in threads:
                t.join(TIMEOUT)

        stack.callback(stop_all)  # runs before the server stops, whatever happens
        runners += [Runner(a, stop_agents, SECONDS) for a in (bub, nanobot, yachiyo, araliya)]
        threads += [
            threading.Thread(target=guarded(record, lambda n=n: reader(n)), name=f"reader-{n}")
            for n in range(READERS)
        ]
        threads += [
            threading.Thread(target=guarded(record, hand_off), name="handoff"),
            threading.Thread(target=guarded(record, edit_memory), name="memory-edit"),
        ]
        for runner in runners:  # forked before any thread of ours runs
            runner.start()
        for t in threads:
            t.start()
        for runner in runners:
            runner.join(SECONDS + 10)
        stop_all()
        alive = [t.name for t in threads if t.is_alive()] + [r.name for r in runners if r.is_alive()]
        assert not alive, f"threads still running: {alive}"

        # One final index, as a separate process would run it; then read the index back.
        tapeview(env, "index")
        indexed = {name: get_json(f"/api/tapes/{k}") for name, k in keys.items()}
        entries = {name: all_entries(get_json, keys[name]) for name in ("bub_main", "bub_other")}
        attachments = {
            a["label"]: get_json(f"/api/tapes/{a['id']}") for a in indexed["bub_main"]["attachments"]
        }
        final_zone = get_json(f"/api/memory/{zone}")
        final_yachiyo = get_json(f"/api/memory/{store_keys['yachiyo']}")
        final_kv = get_json(f"/api/memory/{store_keys['araliya_kv']}")
        log = (home / "serve.log").read_text()

    # Shown with -s, or with a failure.
    print(summary(time.monotonic() - started, record, bub, nanobot, yachiyo, araliya))

    # Nothing failed, nothing answered 5xx.
    errors = [f"{r.name}: {r.error}" for r in runners if r.error]
    assert not errors, errors
    assert not record.failures, record.failures[:5]
    server_errors = [a for a in record.answers if a.status >= 500]
    assert not server_errors, (server_errors[:5], tracebacks(log))
    answered = Counter(a.what for a in record.answers)
    unread = {what for _, what in pages + api if answered[what] < 2}
    assert not unread, f"the readers barely ran: {unread}"
    odd = Counter(
        (a.what, a.status, a.detail[:120])
        for a in record.answers
        if a.status != 200 and a.what not in ("POST handoff", "PUT long-term")
    )
    assert not odd, odd.most_common(10)

    # The handoffs: 201, or 409 busy (the agent mid-turn); some found the tape idle.
    assert {h.status for h in record.handoffs} <= {201, 409}, Counter(h.status for h in record.handoffs)
    assert all(h.body["detail"].startswith("busy") for h in record.handoffs if h.status == 409)
    accepted = {h.name: h for h in record.handoffs if h.status == 201}
    assert accepted, "no handoff found a tape idle: the test did not test writes"

    # The Bub tapes on disk: every line the agent wrote, and nothing but the dashboard's lines beside them.
    tapes = {path: bub.tapes[path] for path in (bub_main, bub.sidecar, bub_other)}
    layout: dict[Path, list[list[DiskLine]]] = {}
    problems: list[str] = []
    lost: list[bytes] = []
    for path, tape in tapes.items():
        layout[path] = []
        for gen in tape.generations:
            if gen.archive is not None:
                assert gen.archive.read_bytes() == gen.archived, f"{gen.archive.name} changed after the reset"
                lines, wrong = walk(gen, gen.archived, archived=True)
                lost += [raw for _, raw in split_lines(gen.lost)]
            else:
                data = path.read_bytes() if path.exists() else b""
                lines, wrong = walk(gen, data)
            layout[path].append(lines)
            problems += [f"{path.name}: {w}" for w in wrong]
    assert not problems, problems[:5]

    # Every 201 handoff is on disk exactly once (or went with a reset, §6), and every one there got 201.
    ours = [
        (path, n, lines)
        for path, gens in layout.items()
        for lines in gens
        for n, line in enumerate(lines)
        if line.what == "tapeview"
    ]
    anchors = Counter(
        bub_entry(lines[n].raw)["payload"]["name"]
        for _, n, lines in ours
        if bub_entry(lines[n].raw)["kind"] == "anchor"
        and not bub_entry(lines[n].raw)["payload"]["name"].startswith("memory/")
    )
    gone = Counter(
        bub_entry(raw)["payload"]["name"]
        for raw in lost
        if bub_entry(raw) and bub_entry(raw)["kind"] == "anchor"
    )
    assert all(count == 1 for count in (anchors + gone).values()), (anchors + gone).most_common(3)
    assert set(anchors) | set(gone) == set(accepted), set(accepted) ^ (set(anchors) | set(gone))
    on_disk_ids = {
        bub_entry(lines[n].raw)["payload"]["name"]: [
            bub_entry(lines[n].raw)["id"],
            bub_entry(lines[n + 1].raw)["id"],
        ]
        for _, n, lines in ours
        if bub_entry(lines[n].raw)["kind"] == "anchor" and n + 1 < len(lines)
    }
    wrong_ids = {
        k: (h.body["ids"], on_disk_ids[k])
        for k, h in accepted.items()
        if k in on_disk_ids and h.body["ids"] != on_disk_ids[k]
    }
    assert not wrong_ids, wrong_ids  # the ids the 201 reported are the ids written
    if gone:
        warnings.warn(
            f"handoffs written while Bub reset the tape went with it (formats/bub.md §6): {sorted(gone)}",
            stacklevel=1,
        )
    zone_ok = [e for e in record.edits if e.store == "zone" and e.status == 200]
    seals = sum(1 for _, n, lines in ours if bub_entry(lines[n].raw)["payload"].get("name") == "memory/seal")
    assert seals == len(zone_ok), (seals, len(zone_ok))

    # Each of the dashboard's lines follows the end of a turn (the agent's last line before it ends
    # its burst, and ends a turn by formats/bub.md §4), no line of that burst comes after it, and its
    # id continues the tape's.
    after_crash: list[str] = []
    inside: list[str] = []
    for path, gens in layout.items():
        for lines in gens:
            for n, line in enumerate(lines):
                if line.what != "tapeview":
                    continue
                entry = bub_entry(line.raw)
                where = f"{path.name} at byte {line.offset} ({entry['payload'].get('name')})"
                before = next((x for x in reversed(lines[:n]) if x.what != "tapeview"), None)
                if before is None:
                    inside.append(f"{where}: the first line of a tape")
                elif before.what in ("residue", "glued"):
                    if entry["kind"] == "anchor" and entry["payload"].get("name") != "memory/seal":
                        after_crash.append(where)  # a handoff's or a zone's first line
                elif not ends_a_turn(bub_entry(before.raw)) or (
                    before.line is not None and not before.line.last
                ):
                    inside.append(f"{where}: after {before.raw[:160]!r}")
                later = next((x for x in lines[n + 1 :] if x.what != "tapeview"), None)
                if later is not None and later.line is not None and not later.line.first:
                    inside.append(f"{where}: the agent's burst goes on after it")
                previous = last_id(lines[:n])
                if previous is not None and entry["id"] != previous + 1:
                    inside.append(f"{where}: id {entry['id']} after id {previous}")
    assert not inside, inside[:5]

    # The index: every line of each Bub tape, at its position, with its id; unreadable only the residue.
    for name, path in (("bub_main", bub_main), ("bub_other", bub_other)):
        disk = split_lines(path.read_bytes())
        parsed = [bub_entry(raw) for _, raw in disk]
        unreadable = sum(1 for p in parsed if p is None)
        assert (indexed[name]["entries"], indexed[name]["unreadable"]) == (
            len(disk) - unreadable,
            unreadable,
        ), name
        assert [(e["pos"], e["id"], e["readable"]) for e in entries[name]] == [
            (n, p["id"] if p else None, p is not None) for n, p in enumerate(parsed, 1)
        ], name
    crash_lines = [x for lines in layout[bub_other] for x in lines if x.what in ("residue", "glued")]
    assert len(crash_lines) == 1 and indexed["bub_other"]["unreadable"] == 1, crash_lines
    assert indexed["bub_main"]["unreadable"] == 0
    for label, tape in attachments.items():
        file = bub_main.parent / (label if label.endswith(".bak") else f"{label}.jsonl")
        disk = split_lines(file.read_bytes())
        assert (tape["entries"] + tape["unreadable"], tape["unreadable"]) == (len(disk), 0), label
    archives = [g.archive.name for g in tapes[bub_main].generations if g.archive]
    assert bub.resets and all(a in attachments for a in archives), (archives, list(attachments))

    # The other families: their files parse and hold what the agent last wrote; the index has them whole.
    assert nanobot.problems() + yachiyo.problems() + araliya.problems() == []
    fresh = {
        "nanobot": list(nanobot_reader.scan(nanobot.path)),
        "yachiyo": list(yachiyo_reader.scan(yachiyo.path)),
        "araliya_new": list(
            araliya_reader.scan(araliya.memory / "sessions" / araliya.created / "transcript.md")
        ),
        "araliya_old": list(
            araliya_reader.scan(araliya.memory / "sessions" / ARALIYA_EXISTING / "transcript.md")
        ),
    }
    for name, scanned in fresh.items():
        assert all(e.readable for e in scanned), name
        assert (indexed[name]["entries"], indexed[name]["unreadable"]) == (len(scanned), 0), name
    for content in yachiyo.memory_entries.values():
        assert content in final_yachiyo["content"]
    for value in araliya.kv_set_values.get(araliya.created, {}).values():
        assert value.splitlines()[0] in final_kv["content"]

    # Memory: no edit lost on either side.
    memory_text = nanobot.memory.read_text(encoding="utf-8")
    md_ok = [e for e in record.edits if e.store == "memory.md" and e.status == 200]
    for e in record.edits:
        assert e.status in (200, 409), (e.store, e.status, e.body)
        if e.status == 409:
            assert "current_version" in e.body or e.body["detail"].startswith("busy"), e.body
    assert md_ok and zone_ok, Counter((e.store, e.status) for e in record.edits)
    for e in md_ok:
        # Right after the 200 the file held the edit, or the agent's next rewrite (built on it).
        assert e.marker in e.after or e.after in nanobot.memory_written, e.marker
        if e.marker not in memory_text:
            # nanobot's Dream reads MEMORY.md and rewrites it in place with no lock: a rewrite built on
            # what it read before this edit, written after it, drops the edit, and no writer beside
            # nanobot can see that happen (formats/nanobot.md §4: nothing a dashboard does makes
            # concurrent edits fully safe). That, and only that, may lose one.
            clobbered = [
                d for d in nanobot.dreams if d[0] < e.answered and d[1] > e.sent and e.marker not in d[2]
            ]
            assert clobbered, f"{e.marker} got 200 but is not in MEMORY.md"
    for e in zone_ok:
        assert e.marker in e.after and e.marker in final_zone["long_term_text"], e.marker
    refused = [e for e in record.edits if e.status == 409]
    assert not [
        e.marker for e in refused if e.marker in memory_text or e.marker in final_zone["long_term_text"]
    ]

    # Last, as the formats doc asks (bub.md §4 rule 4): a turn a crash cut short is no turn's end.
    assert not after_crash, (
        "the dashboard wrote onto the residue of a turn the agent's crash cut short, without an "
        f"operator's confirmation: {after_crash}"
    )


# --- helpers ----------------------------------------------------------------------------------


def ends_a_turn(entry: dict | None) -> bool:
    """formats/bub.md §4: after this the agent writes nothing until its next turn or command."""
    if entry is None:
        return False
    payload = entry["payload"]
    data = payload.get("data") if isinstance(payload.get("data"), dict) else {}
    if entry["kind"] == "anchor":
        return True  # an anchor/handoff pair, or the seal of a memory zone
    if entry["kind"] != "event":
        return False
    name = payload.get("name")
    if name == "loop.step":
        return data.get("status") in ("ok", "error")
    if name == "run":
        return data.get("status") == "error"
    return name in ("command", "handoff")


def last_id(lines: list[DiskLine]) -> int | None:
    for line in reversed(lines):
        entry = bub_entry(line.raw)
        if entry is not None:
            return entry["id"]
    return None


def all_entries(get_json: Callable[[str], dict], key: str) -> list[dict]:
    out, cursor = [], None
    for _ in range(100):
        page = get_json(f"/api/tapes/{key}/entries?limit=500" + (f"&cursor={cursor}" if cursor else ""))
        out += page["items"]
        cursor = page["next_cursor"]
        if not cursor:
            return out
    raise AssertionError("more than 100 pages of entries")


def summary(
    seconds: float,
    record: Record,
    bub: BubAgent,
    nanobot: NanobotAgent,
    yachiyo: YachiyoAgent,
    araliya: AraliyaAgent,
) -> str:
    lines = [
        f"\nlive agents: {seconds:.1f} s in all; {len(record.answers)} requests, {dict(Counter(a.status for a in record.answers))}",
        f"bub: {bub.turns} turns/commands, {bub.resets} resets, {bub.spills} spills, crashed: {bub.crashed_at is not None}",
        f"nanobot: {nanobot.saves} saves, {len(nanobot.history_written)} consolidations; yachiyo: {yachiyo.rewrites} "
        f"rewrites, {len(yachiyo.memory_entries)} memory entries; araliya: {araliya.rewrites} rewrites",
        f"handoffs {dict(Counter(h.status for h in record.handoffs))}; "
        f"memory edits {dict(Counter(f'{e.store} {e.status}' for e in record.edits))}",
    ]
    by_what: dict[str, list[float]] = {}
    for a in record.answers:
        by_what.setdefault(a.what, []).append(a.seconds)
    for what, times in sorted(by_what.items()):
        times.sort()
        lines.append(
            f"  {what:<28} {len(times):>5}  p50 {times[len(times) // 2] * 1000:>6.0f} ms  max {times[-1] * 1000:>6.0f} ms"
        )
    return "\n".join(lines)


def tracebacks(log: str) -> str:
    """The server's first tracebacks, for a 5xx."""
    found = [m.start() for m in re.finditer(r"Traceback \(most recent call last\)", log)]
    return "\n---\n".join(log[s : s + 3000] for s in found[:3]) or log[-3000:]
