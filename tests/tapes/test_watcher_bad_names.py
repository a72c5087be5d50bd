"""A file whose name is not UTF-8 in one source folder: not read, and no reason for the watcher to
stop watching by notifications (or by polling, when asked) for every source."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
import requests

from tests.servers import sign_in_by_link
from tests.tapes.test_watcher import (
    TIMEOUT,
    api_client,
    bub_folder,
    bub_line,
    caught_up,
    database,
    eventually,
    serve,
    tape_names,
)

BAD_NAME = os.fsdecode(b"bad-\xff.jsonl")  # os.listdir's way: the byte that is not UTF-8 as a lone surrogate


@pytest.mark.parametrize("mode", ["notifications", "polling"])
def test_a_name_that_is_not_utf8_leaves_the_watcher_watching_every_source(tmp_path: Path, mode: str) -> None:
    odd = bub_folder(tmp_path / "odd")
    other = bub_folder(tmp_path / "other")
    (odd / BAD_NAME).write_bytes(bub_line(1))
    home = tmp_path / "home"
    home.mkdir()
    polling = ["--polling"] if mode == "polling" else []
    with database(home, {"odd": odd, "other": other}) as env, serve(env, home, *polling) as (base, link, _):
        client = api_client(env)
        firsts = {
            s: eventually(lambda s=s: caught_up(client, base, s), 30, f"{s}'s first pass")
            for s in ("odd", "other")
        }
        with (odd / BAD_NAME).open("ab") as f:  # as an agent writes to it, a few times
            for n in range(2, 6):
                f.write(bub_line(n))
                f.flush()
                time.sleep(0.3)
        time.sleep(3)  # the watcher's next heartbeat says how it watches

        writing = threading.Event()
        writer = threading.Thread(target=keep_writing, args=(odd / BAD_NAME, writing))
        writer.start()  # while the odd file keeps changing, every append to a tape is still indexed
        try:
            for label, folder in (("odd", odd), ("other", other)):
                with (folder / "session_realistic.jsonl").open("ab") as f:
                    f.write(bub_line(900_001))
                more = firsts[label]["total_bytes"] + len(bub_line(900_001))
                eventually(
                    lambda label=label, more=more: caught_up(client, base, label, more),
                    10,
                    f"{label}'s append",
                )
        finally:
            writing.set()
            writer.join()

        browser = requests.Session()
        assert sign_in_by_link(browser, link, TIMEOUT).status_code == 200  # signed in
        page = browser.get(f"{base}/sources/", timeout=TIMEOUT).text
        assert f"The indexer is running ({mode};" in page, page[:3000]
        assert not any(name.startswith("bad-") for name in tape_names(client, base, "odd"))  # not read


def keep_writing(path: Path, stop: threading.Event) -> None:
    with path.open("ab") as f:
        while not stop.wait(0.2):
            f.write(bub_line(7))
            f.flush()
