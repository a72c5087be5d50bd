"""What every answer carries: a Content-Security-Policy without inline scripts; HSTS over HTTPS."""

from __future__ import annotations

import logging
import re

import pytest


def test_pages_forbid_inline_scripts_and_carry_none(viewer_client, served) -> None:
    page = viewer_client.get("/")
    policy = page["Content-Security-Policy"]
    assert (
        "script-src 'self'" in policy and "unsafe-inline" not in policy.split("script-src")[1].split(";")[0]
    )
    assert "frame-ancestors 'none'" in policy
    scripts = re.findall(r"<script([^>]*)>", page.content.decode())
    assert scripts and all("src=" in attrs for attrs in scripts)


def test_an_api_body_over_the_limit_gets_the_json_error(writer, served, settings) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    from tapeview.tapes.models import Tape

    tape = Tape.objects.filter(kind="bub", role="tape").first()
    answer = writer.post(f"/api/tapes/{tape.key}/handoff", {"name": "x", "summary": "y" * 5000})
    assert answer.status_code == 413 and answer["Content-Type"] == "application/json"
    assert "too large" in answer.json()["detail"]


@pytest.mark.django_db
def test_a_refused_page_is_one_line_in_the_log(viewer_client, caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="django.request"):
        assert viewer_client.get("/users/").status_code == 403
    [record] = [r for r in caplog.records if r.name == "django.request"]
    assert record.exc_info is None and "Forbidden" in record.getMessage()


def test_the_favicon_is_found_without_signing_in(client) -> None:
    moved = client.get("/favicon.ico")
    assert moved.status_code == 301 and moved["Location"].endswith("favicon.svg")
    icon = client.get(moved["Location"])
    assert icon.status_code == 200 and b"<svg" in b"".join(icon.streaming_content)
