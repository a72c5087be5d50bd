"""The real `tapeview serve` behind a TLS-terminating proxy (TAPEVIEW_TRUSTED_PROXY=127.0.0.1): the
proxy's X-Forwarded-* headers say the browser's scheme, host and address; any other peer's are
dropped. Sent by a raw HTTP client, as a proxy sends them: Django's test client would skip waitress."""

from __future__ import annotations

import http.client
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import pytest

from tests.browser import PASSWORD
from tests.servers import environment, own_database, tapeview_serve

LIMIT = 3
PROXY = "127.0.0.1"  # the trusted proxy; the test connects from here as the proxy would
STRANGER = "127.0.0.2"  # another peer on this host, not trusted
SITE = "tv.example"


class Peer:
    """One TCP peer of the server (the proxy, or another machine), sending what it likes."""

    def __init__(self, base: str, source: str, forwarded: dict[str, str]) -> None:
        self.port = urlsplit(base).port
        self.source = source
        self.forwarded = forwarded

    def request(
        self, method: str, path: str, body: str | None = None, headers: dict[str, str] | None = None
    ) -> tuple[http.client.HTTPResponse, str]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30, source_address=(self.source, 0))
        try:
            conn.request(method, path, body=body, headers={**self.forwarded, **(headers or {})})
            answer = conn.getresponse()
            return answer, answer.read().decode()
        finally:
            conn.close()

    def sign_in(self, name: str, password: str) -> int:
        """The login form, fetched then posted as a browser does: the status of the post."""
        form, page = self.request("GET", "/login/")
        assert form.status == 200, (form.status, form.getheader("Location"))
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        cookie = re.search(r"csrftoken=([^;]+)", form.getheader("Set-Cookie")).group(1)
        scheme = self.forwarded.get("X-Forwarded-Proto", "http")
        host = self.forwarded.get("X-Forwarded-Host", f"127.0.0.1:{self.port}")
        posted, _ = self.request(
            "POST",
            "/login/",
            urlencode({"username": name, "password": password, "csrfmiddlewaretoken": token}),
            {
                "Content-Type": "application/x-www-form-urlencoded",
                "Cookie": f"csrftoken={cookie}",
                "Origin": f"{scheme}://{host}",
                "Referer": f"{scheme}://{host}/login/",
            },
        )
        return posted.status


def through_proxy(base: str, client: str) -> Peer:
    """What the proxy sends for a browser at `client` that came in over HTTPS."""
    return Peer(
        base,
        PROXY,
        {"X-Forwarded-For": client, "X-Forwarded-Proto": "https", "X-Forwarded-Host": SITE},
    )


def add_user(env: dict[str, str], name: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "tapeview", "createuser", name, "--password-stdin"],
        env=env,
        input=PASSWORD + "\n",
        check=True,
        capture_output=True,
        text=True,
    )


@contextmanager
def served(tmp_path: Path, name: str, **settings: str) -> Iterator[str]:
    home = tmp_path / name
    (home / "tapes").mkdir(parents=True)
    env = environment(
        home,
        f"bub:{home / 'tapes'}",
        TAPEVIEW_TRUSTED_PROXY=PROXY,
        TAPEVIEW_ALLOWED_HOSTS=f"{SITE},127.0.0.1",
        TAPEVIEW_SIGNIN_FAILURES=str(LIMIT),
        **settings,
    )
    with own_database(env, f"tapeview_{name}") as env, tapeview_serve(env, home) as (base, _, _):
        add_user(env, "vera")
        yield base
    assert "Traceback" not in (home / "serve.log").read_text()


@pytest.fixture(scope="module")
def https_site(tmp_path_factory) -> Iterator[str]:
    with served(tmp_path_factory.mktemp("proxy"), "https", TAPEVIEW_SECURE_COOKIES="true") as base:
        yield base


def test_https_through_the_proxy_is_not_redirected_and_gets_hsts(https_site) -> None:
    answer, page = through_proxy(https_site, "203.0.113.7").request("GET", "/login/")
    assert answer.status == 200 and "Sign in" in page
    assert answer.getheader("Strict-Transport-Security").startswith("max-age=31536000")
    assert "Secure" in answer.getheader("Set-Cookie")


def test_plain_http_through_the_proxy_is_sent_to_https_on_the_public_host(https_site) -> None:
    proxy = Peer(https_site, PROXY, {"X-Forwarded-Proto": "http", "X-Forwarded-Host": SITE})
    answer, _ = proxy.request("GET", "/login/")
    assert (answer.status, answer.getheader("Location")) == (301, f"https://{SITE}/login/")


def test_a_guessing_browser_is_locked_out_and_another_one_behind_the_proxy_is_not(https_site) -> None:
    guesser, owner = through_proxy(https_site, "203.0.113.7"), through_proxy(https_site, "203.0.113.8")
    assert [guesser.sign_in("vera", "guess") for _ in range(LIMIT - 1)] == [200] * (LIMIT - 1)
    assert guesser.sign_in("vera", "guess") == 429
    assert guesser.sign_in("vera", PASSWORD) == 429
    assert owner.sign_in("vera", PASSWORD) == 302


def test_another_peer_claiming_https_is_not_believed(https_site) -> None:
    stranger = Peer(https_site, STRANGER, {"X-Forwarded-Proto": "https", "X-Forwarded-Host": SITE})
    answer, _ = stranger.request("GET", "/login/")
    # Its own Host, its own scheme: the forwarded headers were dropped.
    assert (answer.status, answer.getheader("Location")) == (301, f"https://127.0.0.1:{stranger.port}/login/")
    assert answer.getheader("Strict-Transport-Security") is None


def test_another_peer_cannot_pass_for_other_browsers_to_dodge_the_lockout(tmp_path) -> None:
    with served(tmp_path, "plain") as base:

        def stranger(n: int) -> Peer:
            return Peer(base, STRANGER, {"X-Forwarded-For": f"198.51.100.{n}"})

        assert [stranger(n).sign_in("vera", "guess") for n in range(LIMIT)] == [200] * (LIMIT - 1) + [429]
        assert stranger(99).sign_in("vera", PASSWORD) == 429
        assert through_proxy(base, "198.51.100.99").sign_in("vera", PASSWORD) == 302
