"""The filter language's parser: precedence, every operator and value, errors that say where."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest
from django.db.models import Q

from tapeview.tapes import expression
from tapeview.tapes.expression import FilterError, parse, tape_q

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def cmp(field: str, op: str, value: object) -> tuple:
    return ("cmp", field, op, value)


def test_and_binds_tighter_than_or() -> None:
    assert parse("errors > 0 or kind == bub and tokens > 5") == (
        "or",
        [cmp("errors", ">", 0), ("and", [cmp("kind", "==", "bub"), cmp("tokens", ">", 5)])],
    )


def test_not_binds_tighter_than_and() -> None:
    assert parse("not errors > 0 and kind:bub") == (
        "and",
        [("not", cmp("errors", ">", 0)), cmp("kind", ":", "bub")],
    )


def test_parentheses_group_first() -> None:
    assert parse("(errors > 0 or kind == 'bub') and not (tokens < 5)") == (
        "and",
        [("or", [cmp("errors", ">", 0), cmp("kind", "==", "bub")]), ("not", cmp("tokens", "<", 5))],
    )


def test_keywords_and_field_names_are_read_in_any_case() -> None:
    assert parse("Errors > 0 AND NOT Kind == bub") == (
        "and",
        [cmp("errors", ">", 0), ("not", cmp("kind", "==", "bub"))],
    )


@pytest.mark.parametrize("op", ["==", "!=", ">", ">=", "<", "<="])
def test_every_comparison_reads_a_number(op: str) -> None:
    assert parse(f"tokens {op} 100000") == cmp("tokens", op, 100000)


@pytest.mark.parametrize(
    "text, q",
    [
        ("errors == 2", Q(errors__exact=2)),
        ("errors != 2", ~Q(errors=2)),
        ("errors > 2", Q(errors__gt=2)),
        ("errors >= 2", Q(errors__gte=2)),
        ("errors < 2", Q(errors__lt=2)),
        ("errors <= 2", Q(errors__lte=2)),
        ("errors:2", Q(errors__exact=2)),
        ('anchor ~ "Phase/"', Q(last_anchor__icontains="Phase/")),
        ("session == 'cli:local'", Q(label__exact="cli:local")),
        ("cost > 0.5", Q(cost__gt=0.5)),
        ("tokens > -1", Q(tokens__gt=-1)),
        ("since:2d", Q(last_at__gte=NOW - timedelta(days=2))),
        ("since:30m", Q(last_at__gte=NOW - timedelta(minutes=30))),
        ("until:3h", Q(first_at__lte=NOW - timedelta(hours=3))),
        ("until:2026-12-01", Q(first_at__lt=datetime(2026, 12, 2, tzinfo=UTC))),
        ("last_at > 1w", Q(last_at__gt=NOW - timedelta(weeks=1))),
        ("first_at >= 2026-11-30", Q(first_at__gte=datetime(2026, 11, 30, tzinfo=UTC))),
        ("first_at > 2026-11-30", Q(first_at__gte=datetime(2026, 12, 1, tzinfo=UTC))),
        ('last_at < "2026-11-30T10:00Z"', Q(last_at__lt=datetime(2026, 11, 30, 10, tzinfo=UTC))),
    ],
)
def test_each_operator_compiles_to_its_lookup(text: str, q: Q) -> None:
    assert tape_q(text, NOW) == q


def test_strings_take_either_quote_and_escapes() -> None:
    assert parse(r'session == "say \"hi\""') == cmp("session", "==", 'say "hi"')
    assert parse(r"session == 'it\'s'") == cmp("session", "==", "it's")


def test_a_bare_word_is_text_and_a_number_is_text_for_a_text_field() -> None:
    assert parse("anchor ~ phase/review-done") == cmp("anchor", "~", "phase/review-done")
    assert parse("source == 42") == cmp("source", "==", "42")


def test_a_date_and_a_moment_are_read_for_times() -> None:
    assert parse("since:2026-12-01") == cmp("since", ":", date(2026, 12, 1))
    assert parse("since:2026-12-01T09:30") == cmp("since", ":", datetime(2026, 12, 1, 9, 30, tzinfo=UTC))


def test_an_empty_filter_filters_nothing() -> None:
    assert parse("   ") is None
    assert tape_q("") == Q()


@pytest.mark.parametrize(
    "text, position, says",
    [
        ("errors >", 9, "expected a value after errors >, found the end of the filter"),
        ("errors 0", 8, "expected an operator after errors"),
        ("errors = 0", 8, "expected =="),
        ("(errors > 0", 12, 'expected ")", "and" or "or", found the end of the filter'),
        ("errors > 0)", 11, 'expected "and", "or" or the end of the filter, found \')\''),
        ("errors > 0 kind == bub", 12, "found 'kind'"),
        ("wat > 1", 1, "unknown field 'wat'"),
        ("kind == 'bub", 9, "the string started here has no closing '"),
        ("errors > 1.5", 10, "errors takes a whole number, not 1.5"),
        ("errors > many", 10, "errors takes a number, not many"),
        ("kind > bub", 6, "kind takes == != ~ :, not >"),
        ("tokens ~ 5", 8, "tokens takes"),
        ("since > 2d", 7, "since takes :, not >"),
        ("since:soon", 7, "since takes a duration"),
        ("last_at > 2026-13-45", 11, "last_at takes a duration"),
        ("errors > 0 and", 15, 'expected a field name, "not" or "("'),
        ("not", 4, 'expected a field name, "not" or "("'),
        ("()", 2, "found ')'"),
        ("errors > 0 & kind:bub", 12, "unexpected character '&'"),
        ("tokens > 99999999999999999999", 10, "past the largest number tokens holds"),
        ("since:99999999d", 7, "more than a hundred years"),
        ("session == 'a\x00'", 14, "unexpected character NUL"),
    ],
)
def test_a_bad_expression_says_where_and_what_was_expected(text: str, position: int, says: str) -> None:
    with pytest.raises(FilterError) as refused:
        tape_q(text, NOW)
    assert refused.value.position == position
    assert says in str(refused.value)
    assert str(refused.value).startswith(f"at character {position}: ")


def test_deep_nesting_is_refused_not_a_crash() -> None:
    with pytest.raises(FilterError, match="nests at most"):
        parse("(" * 400 + "errors > 0" + ")" * 400)
    with pytest.raises(FilterError, match="nests at most"):
        parse("not " * 200 + "errors > 0")


def test_a_long_expression_is_refused() -> None:
    with pytest.raises(FilterError, match="at most 1000 characters"):
        parse("errors > 0 or " * 100 + "errors > 0")
    many = " or ".join(["errors > 0"] * (expression.MAX_TERMS + 1))
    with pytest.raises(FilterError, match="compares at most"):
        parse(many)
