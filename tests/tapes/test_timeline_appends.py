"""What a timeline page keeps across appends (its entries' cards, the turns before it, the strip's
marks) is the page drawn afresh: after an append, after a file rewritten in place, after a reset
to a shorter file that starts the same; and a review shows at once, never kept with the cards."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from django.core.cache import cache

from tapeview.tapes import index
from tapeview.tapes.models import Tape

from .test_timeline_speed_caches import HTMX, NAME, card, index_folder, kinds, session, without_tokens

pytestmark = pytest.mark.django_db


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "bub"
    root.mkdir()
    return root


def drawn(client, url: str, **headers) -> str:
    response = client.get(url, **headers)
    assert response.status_code == 200
    return without_tokens(response.content.decode())


def fresh(client, url: str, **headers) -> str:
    """The page drawn with nothing kept."""
    cache.clear()
    return drawn(client, url, **headers)


def append(folder: Path, tape: Tape, lines: list[str]) -> None:
    with (folder / NAME).open("a", encoding="utf-8") as f:
        f.write("".join(lines))
    index.refresh(tape)
    tape.refresh_from_db()


def export_link(html: str, pos: int) -> str:
    found = re.search(rf'id="e{pos}".*?<a href="([^"]*\.jsonl[^"]*)" download>JSONL', html, re.S)
    assert found, f"no export link on the anchor {pos}"
    return found.group(1)


def strip(html: str) -> str:
    found = re.search(r'<figure class="pic-figure" id="tape-strip">.*?</figure>', html, re.S)
    assert found, "no strip on the page"
    return found.group(0)


@pytest.mark.parametrize("headers", [{}, HTMX], ids=["page", "fragment"])
def test_a_page_drawn_before_an_append_is_drawn_after_it_as_afresh(viewer_client, folder, headers) -> None:
    lines = session(600)
    found = kinds(lines)
    # An anchor, and a tool call a few entries after it that is the tape's last line for now: on
    # one page, the call without its results, the anchor's segment open to the end of the tape.
    anchor = next(i for i, k in enumerate(found) if k == "anchor" and i > 200)
    call = next(i for i in range(anchor, len(found)) if found[i] == "tool_call")
    later = next(i for i in range(call, len(found)) if found[i] == "anchor")
    (folder / NAME).write_text("".join(lines[: call + 1]), encoding="utf-8")
    tape = index_folder(folder)
    url = f"/tapes/{tape.key}/?at={anchor + 1}"
    middle = f"/tapes/{tape.key}/?at={anchor // 2}"
    before, middle_before = drawn(viewer_client, url, **headers), drawn(viewer_client, middle, **headers)
    assert "no result recorded" in card(before, call + 1)
    assert export_link(before, anchor + 1).endswith(f"?from={anchor + 1}")

    append(folder, tape, lines[call + 1 : later + 10])  # the results, then the next anchor
    kept = drawn(viewer_client, url, **headers)
    drawn(viewer_client, middle, **headers)
    append(folder, tape, lines[later + 10 :])  # again, as a live tape grows
    kept_again, middle_kept = drawn(viewer_client, url, **headers), drawn(viewer_client, middle, **headers)
    assert "no result recorded" not in card(kept, call + 1)
    assert f'results: <a href="#e{call + 2}">' in card(kept, call + 1)
    assert export_link(kept, anchor + 1).endswith(f"?from={anchor + 1}&amp;to={later + 1}")
    assert kept_again == fresh(viewer_client, url, **headers)
    assert middle_kept == fresh(viewer_client, middle, **headers)
    # The middle page's entries are as they were before the appends.
    assert card(middle_kept, anchor // 2) == card(middle_before, anchor // 2)


def rewrite_a_word(line: str, within: str) -> tuple[str, str]:
    """The line with a word of the text after `within` (a JSON key) made as many Qs; and those Qs."""
    word = re.search(rf'"{within}": \[?"[^"]*?\b([a-z]{{5,}})\b', line)
    assert word, line[:200]
    start, end = word.span(1)
    return line[:start] + "Q" * (end - start) + line[end:], "Q" * (end - start)


def test_a_tape_rewritten_in_place_at_the_same_size_shows_its_new_bytes(viewer_client, folder) -> None:
    lines = session(300)
    found = kinds(lines)
    pos = next(i for i, k in enumerate(found) if k == "message" and i > 150) + 1
    result = next(i for i in range(pos, len(found)) if found[i] == "tool_result") + 1
    assert found[result - 2] == "tool_call" and result < pos + 40  # the call shows it, on the page
    path = folder / NAME
    path.write_text("".join(lines), encoding="utf-8")
    tape = index_folder(folder)
    url = f"/tapes/{tape.key}/?at={pos}"
    drawn(viewer_client, url)
    old = drawn(viewer_client, url)
    lines[pos - 1], said = rewrite_a_word(lines[pos - 1], "content")
    lines[result - 1], answered = rewrite_a_word(lines[result - 1], "results")
    inode = path.stat().st_ino
    path.write_text("".join(lines), encoding="utf-8")
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert (path.stat().st_ino, path.stat().st_size) == (inode, tape.size)
    index.refresh(tape)
    tape.refresh_from_db()

    kept = drawn(viewer_client, url)
    assert said in card(kept, pos) and said not in card(old, pos)
    assert answered in card(kept, result - 1) and answered not in card(old, result - 1)
    assert kept == fresh(viewer_client, url)


def test_a_tape_reset_to_another_session_that_starts_alike_shows_the_new_one(viewer_client, folder) -> None:
    first, second = session(400, "first"), session(400, "second")
    assert first[0] == second[0]  # the same bootstrap line: the reset is told by the shrink alone
    (folder / NAME).write_text("".join(first[:300]), encoding="utf-8")
    tape = index_folder(folder)
    url = f"/tapes/{tape.key}/?at=150"
    drawn(viewer_client, url)
    append(folder, tape, first[300:350])
    drawn(viewer_client, url)  # what an append keeps is kept from here on
    append(folder, tape, first[350:])
    old = drawn(viewer_client, url)

    (folder / NAME).write_text("".join(second[:100]), encoding="utf-8")  # shorter: a reset
    index.refresh(tape)
    append(folder, tape, second[100:])
    tape.refresh_from_db()
    assert tape.next_pos == 401
    kept = drawn(viewer_client, url)
    assert card(kept, 152) != card(old, 152)
    new = fresh(viewer_client, url)
    assert strip(kept) == strip(new)
    assert kept == new


def test_a_review_added_to_an_entry_shows_at_once(operator_client, folder) -> None:
    (folder / NAME).write_text("".join(session(300)), encoding="utf-8")
    tape = index_folder(folder)
    url = f"/tapes/{tape.key}/?at=150"
    drawn(operator_client, url)
    assert "looked at twice" not in drawn(operator_client, url)
    answer = operator_client.post(
        f"/tapes/{tape.key}/entries/152/reviews/new",
        {"score": "4", "verdict": "pass", "labels": "kept", "comment": "looked at twice", "back": "timeline"},
    )
    assert answer.status_code == 302
    for headers in ({}, HTMX):
        shown = drawn(operator_client, url, **headers)
        reviews = re.search(r'<div class="reviews" id="r152">.*?</div>', shown, re.S)
        assert reviews and "★4 pass kept" in reviews.group(0) and "looked at twice" in reviews.group(0)
