"""Export: a whole tape or an anchor-to-anchor segment as JSONL (the lines byte for byte) or as a
Markdown transcript, from the timeline's links and from the API."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.utils.html import escape

from tapeview.demodata.bub import write_bub_demo
from tapeview.tapes import discovery
from tapeview.tapes.models import Tape

from .operator_sources import serve, tape

pytestmark = pytest.mark.django_db


@pytest.fixture
def sources(settings, tmp_path: Path) -> dict[str, Path]:
    return serve(settings, tmp_path)


def lines_of(path: Path) -> list[bytes]:
    """The file's lines as Bub splits them (on b"\\n" only), each with its newline."""
    data = path.read_bytes()
    return [line + b"\n" for line in data.split(b"\n")[:-1]] + (
        [data.rsplit(b"\n", 1)[-1]] if not data.endswith(b"\n") else []
    )


def body(response) -> bytes:
    assert response.streaming
    return b"".join(response.streaming_content)


def test_the_jsonl_export_of_a_bub_tape_is_its_file_byte_for_byte(viewer_client, sources) -> None:
    t = tape("session_realistic", "bub")
    r = viewer_client.get(f"/tapes/{t.key}/export.jsonl")
    assert r.status_code == 200 and r["Content-Type"] == "application/x-ndjson; charset=utf-8"
    assert r["Content-Disposition"] == f'attachment; filename="session_realistic-{t.key}.jsonl"'
    assert body(r) == (sources["bub"] / "session_realistic.jsonl").read_bytes()


def test_an_unfinished_last_line_is_not_exported(viewer_client, sources) -> None:
    t = tape("truncated_last_line_CRASH", "bub")
    lines = lines_of(sources["bub"] / "truncated_last_line_CRASH.jsonl")
    assert not lines[-1].endswith(b"\n")
    assert body(viewer_client.get(f"/tapes/{t.key}/export.jsonl")) == b"".join(lines[:-1])


@pytest.mark.parametrize(("start", "stop"), [(32, 45), (45, 70), (1, 32), (70, None), (None, 32)])
def test_a_segment_is_the_lines_from_one_anchor_up_to_the_next(
    viewer_client, reader, sources, start, stop
) -> None:
    t = tape("session_realistic", "bub")
    lines = lines_of(sources["bub"] / "session_realistic.jsonl")
    wanted = b"".join(lines[(start or 1) - 1 : (stop - 1) if stop else None])
    params = {k: v for k, v in (("from", start), ("to", stop)) if v is not None}
    page = viewer_client.get(f"/tapes/{t.key}/export.jsonl", params)
    api = reader.get(f"/api/tapes/{t.key}/export", format="jsonl", **params)
    assert page.status_code == api.status_code == 200
    assert body(page) == body(api) == wanted
    assert json.loads(wanted.split(b"\n")[0])["kind"] == "anchor"
    name = (
        f"session_realistic-{t.key}" + (f"-from-{start}" if start else "") + (f"-to-{stop}" if stop else "")
    )
    assert page["Content-Disposition"] == api["Content-Disposition"] == f'attachment; filename="{name}.jsonl"'


def test_tapes_of_one_label_download_under_names_of_their_own(viewer_client, settings, tmp_path) -> None:
    """Bub names every CLI session "cli:local": each one's download names its tape's id."""
    root = tmp_path / "tapes"
    write_bub_demo(root, datetime(2026, 11, 24, 17, 0, tzinfo=UTC))
    settings.TAPEVIEW_SOURCES = f"demo=bub:{root}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    discovery.sync()
    local = Tape.objects.filter(label="cli:local")
    assert local.count() >= 3
    for fmt in ("jsonl", "md"):
        names = [viewer_client.get(f"/tapes/{t.key}/export.{fmt}")["Content-Disposition"] for t in local]
        assert names == [f'attachment; filename="cli-local-{t.key}.{fmt}"' for t in local]
        assert len(set(names)) == len(names)


def test_the_markdown_transcript_has_the_roles_the_calls_and_their_results(
    viewer_client, reader, sources
) -> None:
    t = tape("session_realistic", "bub")
    r = viewer_client.get(f"/tapes/{t.key}/export.md")
    assert r.status_code == 200 and r["Content-Type"] == "text/markdown; charset=utf-8"
    assert r["Content-Disposition"] == f'attachment; filename="session_realistic-{t.key}.md"'
    text = body(r).decode()
    assert text.startswith("# session_realistic\n\nbub · bub · session_realistic\n\n")
    assert re.search(r"^### user — 2026-11-22T01:37:38\.\d+\+00:00 · #\d+$", text, re.M)
    assert re.search(r"^### assistant — ", text, re.M)
    assert (
        "### tool call" in text
        and '**bash** (call_ls_01)\n\n```json\n{\n  "command": "ls -la"\n}\n```' in text
    )
    assert "**result**\n\n```\ntotal 20\ndrwxr-xr-x" in text
    # A failed call's output on lines of its own, not one line with literal "\n".
    assert "**failed**\n\n```\nkind: tool\nmessage: Tool 'bash' execution failed.\ndetails:\n" in text
    assert "code 128\n    output:\n    fatal: not a git repository" in text
    assert "## ⚓ auto_handoff/context_overflow · #70" in text
    assert body(reader.get(f"/api/tapes/{t.key}/export", format="md")).decode() == text


def test_a_markdown_segment_says_which_entries_it_holds(viewer_client, sources) -> None:
    t = tape("session_realistic", "bub")
    text = body(viewer_client.get(f"/tapes/{t.key}/export.md", {"from": 32, "to": 45})).decode()
    assert "session_realistic, entries #32 to #44\n" in text
    shown = [int(pos) for pos in re.findall(r" · #(\d+)$", text, re.M)]
    assert shown[0] == 32 and min(shown) >= 32 and max(shown) <= 44


def test_a_nanobot_session_exports_one_json_line_per_record(viewer_client, reader, sources) -> None:
    t = tape("discord:1187654321098765432", "nb")
    path = (
        sources["nanobot"]
        / "current/sessions/b8ca9e09c12a8b370fe81503daa78f45/ZGlzY29yZDoxMTg3NjU0MzIxMDk4NzY1NDMy.jsonl"
    )
    exported = body(viewer_client.get(f"/tapes/{t.key}/export.jsonl")).decode().splitlines()
    records = [json.loads(line) for line in path.read_text().split("\n") if line.strip()]
    assert [json.loads(line) for line in exported] == records
    assert body(reader.get(f"/api/tapes/{t.key}/export")).decode().splitlines() == exported
    md = body(viewer_client.get(f"/tapes/{t.key}/export.md")).decode()
    assert "### user — " in md and "**write_file** (toolu_6fbssy8p5fqnsbtylji484ep)" in md
    assert "Successfully wrote 273 character" in md


def test_a_yachiyo_session_exports_its_entries(viewer_client, sources) -> None:
    t = tape("记住：我最喜欢的颜色是蓝色，我每天早上七点起床。 · sess-zh-prefs-0001", "ya")
    r = viewer_client.get(f"/tapes/{t.key}/export.jsonl")
    lines = body(r).decode().splitlines()
    assert len(lines) == t.entries and all(json.loads(line) is not None for line in lines)
    assert r["Content-Disposition"].startswith("attachment; filename*=utf-8''%E8%AE%B0%E4%BD%8F")
    assert "/" not in r["Content-Disposition"] and "\n" not in r["Content-Disposition"]
    md = body(viewer_client.get(f"/tapes/{t.key}/export.md")).decode()
    assert "### user — " in md and "我最喜欢的颜色是蓝色" in md and "**memory_write**" in md


def test_the_timeline_links_to_its_exports_and_each_anchor_to_its_segment(viewer_client, sources) -> None:
    t = tape("session_realistic", "bub")
    html = viewer_client.get(f"/tapes/{t.key}/").content.decode()
    assert f'href="/tapes/{t.key}/export.jsonl" download>JSONL</a>' in html
    assert f'href="/tapes/{t.key}/export.md" download>Markdown</a>' in html
    assert f'href="/tapes/{t.key}/export.jsonl?from=32&amp;to=45" download' in html
    end = viewer_client.get(f"/tapes/{t.key}/", {"end": 1}).content.decode()
    assert f'href="/tapes/{t.key}/export.md?from=70" download' in end  # the last anchor: to the end
    exports = re.findall(r'href="([^"]*export[^"]*)"', html)
    assert exports and all(re.search(r"export\.(jsonl|md)", href) for href in exports)


@pytest.mark.parametrize(
    ("params", "status", "detail"),
    [
        ({"from": 2}, 404, "no anchor at entry 2 of this tape"),
        ({"to": 33}, 404, "no anchor at entry 33 of this tape"),
        ({"from": 45, "to": 32}, 400, "`to` must be an anchor after `from`"),
        ({"from": 45, "to": 45}, 400, "`to` must be an anchor after `from`"),
    ],
)
def test_a_segment_not_between_two_anchors_is_refused(
    viewer_client, reader, sources, params, status, detail
) -> None:
    t = tape("session_realistic", "bub")
    page = viewer_client.get(f"/tapes/{t.key}/export.md", params)
    api = reader.get(f"/api/tapes/{t.key}/export", **params)
    assert page.status_code == api.status_code == status
    assert api.json() == {"detail": detail}


@pytest.mark.parametrize(
    "params, detail",
    [
        ({"from": "x"}, "no anchor 'x' on this tape"),
        ({"to": "0"}, "no anchor '0' on this tape"),
        ({"from": str(2**40)}, f"no anchor '{2**40}' on this tape"),
    ],
)
def test_an_anchor_the_tape_has_not_is_not_found(viewer_client, reader, sources, params, detail) -> None:
    """`from` and `to` name an anchor by position or by name: one the tape has not is a 404 saying so."""
    t = tape("session_realistic", "bub")
    page = viewer_client.get(f"/tapes/{t.key}/export.jsonl", params)
    assert page.status_code == 404 and escape(detail) in page.content.decode()
    api = reader.get(f"/api/tapes/{t.key}/export", **params)
    assert api.status_code == 404 and api.json() == {"detail": detail}
    assert reader.get(f"/api/tapes/{t.key}/export", format="pdf").status_code == 422


def test_only_the_two_formats_are_pages(viewer_client, sources) -> None:
    t = tape("session_realistic", "bub")
    assert viewer_client.get(f"/tapes/{t.key}/export.pdf").status_code == 404
    assert viewer_client.get("/tapes/nosuchtape/export.md").status_code == 404


def test_a_tape_whose_file_is_gone_exports_nothing(viewer_client, sources) -> None:
    t = tape("session_realistic", "bub")
    (sources["bub"] / "session_realistic.jsonl").unlink()
    assert viewer_client.get(f"/tapes/{t.key}/export.jsonl").status_code == 404
