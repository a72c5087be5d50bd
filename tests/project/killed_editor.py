"""The process the kill -9 test kills: MEMORY.md edits in a loop, forked from one Django set up once.

Run as `python -c "from tests.project.killed_editor import main; main()"` with
DJANGO_SETTINGS_MODULE, TAPEVIEW_HOME (holding a migrated SQLite file) and TAPEVIEW_SOURCES (one
nanobot source) set. It reads commands on stdin, one a line, and answers on stdout:

    edit <label>   one edit through writes.save_text, here; answers `edited <version>`
    loop <label>   forks a child that edits (<label>.0, <label>.1, ...) until it is killed;
                   answers `child <pid>`

Forking from a process that has Django set up already keeps a round well under a second.
Children are reaped by the kernel (SIGCHLD ignored): a killed one leaves no zombie, which
would still look alive to the audit log's check for writers that are gone.
"""

from __future__ import annotations

import os
import signal
import sys
from itertools import count

HEADER = "# Long-term memory\n\nedit "
# Big enough that a write takes a while (the temporary file, its fsync), so kills land inside it.
PADDING = "".join(f"- fact {n}: the NAS at 10.0.0.{n % 250} runs backups nightly\n" for n in range(4000))


def text_of(label: str) -> str:
    """The whole text of the edit named `label`."""
    return f"{HEADER}{label}\n\n{PADDING}"


def label_of(text: str) -> str | None:
    """The label of an edit's text, or None when `text` is not exactly one edit's whole text."""
    if not text.startswith(HEADER):
        return None
    label = text[len(HEADER) :].split("\n", 1)[0]
    return label if text == text_of(label) else None


def main() -> None:
    import django

    django.setup()
    from django.db import connections

    from memory_admin import catalog, writes
    from memory_admin.models import MemoryStore
    from memory_admin.versions import snapshot
    from tapeview.accounts.audit import Actor
    from tapeview.tapes import discovery

    discovery.sync()
    catalog.sync_stores()
    store = MemoryStore.objects.get(kind="nanobot.memory")
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)

    def edit(label: str) -> str:
        return writes.save_text(store, text_of(label), snapshot(store).version, Actor("editor")).version

    for line in sys.stdin:
        command, _, label = line.strip().partition(" ")
        if command == "edit":
            version = edit(label)
            connections.close_all()  # a forked child must not share this connection
            print(f"edited {version}", flush=True)
        elif command == "loop":
            connections.close_all()
            pid = os.fork()
            if pid == 0:
                try:
                    for n in count():
                        edit(f"{label}.{n}")
                finally:
                    os._exit(1)  # never back into the loop above: that is the parent's
            print(f"child {pid}", flush=True)
