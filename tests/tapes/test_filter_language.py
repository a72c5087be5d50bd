"""The filter language on real tapes of every family: the API's `?filter=` lists exactly what the
same filter written in Python keeps, on the page too; a bad expression is a 400 (a message on the
page), never a 500."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tapeview.reviews import ledger
from tapeview.tapes import discovery
from tapeview.tapes.models import Tape

from .operator_sources import FIXTURES, serve

pytestmark = pytest.mark.django_db

SPEND_SESSION = "bot-pkey51aee87e/memory/sessions/01a200e4-e18d-7ffd-b1d0-f7592c930f76"


def day(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@pytest.fixture
def fleet(settings, tmp_path: Path) -> dict[str, Path]:
    """Every family's sample tapes, one araliya session with its reported cost, two reviewed tapes."""
    roots = serve(settings, tmp_path)
    shutil.copy(FIXTURES / "araliya_spend" / "spend.json", roots["araliya"] / SPEND_SESSION)
    discovery.sync()
    ledger.add(Tape.objects.get(source="bub", label="session_realistic"), 1, "olga", labels=["needs-review"])
    ledger.add(Tape.objects.get(source="nb", label="cli:direct"), 1, "olga", labels=["slow", "wrong-tool"])
    return roots


def listed(reader, expr: str) -> set[str]:
    """Every tape the API lists for the filter, walking its pages."""
    keys, cursor = set(), None
    while True:
        answer = reader.get("/api/tapes", filter=expr, limit=7, **({"cursor": cursor} if cursor else {}))
        assert answer.status_code == 200, (expr, answer.json())
        page = answer.json()
        keys |= {t["id"] for t in page["items"]}
        if not (cursor := page["next_cursor"]):
            return keys


def labelled(label: str) -> set[str]:
    return {r.tape_key for r in ledger.find(label=label, current=True)}


def lower(text: str) -> str:
    return text.lower()


# Each filter and the same filter in Python over the index's rows (a comparison with none is false).
CASES: list[tuple[str, Callable[[Tape], bool]]] = [
    ("errors > 0", lambda t: t.errors > 0),
    ("errors >= 3", lambda t: t.errors >= 3),
    ("errors < 1", lambda t: t.errors < 1),
    ("errors <= 3", lambda t: t.errors <= 3),
    ("errors == 3", lambda t: t.errors == 3),
    ("errors != 0", lambda t: t.errors != 0),
    ("errors:1", lambda t: t.errors == 1),
    ('kind == "bub"', lambda t: t.kind == "bub"),
    ("kind != bub", lambda t: t.kind != "bub"),
    ("kind:nanobot and entries > 20", lambda t: t.kind == "nanobot" and t.entries > 20),
    ('errors > 0 and kind == "bub" and tokens > 10000', lambda t: t.errors > 0 and t.kind == "bub" and (t.tokens or 0) > 10000),
    ("tokens > 10000", lambda t: t.tokens is not None and t.tokens > 10000),
    ("not tokens > 10000", lambda t: not (t.tokens is not None and t.tokens > 10000)),
    ("tokens != 15", lambda t: t.tokens != 15),
    ('anchor ~ "phase"', lambda t: "phase" in t.last_anchor.lower()),
    ('anchor ~ "PHASE/"', lambda t: "phase/" in t.last_anchor.lower()),
    ("session ~ discord", lambda t: "discord" in t.label.lower()),
    ("source == old or source == ya", lambda t: t.source in ("old", "ya")),
    ("model ~ gpt-4o", lambda t: "gpt-4o" in t.model.lower()),
    ("cost > 0.005", lambda t: t.cost is not None and t.cost > 0.005),
    ("cost <= 0.005", lambda t: t.cost is not None and t.cost <= 0.005),
    ("anchors >= 3 or errors > 5", lambda t: t.anchors >= 3 or t.errors > 5),
    ("anchors >= 3 or errors > 5 and kind == nanobot", lambda t: t.anchors >= 3 or (t.errors > 5 and t.kind == "nanobot")),
    ("(anchors >= 3 or errors > 5) and kind == nanobot", lambda t: (t.anchors >= 3 or t.errors > 5) and t.kind == "nanobot"),
    ("not (kind == bub or kind == yachiyo)", lambda t: t.kind not in ("bub", "yachiyo")),
    ("size > 50000 and not errors > 0", lambda t: t.size > 50000 and not t.errors > 0),
    ("since:2026-11-20", lambda t: t.last_at is not None and t.last_at >= day("2026-11-20")),
    ("until:2026-11-12", lambda t: t.first_at is not None and t.first_at < day("2026-11-13")),
    ("since:2026-11-01 and until:2026-11-18", lambda t: t.last_at is not None and t.last_at >= day("2026-11-01") and t.first_at < day("2026-11-19")),
    ("last_at < 2026-04-01", lambda t: t.last_at is not None and t.last_at < day("2026-04-01")),
    ("first_at == 2026-11-18", lambda t: t.first_at is not None and day("2026-11-18") <= t.first_at < day("2026-11-19")),
    ('label:"needs-review"', lambda t: t.key in labelled("needs-review")),
    ("label == SLOW or label:needs-review", lambda t: t.key in labelled("slow") | labelled("needs-review")),
    ("label ~ tool", lambda t: t.key in labelled("wrong-tool")),
    ("label != slow and kind == nanobot", lambda t: t.key not in labelled("slow") and t.kind == "nanobot"),
]  # fmt: skip


def test_each_filter_lists_what_the_same_filter_in_python_keeps(reader, fleet) -> None:
    tapes = list(Tape.objects.filter(owner__isnull=True))
    wrong = []
    for expr, keep in CASES:
        expected = {t.key for t in tapes if keep(t)}
        if listed(reader, expr) != expected:
            wrong.append(expr)
    assert wrong == []
    # The cases tell tapes apart: none keeps every tape, and most keep some.
    kept = [sum(map(keep, tapes)) for _, keep in CASES]
    assert max(kept) < len(tapes) and sum(1 for n in kept if n) >= len(CASES) - 2


def test_a_duration_reaches_back_from_now(reader, fleet) -> None:
    now = datetime.now(UTC)
    tapes = list(Tape.objects.filter(owner__isnull=True, last_at__isnull=False))
    for expr, since in (("since:30d", now - timedelta(days=30)), ("last_at >= 1w", now - timedelta(weeks=1))):
        assert listed(reader, expr) == {t.key for t in tapes if t.last_at >= since}
    oldest = min(t.first_at for t in tapes)
    assert listed(reader, "since:36500d") == {t.key for t in tapes}
    assert (
        listed(reader, "until:1h")
        == {t.key for t in tapes if t.first_at <= now - timedelta(hours=1)}
        != set()
    )
    assert oldest < now


@pytest.mark.parametrize(
    "expr, detail",
    [
        ("errors >", "filter at character 9: expected a value after errors >, found the end of the filter"),
        ("(kind == bub", 'filter at character 13: expected ")", "and" or "or", found the end of the filter'),
        ("kind = bub", "filter at character 6: expected =="),
        ("cost ~ 5", "filter at character 6: cost takes == != > >= < <= :, not ~"),
        ("colour == red", "filter at character 1: unknown field 'colour'"),
        ("since:tomorrow", "filter at character 7: since takes a duration"),
        ("tokens > 1e99", "filter at character 10: tokens takes a number, not 1e99"),
    ],
)
def test_a_bad_filter_is_400_with_where_it_goes_wrong(reader, served, expr: str, detail: str) -> None:
    answer = reader.get("/api/tapes", filter=expr)
    assert answer.status_code == 400
    assert answer.json()["detail"].startswith(detail)


PIECES = st.sampled_from(
    ["errors", "kind", "tokens", "cost", "since", "label", "anchor", "first_at", "not", "and", "or",
     "(", ")", "==", "!=", ">", ">=", "<", "<=", "~", ":", '"', "'", "\\", "2d", "0", "-1", "0.5",
     "1e9", "99999999999999999999999", "2026-12-01", "9999-12-31", "0001-01-01", "bub", "%", "_", " "]
)  # fmt: skip


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(PIECES | st.text(max_size=4), max_size=12).map(" ".join))
def test_no_filter_is_ever_a_500(reader, served, expr: str) -> None:
    answer = reader.get("/api/tapes", filter=expr)
    assert answer.status_code in (200, 400, 422), (expr, answer.status_code)
    assert "detail" in answer.json() or "items" in answer.json()
