"""`tapeview serve [--host H] [--port P] [--no-index] [SOURCE ...]`: migrate, serve the dashboard at
once, and keep the index up to date in the background (`tapeview index --watch` in a thread), or with
--no-index leave it to another process (a web tier over a fleet's central database)."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterable
from pathlib import Path

import waitress
from django.conf import settings
from django.core.management.base import BaseCommand
from django.core.wsgi import get_wsgi_application

from tapeview import home
from tapeview.accounts import signin
from tapeview.sources import found_below
from tapeview.tapes import discovery, watcher
from tapeview.tapes.management.commands.index import add_watch_options, sources_from
from tapeview.tapes.terminal import USAGE

from ._schema import migrate


class Command(BaseCommand):
    help = "Serve the dashboard over the given sources (default: TAPEVIEW_SOURCES, else the demo data)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("sources", nargs="*", help="[LABEL=]KIND:PATH, e.g. bub:~/.bub/tapes")
        parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: localhost only)")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument(
            "--no-index",
            action="store_true",
            help="serve the index only: no indexer in the background, and pages neither scan the "
            "sources nor index a tape (another process runs `tapeview index --watch`)",
        )
        parser.add_argument(
            "--discover",
            action="append",
            default=[],
            metavar="PATH",
            help="serve the agent files at PATH or in the folders below it too (prints KIND:PATH of each)",
        )
        add_watch_options(parser)

    def handle(
        self,
        *args,
        sources: list[str],
        host: str,
        port: int,
        no_index: bool,
        polling: bool,
        full_every: float,
        discover: list[str],
        **options,
    ) -> None:
        proxy = proxy_options()
        # Bound before anything else: a port in use is said in one line, not after the setup's output.
        server = self.bind(host, port, proxy)
        sources = [*sources, *self.discovered(discover)]
        specs = sources_from(sources)
        if sources:
            # Pages read the sources from settings; the same value reaches every worker thread.
            settings.TAPEVIEW_SOURCES = os.environ["TAPEVIEW_SOURCES"] = ",".join(map(str, specs))
        migrate()
        for spec in specs:
            self.stdout.write(f"source {spec.label}: {spec.kind} at {spec.path}")
        stop = None
        if no_index:
            # Every worker thread of this process reads the same settings: pages only read the index.
            settings.TAPEVIEW_WEB_INDEXES = False
            self.stdout.write("not indexing: `tapeview index --watch` keeps the index up to date")
        else:
            # Beating before the first page: no page scans the sources while the watcher starts.
            discovery.beat(started=True)
            _, stop = watcher.start_in_background(specs, full_every=full_every, polling=polling)
            self.stdout.write("indexing in the background (progress on the Sources page)")
        base = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{port}"
        home.remember_base_url(settings.HOME, base)
        admin = signin.ensure_first_admin()
        if admin is not None:
            self.stdout.write(
                f"\nNo users yet: created the admin {admin.get_username()!r}. Open this one-time link\n\n"
                f"    {base}/signin/{signin.issue(admin)}/\n\n"
                "and press Sign in, then set a password. (`tapeview signinlink NAME` prints a new link.)\n"
            )
        if proxy:
            self.stdout.write(
                f"trusting X-Forwarded-For, -Proto, -Host and -Port from {proxy['trusted_proxy']}"
            )
        self.stdout.write(f"Serving on {base}/ (Ctrl-C to stop)")
        self.stdout.flush()
        try:
            server.run()
        finally:
            if stop is not None:
                stop.set()

    def discovered(self, paths: list[str]) -> list[str]:
        """`KIND:PATH` of what each `--discover` path holds, each printed; exit status 2 for none."""
        found = []
        for given in paths:
            path = Path(given).expanduser().resolve()
            below = found_below(path) if path.is_dir() else []
            if not below:
                self.stderr.write(f"tapeview: no agent files found at {path} or in the folders below it")
                raise SystemExit(USAGE)
            for spec in below:
                self.stdout.write(f"found {spec}")
            found += below
        return found

    def bind(self, host: str, port: int, proxy: dict):
        """waitress's server, its socket bound; exit status 2 with one line if the port is taken."""
        try:
            return waitress.create_server(
                without_head_bodies(get_wsgi_application()),
                host=host,
                port=port,
                threads=8,
                ident="tapeview",
                # Any other peer's X-Forwarded-* headers are dropped before Django sees them.
                clear_untrusted_proxy_headers=True,
                **proxy,
            )
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                problem = f"port {port} is in use"
            else:
                problem = f"cannot listen on {host}:{port}: {exc.strerror or exc}"
            self.stderr.write(f"tapeview: {problem}")
            raise SystemExit(USAGE) from None


def without_head_bodies(app: Callable) -> Callable:
    """The WSGI app, answering HEAD with GET's headers and no body: Django leaves that to the server,
    and waitress sends the body, which a client keeping the connection reads as its next answer."""

    def answer(environ: dict, start_response: Callable) -> Iterable[bytes]:
        body = app(environ, start_response)
        if environ.get("REQUEST_METHOD") != "HEAD":
            return body
        if hasattr(body, "close"):
            body.close()  # Django's end of the request: request_finished, connections closed
        return []

    return answer


def proxy_options() -> dict:
    """waitress's settings for the proxy of TAPEVIEW_TRUSTED_PROXY: it sets REMOTE_ADDR, the URL
    scheme and the host from that proxy's headers; none without one."""
    if not settings.TAPEVIEW_TRUSTED_PROXY:
        return {}
    return {
        "trusted_proxy": settings.TAPEVIEW_TRUSTED_PROXY,
        "trusted_proxy_count": settings.TAPEVIEW_TRUSTED_PROXY_COUNT,
        "trusted_proxy_headers": {
            "x-forwarded-for",
            "x-forwarded-proto",
            "x-forwarded-host",
            "x-forwarded-port",
        },
    }
