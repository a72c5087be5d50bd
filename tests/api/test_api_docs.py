"""The API docs page leads back to the dashboard, and its Swagger UI still runs under the strict CSP."""

from __future__ import annotations

import os
import re

import pytest
from playwright.sync_api import Page, expect

from tests.browser import ARTIFACTS, sign_in

pytestmark = pytest.mark.django_db
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def test_the_docs_page_links_back_to_the_dashboard_with_no_inline_script(viewer_client) -> None:
    r = viewer_client.get("/api/docs")
    page = r.content.decode()
    assert r.status_code == 200
    assert re.search(r'<a [^>]*href="/"[^>]*>← Tapeview</a>', page)
    assert "script-src 'self'" in r["Content-Security-Policy"]
    # Every script is a file of this site, or the JSON settings the Swagger script reads (never run).
    for tag in re.findall(r"<script[^>]*>", page):
        assert 'src="/static/' in tag or 'type="application/json"' in tag, tag
    assert " style=" not in page


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_swagger_renders_and_its_link_leads_back_to_the_sessions(
    page: Page, live_server, settings, user_factory
) -> None:
    settings.ALLOWED_HOSTS = ["localhost", "127.0.0.1"]
    user_factory("vera", "viewer")
    refused: list[str] = []
    page.on("console", lambda m: refused.append(m.text) if "Content Security Policy" in m.text else None)
    sign_in(page, live_server.url, "vera", "/api/docs")
    expect(page.locator("#swagger-ui .opblock").first).to_be_visible()  # Swagger's own script ran
    assert refused == []
    page.screenshot(path=str(ARTIFACTS / "api-docs-back-link.png"))
    page.get_by_role("link", name="← Tapeview").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("Sessions")


def test_every_page_of_a_signed_in_viewer_links_to_the_api_docs(viewer_client) -> None:
    for url in ("/", "/memory/", "/search/"):
        page = viewer_client.get(url).content.decode()
        assert re.search(r'<a href="/api/docs"[^>]*>API</a>', page), url
