"""Export: a whole tape or an anchor-to-anchor segment as JSONL (the lines byte for byte) or as a
Markdown transcript, from the timeline's links and from the API."""

from __future__ import annotations

import html
import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.utils.html import escape

from tapeview.demodata.bub import write_bub_demo
from tapeview.tapes import discovery, export
from tapeview.tapes.models import Anchor, Tape

from .operator_sources import NANOBOT_SESSIONS, serve, tape

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


def nanobot_session(sources: dict[str, Path]) -> Path:
    return sources["nanobot"] / NANOBOT_SESSIONS / "ZGlzY29yZDoxMTg3NjU0MzIxMDk4NzY1NDMy.jsonl"


def test_a_nanobot_session_exports_its_file_byte_for_byte(viewer_client, reader, sources) -> None:
    t = tape("discord:1187654321098765432", "nb")
    path = nanobot_session(sources)
    # As nanobot writes it (json.dumps: ", " and ": ", non-ASCII escaped): re-serialising would differ.
    assert b'", "' in path.read_bytes()
    r = viewer_client.get(f"/tapes/{t.key}/export.jsonl")
    assert r["Content-Type"] == "application/x-ndjson; charset=utf-8"
    assert body(r) == path.read_bytes()
    assert body(reader.get(f"/api/tapes/{t.key}/export")) == path.read_bytes()
    md = body(viewer_client.get(f"/tapes/{t.key}/export.md")).decode()
    assert "### user — " in md and "**write_file** (toolu_6fbssy8p5fqnsbtylji484ep)" in md
    assert "Successfully wrote 273 character" in md


def test_every_line_of_a_nanobot_session_is_exported_as_written(viewer_client, sources) -> None:
    """Lines nanobot's reader skips (a blank line, a cut last line) are the file's too."""
    t = tape("discord:1187654321098765432", "nb")
    path = nanobot_session(sources)
    path.chmod(0o644)
    data = path.read_bytes()
    lines = data.split(b"\n")
    damaged = b"\n".join([*lines[:3], b"", b"{not json", *lines[3:]]) + b'{"role": "user", "content": "cut'
    path.write_bytes(damaged)
    assert body(viewer_client.get(f"/tapes/{t.key}/export.jsonl")) == damaged


def test_a_nanobot_segment_is_its_lines_from_the_anchor_on(viewer_client, sources) -> None:
    t = tape("discord:1187654321098765432", "nb")
    anchor = Anchor.objects.filter(tape=t).order_by("pos").first()
    assert anchor is not None
    lines = lines_of(nanobot_session(sources))
    exported = body(viewer_client.get(f"/tapes/{t.key}/export.jsonl", {"from": anchor.pos}))
    assert exported == b"".join(lines[anchor.pos - 1 :])


def test_a_nanobot_session_rewritten_since_it_was_indexed_exports_the_new_file(sources) -> None:
    """nanobot rewrites a session whole (temp file + rename): the segment's offsets are those of the
    version exported, read again once the index has caught up."""
    t = tape("discord:1187654321098765432", "nb")
    anchor = Anchor.objects.filter(tape=t).order_by("pos").first()
    path = nanobot_session(sources)
    lines = lines_of(path)
    grown = lines[0][:-2] + b', "note": "a longer metadata line now"}\n'
    temp = path.with_name(".rewrite.tmp")
    temp.write_bytes(b"".join([grown, *lines[1:]]))
    temp.replace(path)
    found = export.export(t, "jsonl", anchor.pos)  # the row as it was before the rewrite
    assert b"".join(found.chunks) == b"".join(lines[anchor.pos - 1 :])


def test_a_nanobot_segment_of_a_file_caught_mid_rewrite_is_a_503_not_wrong_bytes(
    viewer_client, reader, sources
) -> None:
    t = tape("discord:1187654321098765432", "nb")
    anchor = Anchor.objects.filter(tape=t).order_by("pos").first()
    path = nanobot_session(sources)
    path.chmod(0o644)
    path.write_bytes(b'{"_type": "metadata", "key": "x"}\n' + path.read_bytes()[:-30])  # a torn write
    for response in (
        viewer_client.get(f"/tapes/{t.key}/export.jsonl", {"from": anchor.pos}),
        reader.get(f"/api/tapes/{t.key}/export", format="jsonl", **{"from": anchor.pos}),
    ):
        assert response.status_code == 503 and not response.streaming
        assert response["Retry-After"] == "2"
        assert "the agent is rewriting this session's file" in html.unescape(response.content.decode())


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
