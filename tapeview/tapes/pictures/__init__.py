"""Small pictures of a tape as inline SVG: its activity, where its marks fall, its phases' tokens.

`tallies` gathers the numbers with bounded aggregate queries; `drawing` turns them into markup.
"""

from .drawing import cache_hit_rate, phase_bars, span_words, sparkline, strip
from .snapshots import snapshot
from .tallies import (
    MARKS,
    PHASE_BARS,
    SPARK_BUCKETS,
    STRIP_BUCKETS,
    Activity,
    Mark,
    Marks,
    activity,
    cached,
    generation,
    generation_of,
    is_snapshot,
    marks,
    prefix_cached,
    prefix_key,
    state_key,
)

__all__ = [
    "MARKS",
    "PHASE_BARS",
    "SPARK_BUCKETS",
    "STRIP_BUCKETS",
    "Activity",
    "Mark",
    "Marks",
    "activity",
    "cached",
    "cache_hit_rate",
    "generation",
    "generation_of",
    "is_snapshot",
    "marks",
    "phase_bars",
    "prefix_cached",
    "prefix_key",
    "snapshot",
    "span_words",
    "sparkline",
    "state_key",
    "strip",
]
