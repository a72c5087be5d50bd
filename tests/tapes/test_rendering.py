"""What a message and a tool's output look like: Markdown rendered safely with a raw toggle, and
tool output on its real lines, escaped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tapeview.tapes import discovery
from tapeview.tapes.models import Tape

from .operator_sources import serve, tape

pytestmark = pytest.mark.django_db

MESSAGE = (
    "## Plan\n\nFirst **bold**, then `code`.\nA second line.\n\n"
    "| a | b |\n| --- | --- |\n| 1 | 2 |\n\n"
    "<script>window.__xss=1</script> ![pixel](http://tracker.example/p.png) [bad](javascript:alert(1))"
)
FAILURE = {
    "kind": "tool",
    "message": "Tool 'bash' <b>failed</b>.",
    "details": {"error": "RuntimeError('exit 2\\noutput:\\n<i>no such file</i>')"},
}


@pytest.fixture
def built(settings, tmp_path: Path) -> Tape:
    lines = [
        {"kind": "message", "payload": {"role": "assistant", "content": MESSAGE}},
        {
            "kind": "tool_call",
            "payload": {"calls": [{"id": "c1", "function": {"name": "bash", "arguments": "{}"}}]},
        },
        {"kind": "tool_result", "payload": {"results": [FAILURE]}},
        {"kind": "tool_result", "payload": {"results": ["line one\nline <two>"]}},
    ]
    root = tmp_path / "tapes"
    root.mkdir()
    text = "".join(
        json.dumps({"id": i, **line, "date": "2026-11-22T01:00:00+00:00"}) + "\n"
        for i, line in enumerate(lines, 1)
    )
    (root / "rendering.jsonl").write_text(text)
    settings.TAPEVIEW_SOURCES = f"t=bub:{root}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    discovery.sync()
    return Tape.objects.get(name="rendering")


def test_a_message_is_rendered_as_markdown(viewer_client, built) -> None:
    html = viewer_client.get(f"/tapes/{built.key}/").content.decode()
    bubble = html.split('<div class="bubble role-assistant">')[1].split("</details>")[0]
    assert "<h2>Plan</h2>" in bubble and "<strong>bold</strong>" in bubble and "<code>code</code>" in bubble
    assert "then <code>code</code>.<br />\nA second line." in bubble  # a chat message's line breaks are kept
    assert "<table>" in bubble and "<td>1</td>" in bubble


def test_markdown_in_a_message_runs_and_fetches_nothing(viewer_client, built) -> None:
    html = viewer_client.get(f"/tapes/{built.key}/").content.decode()
    rendered = html.split('<div class="md">')[1].split("</div>")[0]
    assert "&lt;script&gt;window.__xss=1&lt;/script&gt;" in rendered and "<script" not in rendered
    assert "<img" not in rendered and '<a href="http://tracker.example/p.png">pixel</a>' in rendered
    assert "javascript:" not in rendered.replace("[bad](javascript:alert(1))", "")


def test_the_raw_toggle_shows_the_message_as_written(viewer_client, built) -> None:
    html = viewer_client.get(f"/tapes/{built.key}/").content.decode()
    raw = html.split('<details class="raw-text"><summary>raw</summary><pre class="text">')[1].split("</pre>")[
        0
    ]
    assert raw.startswith("## Plan\n\nFirst **bold**, then `code`.\nA second line.")
    assert "&lt;script&gt;" in raw and "| --- | --- |" in raw


def test_a_failed_tools_output_shows_on_its_own_lines_escaped(viewer_client, built) -> None:
    html = viewer_client.get(f"/tapes/{built.key}/").content.decode()
    assert (
        "<pre>kind: tool\nmessage: Tool &#x27;bash&#x27; &lt;b&gt;failed&lt;/b&gt;.\ndetails:\n"
        "  error: RuntimeError(&#x27;exit 2\n    output:\n    &lt;i&gt;no such file&lt;/i&gt;&#x27;)</pre>"
    ) in html
    assert "\\n" not in html.split('<li class="call error">')[1].split("</li>")[0]


def test_a_tools_text_output_keeps_its_newlines(viewer_client, built) -> None:
    html = viewer_client.get(f"/tapes/{built.key}/", {"at": 4}).content.decode()
    assert "<pre>line one\nline &lt;two&gt;</pre>" in html


def test_the_real_bub_failure_reads_on_lines(viewer_client, settings, tmp_path) -> None:
    serve(settings, tmp_path)
    t = tape("session_realistic", "bub")
    html = viewer_client.get(f"/tapes/{t.key}/").content.decode()
    call = html.split('<li class="call error">')[1].split("</li>")[0]
    assert "code 128\n    output:\n    fatal: not a git repository" in call


def test_a_markdown_answer_of_yachiyo_renders(viewer_client, settings, tmp_path) -> None:
    serve(settings, tmp_path)
    t = Tape.objects.get(source="ya", label__endswith="sess-markdown-demo")
    html = viewer_client.get(f"/tapes/{t.key}/").content.decode()
    assert "<h2>How memory search works</h2>" in html and "<table>" in html
    assert '<pre><code class="language-js">' in html
