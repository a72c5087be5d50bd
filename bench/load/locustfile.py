"""Locust users for `bench/load/run.py`: people signed in to the dashboard, and API clients.

Run through `bench/load/run.py`, which starts the server and passes, in the environment:

- TAPEVIEW_LOAD_ACCOUNTS: "name:password,..." operators to sign in as (round-robin);
- TAPEVIEW_LOAD_READ_TOKEN / TAPEVIEW_LOAD_WRITE_TOKEN: API tokens (read scope, write scope);
- TAPEVIEW_LOAD_LIVE_TAPE: the id of the Bub tape the simulated agent is appending to (optional);
- TAPEVIEW_LOAD_REPORT: where to write, on exit, the answers counted by status per request name.

Every request is named by its endpoint group ("/tapes/[id]/?before"), so Locust's statistics come
per group. A request fails unless it gets the answer it expects; a handoff's expected answers are
201 (written) and 409 (the tape is mid-turn: busy, retry). 5xx answers and connection errors are
counted apart in the report, since those are what the run must never see.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import re
from collections import Counter, defaultdict
from typing import Any

from locust import HttpUser, between, events, task

TIMEOUT = 60  # seconds for one request: a slow answer is measured, only a stuck one gives up
CSRF_FIELD = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')

TAPE_QUERIES = ["cli", "telegram", "discord", "sess", "zzz-nothing"]
SORTS = ["-tokens", "-entries", "label", "-last", "errors", "-size", "since"]
SEARCHES = [
    "parser",
    "context_length_exceeded",
    "fs_read",
    '"not a git repository"',
    "蓝色",
    "前端重构",
    "websocket",
    "handoff",
    "load turn",
    "nothing-matches-this-xyzzy",
]

ACCOUNTS = [
    tuple(pair.split(":", 1))
    for pair in os.environ.get("TAPEVIEW_LOAD_ACCOUNTS", "").split(",")
    if ":" in pair
]
READ_TOKEN = os.environ.get("TAPEVIEW_LOAD_READ_TOKEN", "")
WRITE_TOKEN = os.environ.get("TAPEVIEW_LOAD_WRITE_TOKEN", "")
LIVE_TAPE = os.environ.get("TAPEVIEW_LOAD_LIVE_TAPE", "")
REPORT = os.environ.get("TAPEVIEW_LOAD_REPORT", "")

_accounts = itertools.cycle(ACCOUNTS or [("", "")])
_handoffs = itertools.count(1)
# Counted here rather than read back from Locust's CSV files, which are written once a second and
# so miss the last requests: "method name" -> answers by status, failures, 5xx, times in ms.
_answers: dict[str, dict[str, Any]] = defaultdict(
    lambda: {"status": Counter(), "failures": 0, "5xx": 0, "connection": 0, "ms": []}
)
_reasons: Counter[str] = Counter()


@events.request.add_listener
def _count(request_type, name, response_time, response_length, response=None, exception=None, **kw) -> None:
    status = getattr(response, "status_code", 0) or 0
    row = _answers[f"{request_type} {name}"]
    row["status"][str(status)] += 1
    row["ms"].append(round(response_time, 1))
    if status >= 500:
        row["5xx"] += 1
    elif status == 0:
        row["connection"] += 1
    if exception is not None:
        row["failures"] += 1
        _reasons[f"{request_type} {name}: {exception}"[:300]] += 1


@events.quitting.add_listener
def _write_report(environment, **kw) -> None:
    if not REPORT:
        return
    data = {
        "answers": {n: {**r, "status": dict(r["status"])} for n, r in sorted(_answers.items())},
        "failures": dict(_reasons.most_common()),
    }
    with open(REPORT, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, ensure_ascii=False)


class Tapes:
    """What a user knows of the tapes: from GET /api/tapes, and the positions seen on entry pages."""

    def __init__(self) -> None:
        self.all: list[dict] = []
        self.positions: dict[str, list[int]] = {}

    def load(self, items: list[dict]) -> None:
        self.all = [t for t in items if t.get("role") == "tape"]

    def any(self) -> dict | None:
        return random.choice(self.all) if self.all else None

    def bub(self) -> dict | None:
        bub = [t for t in self.all if t["kind"] == "bub"]
        live = [t for t in bub if t["id"] == LIVE_TAPE]
        # Half the handoffs go to the tape the agent is writing: they race its turns.
        if live and random.random() < 0.5:
            return live[0]
        return random.choice(bub) if bub else None

    def remember(self, key: str, items: list[dict]) -> None:
        seen = [e["pos"] for e in items if isinstance(e.get("pos"), int)]
        if seen:
            self.positions[key] = seen


class Reader(HttpUser):
    """Shared browsing: every request is expected to answer 200 (or the listed codes)."""

    abstract = True
    wait_time = between(0.3, 1.5)

    def on_start(self) -> None:
        self.tapes = Tapes()
        self.refresh_tapes()

    def get(self, url: str, name: str, ok: tuple[int, ...] = (200,), **kw: Any):
        with self.client.get(url, name=name, timeout=TIMEOUT, catch_response=True, **kw) as response:
            self.judge(response, ok)
            return response

    @staticmethod
    def judge(response, ok: tuple[int, ...]) -> None:
        if (
            response.history
            and "/login/" in (response.url or "")
            and "/login/" not in response.history[0].url
        ):
            # A page that sends the user back to the sign-in form: the session was lost.
            response.failure("signed out")
        elif response.status_code in ok:
            response.success()
        elif response.status_code >= 500:
            response.failure(f"5xx: {response.status_code}")
        elif response.status_code == 0:
            # The errno, not the whole message: it names the URL, and the report groups by text.
            errno = re.search(r"\[Errno -?\d+\][^'\")]*", str(response.error))
            detail = f" ({errno.group(0).strip()})" if errno else ""
            response.failure(f"connection error: {type(response.error).__name__}{detail}")
        else:
            response.failure(f"unexpected {response.status_code}")

    def refresh_tapes(self) -> None:
        response = self.get("/api/tapes?limit=500", "/api/tapes")
        if response.status_code == 200:
            self.tapes.load(response.json()["items"])

    def api_entries(self) -> None:
        tape = self.tapes.any()
        if tape is None:
            return
        response = self.get(f"/api/tapes/{tape['id']}/entries?limit=50", "/api/tapes/[id]/entries")
        if response.status_code != 200:
            return
        page = response.json()
        self.tapes.remember(tape["id"], page["items"])
        if page.get("next_cursor") and random.random() < 0.5:
            self.get(
                f"/api/tapes/{tape['id']}/entries?limit=50&cursor={page['next_cursor']}",
                "/api/tapes/[id]/entries?cursor",
            )

    def api_search(self) -> None:
        self.get("/api/search", "/api/search", params={"q": random.choice(SEARCHES)})


class Person(Reader):
    """Someone signed in with a password (an operator), browsing the pages; now and then a handoff."""

    weight = 3

    def on_start(self) -> None:
        self.name, password = next(_accounts)
        login = self.get("/login/", "/login/ (form)")
        token = CSRF_FIELD.search(login.text or "")
        with self.client.post(
            "/login/",
            data={
                "username": self.name,
                "password": password,
                "csrfmiddlewaretoken": token.group(1) if token else "",
            },
            headers={"Referer": f"{self.host}/login/"},
            name="/login/ (post)",
            timeout=TIMEOUT,
            catch_response=True,
        ) as response:
            # Signed in: the redirect lands on the session index, not back on the form.
            if response.status_code == 200 and "/login/" in response.url:
                response.failure("sign-in refused")
            else:
                self.judge(response, (200,))
        super().on_start()

    @task(4)
    def session_index(self) -> None:
        self.get("/", "/")

    @task(2)
    def session_index_sorted(self) -> None:
        self.get(f"/?sort={random.choice(SORTS)}", "/?sort")

    @task(2)
    def session_index_filtered(self) -> None:
        self.get("/", "/?q", params={"q": random.choice(TAPE_QUERIES)})

    @task(1)
    def session_rows(self) -> None:
        # htmx asks for the rows only.
        self.get(f"/?sort={random.choice(SORTS)}", "/?sort (htmx rows)", headers={"HX-Request": "true"})

    @task(4)
    def timeline(self) -> None:
        tape = self.tapes.any()
        if tape:
            self.get(f"/tapes/{tape['id']}/", "/tapes/[id]/")

    @task(3)
    def timeline_paging(self) -> None:
        tape = self.tapes.any()
        if not tape:
            return
        key, last = tape["id"], max(tape["entries"], 1)
        how = random.choice(["before", "after", "end", "after-htmx"])
        if how == "end":
            self.get(f"/tapes/{key}/?end=1", "/tapes/[id]/?end")
        elif how == "before":
            self.get(f"/tapes/{key}/?before={random.randint(1, last + 1)}", "/tapes/[id]/?before")
        elif how == "after":
            self.get(f"/tapes/{key}/?after={random.randint(0, last)}", "/tapes/[id]/?after")
        else:
            self.get(
                f"/tapes/{key}/?after={random.randint(0, last)}",
                "/tapes/[id]/?after (htmx entries)",
                headers={"HX-Request": "true"},
            )

    @task(2)
    def entry(self) -> None:
        known = [k for k in self.tapes.positions if any(t["id"] == k for t in self.tapes.all)]
        if not known:
            self.api_entries()
            return
        key = random.choice(known)
        self.get(
            f"/tapes/{key}/entries/{random.choice(self.tapes.positions[key])}/", "/tapes/[id]/entries/[pos]/"
        )

    @task(2)
    def context_preview(self) -> None:
        tape = self.tapes.any()
        if tape:
            self.get(f"/tapes/{tape['id']}/context", "/tapes/[id]/context")

    @task(3)
    def search_page(self) -> None:
        self.get("/search/", "/search/?q", params={"q": random.choice(SEARCHES)})

    @task(1)
    def api_from_the_browser(self) -> None:
        random.choice([self.refresh_tapes, self.api_entries, self.api_search])()

    @task(1)
    def handoff_form(self) -> None:
        tape = self.tapes.bub()
        if tape is None:
            return
        url = f"/tapes/{tape['id']}/handoff"
        page = self.get(url, "/tapes/[id]/handoff (form)")
        token = CSRF_FIELD.search(page.text or "")
        if page.status_code != 200 or not token:
            return
        with self.client.post(
            url,
            data={"name": f"load/{next(_handoffs)}", "summary": "", "csrfmiddlewaretoken": token.group(1)},
            headers={"Referer": f"{self.host}{url}"},
            name="/tapes/[id]/handoff (post)",
            timeout=TIMEOUT,
            catch_response=True,
        ) as response:
            # Written: redirected to the end of the timeline; busy: 409 with Retry-After.
            if response.status_code == 200 and not response.history:
                response.failure("handoff form not accepted")
            else:
                self.judge(response, (200, 409))


class Service(Reader):
    """An API client with tokens: reads with a read token, hands off with a write token."""

    weight = 1

    def on_start(self) -> None:
        self.client.headers["Authorization"] = f"Bearer {READ_TOKEN}"
        super().on_start()

    @task(3)
    def tapes_list(self) -> None:
        self.refresh_tapes()

    @task(1)
    def tapes_sorted(self) -> None:
        self.get(f"/api/tapes?sort={random.choice(SORTS)}", "/api/tapes?sort")

    @task(2)
    def tape(self) -> None:
        tape = self.tapes.any()
        if tape:
            self.get(f"/api/tapes/{tape['id']}", "/api/tapes/[id]")

    @task(4)
    def entries(self) -> None:
        self.api_entries()

    @task(3)
    def search(self) -> None:
        self.api_search()

    @task(2)
    def handoff(self) -> None:
        tape = self.tapes.bub()
        if tape is None:
            return
        with self.client.post(
            f"/api/tapes/{tape['id']}/handoff",
            json={"name": f"load/{next(_handoffs)}"},
            headers={"Authorization": f"Bearer {WRITE_TOKEN}"},
            name="/api/tapes/[id]/handoff",
            timeout=TIMEOUT,
            catch_response=True,
        ) as response:
            self.judge(response, (201, 409))
