"""A tape's pictures never draw a negative size, whatever its dates (9999, 1970, a word, a number)
or the usage its index holds (negative, as an index built before usage had to be a sane count)."""

from __future__ import annotations

import re

import pytest

from tapeview.tapes.models import Anchor

from .test_budget import line, write_tape

pytestmark = pytest.mark.django_db

NEGATIVE = re.compile(r'<rect [^>]*(?:width|height)="-')


def odd_dates() -> list[dict]:
    out = [line(1, "anchor", {"name": "session/start", "state": {}})]
    for n, date in ((2, "9999-12-31T23:59:59+00:00"), (3, "1970-01-01"), (4, "yesterday"), (5, -5)):
        out.append({**line(n, "message", {"role": "user", "content": f"hi {n}"}), "date": date})
    usage = {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105}
    out.append(line(6, "event", {"name": "run", "data": {"status": "ok", "usage": usage}}))
    out.append(line(7, "anchor", {"name": "phase/two", "state": {}}))
    out.append(line(8, "event", {"name": "run", "data": {"status": "ok", "usage": usage}}))
    return out


def test_odd_dates_draw_no_negative_size(viewer_client, served) -> None:
    k = write_tape(served["samples"], "odddates", odd_dates())
    for url, picture in (
        ("/", "pic-sparkline"),
        (f"/tapes/{k}/", "pic-phases"),
        (f"/tapes/{k}/", "pic-strip"),
    ):
        page = viewer_client.get(url).content.decode()
        assert picture in page, url
        assert not NEGATIVE.search(page), url


def test_negative_phase_tokens_in_the_index_draw_no_negative_bar(viewer_client, served) -> None:
    k = write_tape(served["samples"], "odddates", odd_dates())
    Anchor.objects.filter(tape__key=k, pos=1).update(
        prompt_tokens=-100, completion_tokens=-5, cached_tokens=-3
    )
    page = viewer_client.get(f"/tapes/{k}/").content.decode()
    assert "pic-phases" in page
    assert not NEGATIVE.search(page), NEGATIVE.search(page)
