"""A phase's duration as the phase table shows it: days where it ran for days, not 816 hours."""

from __future__ import annotations

import pytest

from tapeview.tapes.templatetags.analysis import seconds


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (None, "–"),
        (0.4, "0.4 s"),
        (42, "42 s"),
        (185, "3 min 5 s"),
        (7800, "2 h 10 min"),
        (86399, "23 h 59 min"),
        (86400, "1 d 0 h"),
        (816 * 3600 + 41 * 60, "34 d 0 h"),
    ],
)
def test_a_duration_is_worded_in_its_largest_units(value, shown) -> None:
    assert seconds(value) == shown
