"""Writes from a web tier that is not the files' host: the watcher of host-a carries them out.

Real processes over one database: `tapeview serve --no-index` as host "web", `tapeview index
--watch` as host-a (its own SQLite file, or PostgreSQL under `.ci/postgres_server.py`).
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from memory_admin.stores.model import version_of
from tests.outbox.fleet import TIMEOUT, fleet
from tests.tapes.test_watcher import eventually

WAIT = 5.0  # TAPEVIEW_OUTBOX_WAIT_SECONDS: the default


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_handoff_and_a_memory_edit_through_the_web_tier_land_on_host_a(tmp_path: Path) -> None:
    with fleet(tmp_path) as f:
        f.start_watcher(tmp_path / "watcher.log")
        tape = f.bub / "idle.jsonl"
        before = lines(tape)
        started = time.monotonic()
        r = f.api.post(
            f"{f.base}/api/tapes/{f.tape_id('idle')}/handoff", json={"name": "phase/fleet"}, timeout=TIMEOUT
        )
        assert r.status_code == 201, r.text
        assert time.monotonic() - started < WAIT + 1
        anchor, event = lines(tape)[-2:]
        assert len(lines(tape)) == len(before) + 2
        assert r.json()["ids"] == [anchor["id"], event["id"]] == [before[-1]["id"] + 1, before[-1]["id"] + 2]
        assert anchor["kind"] == "anchor" and anchor["payload"]["state"] == {"owner": "token:w"}
        assert event["payload"]["name"] == "handoff"

        memory = f.nanobot / "workspace" / "memory" / "MEMORY.md"
        base = version_of(memory.read_bytes())
        r = f.api.put(
            f"{f.base}/api/memory/{f.store_id('nanobot.memory')}/long-term",
            json={"content": "# Facts\n\nWritten from the web tier.\n", "base_version": base},
            timeout=TIMEOUT,
        )
        assert r.status_code == 200, r.text
        assert memory.read_text() == "# Facts\n\nWritten from the web tier.\n"
        assert r.json()["version"] == version_of(memory.read_bytes()) != base

        r = f.api.put(  # the same edit again: its base is stale now, 409 with the diff, as today
            f"{f.base}/api/memory/{f.store_id('nanobot.memory')}/long-term",
            json={"content": "# Facts\n\nstale\n", "base_version": base},
            timeout=TIMEOUT,
        )
        assert r.status_code == 409 and "+stale" in r.json()["diff"], r.text
        assert memory.read_text() == "# Facts\n\nWritten from the web tier.\n"


def test_a_busy_tape_answers_409_with_retry_after_through_the_outbox(tmp_path: Path) -> None:
    with fleet(tmp_path) as f:
        f.start_watcher(tmp_path / "watcher.log")
        before = (f.bub / "busy.jsonl").read_bytes()
        r = f.api.post(f"{f.base}/api/tapes/{f.tape_id('busy')}/handoff", json={"name": "x"}, timeout=TIMEOUT)
        assert r.status_code == 409 and int(r.headers["Retry-After"]) >= 1, r.text
        assert r.json()["detail"].startswith("busy: the agent is mid-turn") and r.json()["stopped"] is False
        assert (f.bub / "busy.jsonl").read_bytes() == before


def test_a_write_for_an_unseen_host_is_queued_then_carried_out_when_its_watcher_starts(
    tmp_path: Path,
) -> None:
    with fleet(tmp_path) as f:
        tape = f.bub / "idle.jsonl"
        before = tape.read_bytes()
        started = time.monotonic()
        r = f.api.post(
            f"{f.base}/api/tapes/{f.tape_id('idle')}/handoff", json={"name": "later"}, timeout=TIMEOUT
        )
        assert r.status_code == 202, r.text
        assert WAIT - 0.5 < time.monotonic() - started < WAIT + 2
        queued = r.json()
        assert queued["state"] == "queued" and r.headers["Location"] == queued["status_url"]
        assert queued["detail"] == "host host-a has never been seen: the request is queued"
        assert tape.read_bytes() == before

        f.start_watcher(tmp_path / "watcher.log")
        status_url = f"{f.base}{queued['status_url']}"
        done = eventually(
            lambda: (s := f.api.get(status_url, timeout=TIMEOUT).json())["state"] == "done" and s,
            30,
            "the request carried out once host-a's watcher runs",
        )
        assert done["result"]["status"] == 201 and len(done["result"]["body"]["ids"]) == 2
        assert lines(tape)[-2]["payload"]["name"] == "later"

        watcher = f.watchers[0]
        f.stop_watcher(watcher)  # stopped cleanly: unseen at once
        r = f.api.post(f"{f.base}/api/tapes/{f.tape_id('idle')}/handoff", json={"name": "x"}, timeout=TIMEOUT)
        assert r.status_code == 202
        assert r.json()["detail"].startswith("host host-a has not been seen for ")
        assert r.json()["detail"].endswith(" seconds: the request is queued")


def test_a_cancelled_request_is_never_carried_out(tmp_path: Path) -> None:
    with fleet(tmp_path) as f:
        tape = f.bub / "idle.jsonl"
        before = tape.read_bytes()
        url = f"{f.base}/api/tapes/{f.tape_id('idle')}/handoff"
        cancelled = f.api.post(url, json={"name": "cancelled"}, timeout=TIMEOUT).json()
        r = f.api.post(f"{f.base}{cancelled['status_url']}/cancel", timeout=TIMEOUT)
        assert (
            r.status_code == 200
            and r.json()["state"] == "cancelled"
            and r.json()["cancelled_by"] == "token:w"
        )

        kept = f.api.post(url, json={"name": "kept"}, timeout=TIMEOUT).json()  # queued after it
        f.start_watcher(tmp_path / "watcher.log")
        eventually(
            lambda: f.api.get(f"{f.base}{kept['status_url']}", timeout=TIMEOUT).json()["state"] == "done",
            30,
            "the request queued after the cancelled one carried out",
        )
        assert [e["payload"]["name"] for e in lines(tape)[len(before.splitlines()) :]] == ["kept", "handoff"]
        assert f.api.get(f"{f.base}{cancelled['status_url']}", timeout=TIMEOUT).json()["state"] == "cancelled"
        r = f.api.post(f"{f.base}{kept['status_url']}/cancel", timeout=TIMEOUT)
        assert r.status_code == 409 and "done" in r.json()["detail"]


def test_two_watchers_of_one_host_never_both_carry_out_a_request(tmp_path: Path) -> None:
    with fleet(tmp_path) as f:
        tape = f.bub / "idle.jsonl"
        before = lines(tape)
        url = f"{f.base}/api/tapes/{f.tape_id('idle')}/handoff"
        queued = [f.api.post(url, json={"name": f"h{n}"}, timeout=TIMEOUT).json() for n in range(8)]
        assert {q["state"] for q in queued} == {"queued"}
        # Both start at once and find all eight waiting: each claims with SKIP LOCKED.
        f.start_watcher(tmp_path / "watcher-1.log")
        f.start_watcher(tmp_path / "watcher-2.log")

        def finished(q: dict) -> dict:
            return eventually(
                lambda: (
                    (s := f.api.get(f"{f.base}{q['status_url']}", timeout=TIMEOUT).json())["state"] == "done"
                    and s
                ),
                60,
                "every request carried out",
            )

        with ThreadPoolExecutor(8) as pool:
            results = list(pool.map(finished, queued))
        written = lines(tape)[len(before) :]
        assert len(written) == 16  # each handoff once: an anchor and its event
        assert sorted(a["payload"]["name"] for a in written if a["kind"] == "anchor") == [
            f"h{n}" for n in range(8)
        ]
        assert sorted(i for r in results for i in r["result"]["body"]["ids"]) == [e["id"] for e in written]
