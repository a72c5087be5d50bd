"""The timeline numbers a nanobot session's turns as the user's own: the summary checkpoint nanobot
inserts where it compacted the context is a user row nanobot wrote, drawn under its anchor's bar
and in no turn (formats/nanobot.md §2.3: not a chat turn)."""

from __future__ import annotations

import re

import pytest

from tapeview.sources import Entry
from tapeview.sources.model import CHECKPOINT
from tapeview.sources.nanobot import SUMMARY_ANCHOR
from tapeview.tapes.blocks import Item, arrange

from .test_family_anchors import records, summary_tape
from .test_family_anchors_pages import demo  # noqa: F401 (a fixture)
from .test_timeline_reading import within

pytestmark = pytest.mark.django_db


def turns(html: str) -> dict[str, list[int]]:
    """Each turn box a timeline page draws, by the label a screen reader reads, with its entries."""
    labels = re.findall(r'<div class="turn[^"]*" role="group" aria-label="([^"]+)"', html)
    boxes = within(
        html, lambda tag, a: a.get("role") == "group" and (a.get("aria-label") or "").startswith("Turn ")
    )
    assert len(labels) == len(boxes)
    return dict(zip(labels, boxes, strict=True))


def users(tape_rows: list[dict], first: int, last: int) -> list[int]:
    """The positions of the messages the user wrote, from `first` through `last`."""
    return [
        pos
        for pos, r in enumerate(tape_rows, 1)
        if first <= pos <= last and r.get("role") == "user" and not r.get("_hidden_history")
    ]


def test_the_checkpoint_is_no_turn_and_the_turns_after_it_count_on(viewer_client, demo) -> None:  # noqa: F811
    tape, marker = summary_tape()
    rows = records(tape)
    starts = users(rows, 1, len(rows))
    html = viewer_client.get(f"/tapes/{tape.key}/").content.decode()
    drawn = turns(html)
    assert list(drawn) == [f"Turn {n}" for n in range(1, len(starts) + 1)]
    assert [box[0] for box in drawn.values()] == starts
    assert all(marker not in box for box in drawn.values())
    assert f'<p class="turn-no">turn {len(starts)}</p>' in html
    assert f'<p class="turn-no">turn {len(starts) + 1}</p>' not in html
    assert re.search(rf'<article class="entry k-message n-user[^"]*" id="e{marker}"', html), "still shown"


@pytest.mark.parametrize("after", [0, 1], ids=["page-at-the-checkpoint", "page-after-it"])
def test_a_page_that_starts_at_or_after_the_checkpoint_numbers_its_turns_alike(
    viewer_client,
    demo,  # noqa: F811
    after: int,
) -> None:
    tape, marker = summary_tape()
    rows = records(tape)
    html = viewer_client.get(f"/tapes/{tape.key}/", {"after": marker - 1 + after}).content.decode()
    first = users(rows, marker, len(rows))[0]
    number = len(users(rows, 1, first))
    assert turns(html) == {f"Turn {number}": list(range(first, len(rows) + 1))}


def entry(pos: int, name: str, anchor: str = "", aside: str = "") -> Entry:
    return Entry(
        pos=pos, offset=0, length=1, id=pos, kind="message", name=name, payload={}, anchor=anchor, aside=aside
    )


def test_a_checkpoint_inside_a_turn_divides_it_as_an_anchor_does() -> None:
    """Compaction under context pressure runs during a turn: the turn goes on after the checkpoint."""
    items = [
        Item(entry(1, "user")),
        Item(entry(2, "tool")),
        Item(entry(3, "user", SUMMARY_ANCHOR, CHECKPOINT)),
        Item(entry(4, "tool")),
        Item(entry(5, "assistant")),
        Item(entry(6, "user")),
    ]
    drawn = [(b.kind, b.number, b.continued, b.positions) for b in arrange(items, 0, False)]
    assert drawn == [
        ("turn", 1, False, [1, 2]),
        ("item", 0, False, [3]),
        ("turn", 1, True, [4, 5]),
        ("turn", 2, False, [6]),
    ]
