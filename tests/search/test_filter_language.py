"""Search takes the session index's filter language: only the entries of the tapes it keeps, on the
page, in the API and in `tapeview search`; a filter that does not parse says where, never a 500."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from tapeview.reviews import ledger
from tapeview.search import catchup, engine
from tapeview.tapes import discovery, expression
from tapeview.tapes.models import Tape

pytestmark = pytest.mark.django_db


def write_tape(path: Path, n: int, errors: int = 0, date: str = "2026-01-03T10:00:00+00:00") -> None:
    lines = [
        {"id": i, "kind": "message", "payload": {"role": "user", "content": f"needle e{i}"}, "meta": {}, "date": date}
        for i in range(1, n + 1)
    ]  # fmt: skip
    lines += [
        {"id": n + i, "kind": "tool_result", "payload": {"results": [{"error": "boom"}]}, "meta": {}, "date": date}
        for i in range(1, errors + 1)
    ]  # fmt: skip
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


@pytest.fixture
def tapes(served) -> dict[str, Tape]:
    write_tape(served["samples"] / "many.jsonl", 30)
    write_tape(served["samples"] / "few.jsonl", 3, date="2025-06-01T10:00:00+00:00")
    write_tape(served["home"] / "other.jsonl", 5)
    discovery.sync()
    catchup.catch_up()
    names = {t.name: t for t in Tape.objects.filter(name__in=["many", "few", "other"])}
    ledger.add(names["few"], 1, "olga", labels=["needs-review"])
    return names


def hit_tapes(**filters: object) -> set[str]:
    return {Tape.objects.get(key=h.tape_key).name for h in engine.search("needle", limit=500, **filters)}


@pytest.mark.parametrize(
    "expr, names",
    [
        ("entries > 10", {"many"}),
        ("source == home", {"other"}),
        ("not source == home and entries < 10", {"few"}),
        ('label:"needs-review"', {"few"}),
        ("label:nobody-uses-this", set()),
        ("since:2026-01-01", {"many", "other"}),
        ('name ~ "O" or entries >= 30', {"many", "other"}),
    ],
)
def test_search_keeps_only_the_entries_of_the_tapes_the_filter_keeps(tapes, expr, names) -> None:
    assert hit_tapes(kept=expression.tape_q(expr)) == names
    assert hit_tapes() >= {"many", "few", "other"}


def test_the_filter_and_the_other_filters_both_apply(tapes) -> None:
    assert hit_tapes(kept=expression.tape_q("entries < 10"), source="samples") == {"few"}
    assert hit_tapes(kept=expression.tape_q("entries < 10"), since=date(2026, 1, 1)) == {"other"}


def test_the_api_filters_and_refuses_a_bad_filter_with_where(reader, tapes) -> None:
    answer = reader.get("/api/search", q="needle", filter="entries >= 30", limit=500)
    assert answer.status_code == 200
    assert {h["tape_id"] for h in answer.json()["items"]} == {tapes["many"].key}
    assert answer.json()["total"] == 30
    bad = reader.get("/api/search", q="needle", filter="entries >> 3")
    assert bad.status_code == 400
    assert bad.json()["detail"] == "filter at character 10: expected a value after entries >, found '>'"


def test_the_search_page_filters_and_says_where_a_filter_goes_wrong(viewer_client, tapes) -> None:
    page = viewer_client.get("/search/", {"q": "needle", "filter": "source == home"}).content.decode()
    assert f"/tapes/{tapes['other'].key}/" in page and f"/tapes/{tapes['many'].key}/" not in page
    answer = viewer_client.get("/search/", {"q": "needle", "filter": "kind == bub and"})
    assert answer.status_code == 200
    text = answer.content.decode()
    assert (
        "The filter does not parse: at character 16: expected a field name, &quot;not&quot; or &quot;(&quot;"
        in text
    )
    assert 'value="kind == bub and"' in text and 'aria-invalid="true"' in text


def test_tapeview_search_takes_a_filter(tapes, capsys) -> None:
    call_command("search", "needle", "--filter", "entries >= 30", "--limit", "100")
    shown = capsys.readouterr().out.splitlines()
    assert len(shown) == 30 and all(line.startswith(f"{tapes['many'].key}:") for line in shown)
    with pytest.raises(CommandError, match="^--filter at character 9: expected =="):
        call_command("search", "needle", "--filter", "entries = 30")
