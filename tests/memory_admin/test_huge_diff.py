"""Two huge versions are not diffed without bound: the page and the API say how far they differ."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory_admin.diff import COMPARED_LINES, TooLarge, line_diff, too_large, unified
from memory_admin.models import MemoryStore

pytestmark = pytest.mark.django_db

LINES = 100_000


def history(tag: str) -> str:
    """A long agent log whose every line names its version (so two versions differ on every line)."""
    return "".join(f"- [{i:06d}] {tag}: asked about topic {i * 7 % 1013}\n" for i in range(LINES))


def entries(tag: str, n: int = 5_000) -> str:
    """A pretty-printed memory.json: most of its lines repeat, which difflib's matcher is slowest on."""
    doc = [{"id": i, "content": f"{tag} fact {i}", "keywords": ["work", "home"]} for i in range(n)]
    return json.dumps(doc, indent=2) + "\n"


def one_line(tag: str) -> str:
    """A memory.json written on one line, 4 MB long."""
    return json.dumps([{"id": i, "content": f"{tag} fact {i}"} for i in range(100_000)]) + "\n"


@pytest.fixture
def two_versions(reader, memory_sources):
    """A store holding `old` then `new`, each seen by Tapeview; returns the store's key."""

    def make(old: str, new: str) -> str:
        memory = MemoryStore.objects.get(kind="nanobot.file", title="USER.md")
        path = Path(memory.path)
        for text in (old, new):
            path.write_text(text)
            assert reader.get(f"/api/memory/{memory.key}").status_code == 200
        return memory.key

    return make


@pytest.mark.parametrize(
    "old, new, first, lines",
    [
        pytest.param(history("old"), history("new"), 1, LINES, id="100k-lines-all-changed"),
        # "[", "  {", '    "id": 0,' alike; then from the first "content" line to the last one
        pytest.param(entries("old"), entries("new"), 4, 8 * 5_000 - 7, id="memory-json-5000-entries"),
        pytest.param(one_line("old"), one_line("new"), 1, 1, id="one-line-of-4-mb"),
    ],
)
def test_the_diff_page_says_the_diff_is_too_large_with_its_counts(
    viewer_client, two_versions, old, new, first, lines
) -> None:
    key = two_versions(old, new)
    r = viewer_client.get(f"/memory/{key}/diff")
    assert r.status_code == 200
    page = r.content.decode()
    assert "the diff is too large to show here" in page
    assert f"differ from line {first:,} on, in {lines:,} lines against {lines:,}" in page
    assert f"({len(old.encode()):,} → {len(new.encode()):,} bytes)" in page
    assert f'href="/memory/{key}/"' in page and f"/memory/{key}/export.md" in page
    assert '<tr class="del">' not in page and len(r.content) < 100_000


@pytest.mark.parametrize("make, first, lines", [(history, 1, LINES), (entries, 4, 8 * 5_000 - 7)])
def test_the_diff_api_says_the_diff_is_too_large_instead_of_giving_it(
    reader, two_versions, make, first, lines
) -> None:
    old, new = make("old"), make("new")
    key = two_versions(old, new)
    r = reader.get(f"/api/memory/{key}/diff")
    assert r.status_code == 200
    body = r.json()
    assert body["too_large"] is True and body["diff"] == ""
    assert body["extent"] == {
        "first_line": first,
        "old_lines": lines,
        "new_lines": lines,
        "old_bytes": len(old.encode()),
        "new_bytes": len(new.encode()),
    }
    assert len(r.content) < 10_000


def test_one_edit_in_a_huge_file_is_still_shown(viewer_client, reader, two_versions) -> None:
    old = history("same")
    new = old.replace("- [050000] same:", "- [050000] edited:")
    key = two_versions(old, new)
    page = viewer_client.get(f"/memory/{key}/diff").content.decode()
    assert "too large" not in page
    assert page.count('<tr class="del">') == page.count('<tr class="add">') == 1
    assert '<td class="no">50001</td>' in page and "- [050000] e<mark>dited</mark>: asked" in page
    body = reader.get(f"/api/memory/{key}/diff").json()
    assert body["too_large"] is False and body["extent"] is None
    assert "@@ -49998,7 +49998,7 @@" in body["diff"] and "+- [050000] edited:" in body["diff"]


def test_a_small_diff_is_given_whole_by_the_api(reader, two_versions) -> None:
    key = two_versions("a\nb\n", "a\nc\n")
    body = reader.get(f"/api/memory/{key}/diff").json()
    assert body["too_large"] is False and body["extent"] is None
    assert body["diff"].endswith("@@ -1,2 +1,2 @@\n a\n-b\n+c\n")


def test_the_bound_counts_only_lines_between_the_common_head_and_tail() -> None:
    head, tail = "same\n" * 50_000, "end\n" * 50_000
    changed = "".join(f"old {i}\n" for i in range(COMPARED_LINES // 2))
    assert too_large(head + changed + tail, head + changed.replace("old", "new") + tail) is None
    over = changed + "old, one more\n"
    found = too_large(head + over + tail, head + over.replace("old", "new") + tail)
    assert found is not None and found.extent.first_line == 50_001
    assert (found.extent.old_lines, found.extent.new_lines) == (COMPARED_LINES // 2 + 1,) * 2


def test_line_diff_refuses_and_unified_says_why_past_the_bound() -> None:
    old, new = entries("old", 1_000), entries("new", 1_000)
    with pytest.raises(TooLarge):
        line_diff(old, new)
    text = unified(old, new, "a", "b")
    assert text.startswith("--- a\n+++ b\n# These versions differ from line 4 on") and len(text) < 1_000


def test_a_long_changed_line_marks_the_changed_part_only() -> None:
    old = "x" * 200_000 + "old" + "y" * 200_000
    (before, after) = line_diff(old, old.replace("old", "new"))
    assert [s.text for s in after.spans if s.changed] == ["new"] and after.text.startswith("x" * 200_000)
