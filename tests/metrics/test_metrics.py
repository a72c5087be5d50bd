"""`/metrics`: the index's lag, heartbeats and outbox read at scrape time, request counts, and who may read it."""

from __future__ import annotations

import io
import ipaddress
import shutil
import socket
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import orjson
import pytest
import requests
from django.core.management import call_command
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from tapeview.accounts import tokens
from tapeview.accounts.models import ApiToken
from tapeview.outbox.models import Request
from tapeview.search import catchup, feed
from tapeview.tapes import discovery
from tapeview.tapes.models import Indexer, Tape
from tests.servers import environment, own_database, tapeview_serve

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

REMOTE = "203.0.113.7"


def samples(text: str) -> dict[tuple[str, frozenset], float]:
    """Every sample of a scrape, by name and labels."""
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def scrape(client: Client | None = None, **extra) -> dict[tuple[str, frozenset], float]:
    r = (client or Client()).get("/metrics", **extra)
    assert r.status_code == 200, r.content[:500]
    assert r["Content-Type"].startswith("text/plain")
    return samples(r.content.decode())


def value(found: dict, name: str, **labels: str) -> float | None:
    return found.get((name, frozenset(labels.items())))


def bub_lines(first: int, n: int) -> bytes:
    return b"".join(
        orjson.dumps(
            {"id": i, "kind": "message", "payload": {"role": "user", "content": f"appended {i}"}, "meta": {}}
        )
        + b"\n"
        for i in range(first, first + n)
    )


@pytest.fixture
def metrics_token(db) -> str:
    return tokens.create("prometheus", ApiToken.METRICS)[1]


def test_index_and_search_lag_follow_an_append_and_its_indexing(served: dict[str, Path]) -> None:
    catchup.catch_up()
    host = discovery.this_host()
    before = scrape()
    assert value(before, "tapeview_index_behind_bytes", host=host, source="home") == 0
    entries = value(before, "tapeview_index_entries", host=host, source="home")
    assert entries == sum(t.next_pos - 1 for t in Tape.objects.filter(source="home"))
    assert value(before, "tapeview_search_behind_entries", source="home") is None  # none behind

    tape = Tape.objects.get(source="home", label="cli:local")
    n = feed.SMALL + 100  # more than the indexer makes searchable at once: the search pass is behind
    appended = bub_lines(10_000, n)
    with open(tape.path, "ab") as f:
        f.write(appended)
    (spec,) = [s for s in discovery.configured_sources() if s.label == "home"]
    discovery.discover(spec)  # the indexer has seen the file grow, and not read it yet
    seen = scrape()
    assert value(seen, "tapeview_index_behind_bytes", host=host, source="home") == len(appended)
    estimate = value(seen, "tapeview_index_behind_entries", host=host, source="home")
    assert n / 10 <= estimate <= n * 10  # short lines, at the mean size of the real tapes' entries

    discovery.sync()
    indexed = scrape()
    assert value(indexed, "tapeview_index_behind_bytes", host=host, source="home") == 0
    assert value(indexed, "tapeview_index_entries", host=host, source="home") == entries + n
    assert value(indexed, "tapeview_search_behind_entries", source="home") == n

    catchup.catch_up()
    assert value(scrape(), "tapeview_search_behind_entries", source="home") is None


def test_heartbeat_age_and_up_per_host(db) -> None:
    discovery.beat(started=True)
    Indexer.objects.create(
        host="far", started_at=timezone.now(), beat_at=timezone.now() - timedelta(minutes=5)
    )
    Indexer.objects.create(host="gone", started_at=timezone.now(), beat_at=None)  # stopped cleanly
    found = scrape()
    here = discovery.this_host()
    assert 0 <= value(found, "tapeview_indexer_heartbeat_age_seconds", host=here) < 30
    assert value(found, "tapeview_indexer_up", host=here) == 1
    assert 299 <= value(found, "tapeview_indexer_heartbeat_age_seconds", host="far") < 400
    assert value(found, "tapeview_indexer_up", host="far") == 0
    assert value(found, "tapeview_indexer_heartbeat_age_seconds", host="gone") is None
    assert value(found, "tapeview_indexer_up", host="gone") == 0


def test_outbox_queue_length_per_host(db) -> None:
    for state in (Request.QUEUED, Request.QUEUED, Request.RUNNING, Request.DONE):
        Request.objects.create(host="agent-1", action="append", actor="olga", state=state)
    Request.objects.create(host="agent-2", action="append", actor="olga", state=Request.FAILED)
    old = Request.objects.filter(host="agent-1", state=Request.QUEUED).first()
    Request.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(minutes=2))
    found = scrape()
    assert value(found, "tapeview_outbox_requests", host="agent-1", state="queued") == 2
    assert value(found, "tapeview_outbox_requests", host="agent-1", state="running") == 1
    assert value(found, "tapeview_outbox_requests", host="agent-2", state="queued") is None  # nothing waits
    assert 119 <= value(found, "tapeview_outbox_oldest_queued_age_seconds", host="agent-1") < 200


def test_requests_are_counted_by_view_and_status_and_timed(served, reader) -> None:
    ok = ("tapeview_http_requests_total", {"method": "GET", "view": "api:list_tapes", "status": "200"})
    missing = ("tapeview_http_requests_total", {"method": "GET", "view": "api:get_tape", "status": "404"})
    timed = ("tapeview_http_request_duration_seconds_count", {"method": "GET", "view": "api:list_tapes"})
    before = scrape()
    assert reader.get("/api/tapes").status_code == 200
    assert reader.get("/api/tapes").status_code == 200
    assert reader.get("/api/tapes/nosuchtape").status_code == 404
    after = scrape()
    for (name, labels), grew in ((ok, 2), (missing, 1), (timed, 2)):
        assert (value(after, name, **labels) or 0) - (value(before, name, **labels) or 0) == grew


def test_a_remote_scraper_needs_a_token_with_metrics_scope(db, metrics_token: str, read_token: str) -> None:
    client = Client()
    refused = client.get("/metrics", REMOTE_ADDR=REMOTE)
    assert refused.status_code == 401 and refused["WWW-Authenticate"] == "Bearer"
    assert "--scope metrics" in refused.json()["detail"]
    scrape(client, REMOTE_ADDR=REMOTE, HTTP_AUTHORIZATION=f"Bearer {metrics_token}")

    read = client.get("/metrics", REMOTE_ADDR=REMOTE, HTTP_AUTHORIZATION=f"Bearer {read_token}")
    assert read.status_code == 403 and "metrics scope" in read.json()["detail"]
    # A token is judged by itself, wherever it comes from.
    assert client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {read_token}").status_code == 403
    wrong = client.get("/metrics", REMOTE_ADDR=REMOTE, HTTP_AUTHORIZATION="Bearer tv_not-a-token")
    assert wrong.status_code == 401


@pytest.mark.parametrize(
    "header", ["HTTP_X_FORWARDED_FOR", "HTTP_FORWARDED", "HTTP_X_REAL_IP"], ids=lambda h: h[5:]
)
def test_a_local_address_behind_a_proxy_is_not_local(db, header: str) -> None:
    assert Client().get("/metrics", **{header: "198.51.100.4"}).status_code == 401
    scrape(Client())  # the same address with no proxy header


def test_behind_a_proxy_this_machine_needs_a_token_too(db, settings, metrics_token: str) -> None:
    settings.TAPEVIEW_METRICS_LOCAL = False
    assert Client().get("/metrics").status_code == 401
    scrape(Client(), HTTP_AUTHORIZATION=f"Bearer {metrics_token}")


def test_a_metrics_token_reads_nothing_else(db, metrics_token: str) -> None:
    r = Client().get("/api/tapes", HTTP_AUTHORIZATION=f"Bearer {metrics_token}")
    assert r.status_code == 403 and r.json() == {"detail": "a token with metrics scope reads /metrics only"}
    docs = Client().get("/api/openapi.json", HTTP_AUTHORIZATION=f"Bearer {metrics_token}")
    assert docs.status_code == 403
    ping = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    mcp = Client().post(
        "/mcp", ping, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {metrics_token}"
    )
    assert mcp.status_code == 403 and "metrics scope" in mcp.json()["detail"]


def test_metrics_answers_get_only(db) -> None:
    assert Client().post("/metrics").status_code == 405


def test_token_create_takes_the_metrics_scope(db) -> None:
    out = io.StringIO()
    call_command("token", "create", "prom", "--scope", "metrics", stdout=out)
    assert "(id" in out.getvalue() and ", metrics," in out.getvalue()
    assert tokens.verify(out.getvalue().strip().splitlines()[-1]).scope == "metrics"
    listed = io.StringIO()
    call_command("token", "list", stdout=listed)
    header, row = listed.getvalue().splitlines()
    assert row.split()[1:4] == ["prom", "metrics", "live"]
    assert header.index("state") == row.index("live")  # the columns line up


def own_address() -> str:
    """This machine's address on its network (no packet is sent), or loopback when it has none."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("192.0.2.1", 9))
        return s.getsockname()[0]


def test_the_real_server_answers_this_machine_and_asks_another_for_a_token(tmp_path: Path) -> None:
    """`tapeview serve` (waitress) on every address: asked from loopback, it answers; asked from
    this machine's network address (another client, as far as the server can tell), it wants the
    metrics token, and refuses a read token."""
    address = own_address()
    assert not ipaddress.ip_address(address).is_loopback, "this machine has no network address"
    folder = tmp_path / "bub"
    shutil.copytree(FIXTURES / "bub" / "tapes_dir", folder)
    home = tmp_path / "home"
    home.mkdir()
    env = environment(
        home,
        f"bub=bub:{folder}",
        TAPEVIEW_REFRESH_SECONDS="0",
        TAPEVIEW_ALLOWED_HOSTS=f"127.0.0.1,{address}",
    )
    with (
        own_database(env, "tapeview_metrics") as env,
        tapeview_serve(env, home, "--host", "0.0.0.0") as served,
    ):
        base = served[0]
        remote = base.replace("127.0.0.1", address)
        token = {scope: create_token(env, scope) for scope in ("metrics", "read")}
        local = requests.get(f"{base}/metrics", timeout=30)
        assert local.status_code == 200, local.text[:500]
        assert value(samples(local.text), "tapeview_indexer_up", host=discovery.this_host()) == 1
        refused = requests.get(f"{remote}/metrics", timeout=30)
        assert refused.status_code == 401 and "--scope metrics" in refused.json()["detail"]
        read = {"Authorization": f"Bearer {token['read']}"}
        assert requests.get(f"{remote}/metrics", headers=read, timeout=30).status_code == 403

        assert requests.get(f"{base}/api/tapes", headers=read, timeout=30).status_code == 200
        scraper = {"Authorization": f"Bearer {token['metrics']}"}
        found = samples(requests.get(f"{remote}/metrics", headers=scraper, timeout=30).text)
        listed = {"method": "GET", "view": "api:list_tapes", "status": "200"}
        assert value(found, "tapeview_http_requests_total", **listed) == 1  # this server process's count
        assert value(found, "tapeview_index_behind_bytes", host=discovery.this_host(), source="bub") == 0
    assert "Traceback" not in (home / "serve.log").read_text()


def create_token(env: dict[str, str], scope: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "tapeview", "token", "create", f"t-{scope}", "--scope", scope],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1]


def test_bad_tokens_get_429_past_the_limit_and_the_metrics_token_still_works(
    db, settings, metrics_token: str
) -> None:
    settings.AXES_FAILURE_LIMIT = 3
    bad = {"REMOTE_ADDR": REMOTE, "HTTP_AUTHORIZATION": "Bearer tv_guessed"}
    assert [Client().get("/metrics", **bad).status_code for _ in range(3)] == [401] * 3
    refused = Client().get("/metrics", **bad)
    assert refused.status_code == 429 and refused["Retry-After"] == "900"
    scrape(Client(), REMOTE_ADDR=REMOTE, HTTP_AUTHORIZATION=f"Bearer {metrics_token}")
