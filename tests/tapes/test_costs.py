"""What sessions cost, from real tapes of each family that records usage: priced per model from the
table, or the agent's own figure, which wins; on the pages and in the API."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

import pytest

from tapeview.tapes import blocklane, costs, discovery, index, prices
from tapeview.tapes.models import PhaseUsage, Tape

from .operator_sources import FIXTURES, serve

pytestmark = pytest.mark.django_db
TABLE = json.loads(prices.SHIPPED.read_text())["models"]
ARALIYA_SESSION = "01a200e4-e18d-7ffd-b1d0-f7592c930f76"


def text(html: str) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def by_hand(path: Path) -> tuple[float, dict[str, list[int]]]:
    """A Bub 0.5.1 tape's cost worked out from its run events and the shipped table's rows."""
    tokens: dict[str, list[int]] = {}
    for line in path.read_text().splitlines():
        entry = json.loads(line) if line.strip() else {}
        data = (entry.get("payload") or {}).get("data") or {}
        if entry.get("kind") == "event" and entry["payload"].get("name") == "run" and data.get("usage"):
            usage, row = data["usage"], tokens.setdefault(data["model"], [0, 0, 0])
            row[0] += usage["prompt_tokens"]
            row[1] += usage["total_tokens"] - usage["prompt_tokens"]
            row[2] += usage.get("prompt_tokens_details", {}).get("cached_tokens", 0)
    names = {"openai:gpt-4o-mini": "gpt-4o-mini", "openai:gpt-4.1-mini": "gpt-4.1-mini"}
    usd = 0.0
    for model, (prompt, completion, cached) in tokens.items():
        rates = TABLE[names[model]]
        usd += (
            (prompt - cached) * rates["input"] + cached * rates["cached_input"] + completion * rates["output"]
        ) / 1e6
    return usd, tokens


@pytest.fixture
def sources(settings, tmp_path: Path) -> dict[str, Path]:
    settings.TAPEVIEW_PRICES = ""
    roots = serve(settings, tmp_path)
    spend = roots["araliya"] / "bot-pkey51aee87e" / "memory" / "sessions" / ARALIYA_SESSION / "spend.json"
    spend.write_bytes((FIXTURES / "araliya_spend" / "spend.json").read_bytes())
    next_root = tmp_path / "next"
    next_root.mkdir()
    for name in ("session_realistic.jsonl",):
        (next_root / name).write_bytes((FIXTURES / "bub-next" / name).read_bytes())
    settings.TAPEVIEW_SOURCES += f",nx=bub:{next_root}"
    discovery.sync()
    return {**roots, "next": next_root}


def tape(source: str, name: str) -> Tape:
    return Tape.objects.get(source=source, name=name, owner__isnull=True)


def test_a_bub_tape_is_priced_per_model_from_the_table(sources, reader, viewer_client) -> None:
    usd, tokens = by_hand(sources["bub"] / "session_realistic.jsonl")
    assert len(tokens) == 2  # the session switches model: each model's tokens at its own price
    t = tape("bub", "session_realistic")
    body = reader.get(f"/api/tapes/{t.key}").json()
    assert body["cost"] == pytest.approx(usd) and body["cost_source"] == "priced"
    listed = {i["id"]: i for i in reader.get("/api/tapes", source="bub").json()["items"]}
    assert listed[t.key]["cost"] == pytest.approx(usd) and listed[t.key]["cost_source"] == "priced"

    page = viewer_client.get(f"/tapes/{t.key}/").content.decode()
    header = text(re.search(r"<dt>Cost</dt>(.*?)</div>", page, re.S).group(1))
    assert header.startswith(f"${usd:.4f} priced from the tokens of each model")
    # The phases add up to the tape, and the turns shown to what their calls cost.
    phases = [float(c) for c in re.findall(r'<td class="num cost"[^>]*>\$([0-9.]+)</td>', page)]
    assert phases and sum(phases) == pytest.approx(usd, abs=1e-4 * len(phases))
    turns = [float(c) for c in re.findall(r'class="sub turn-cost"[^>]*>\$([0-9.]+)<', page)]
    assert turns and sum(turns) <= usd + 1e-4 * len(turns)


def test_the_compiled_lane_and_the_python_lane_keep_the_same_tokens_per_model(sources, monkeypatch) -> None:
    t = tape("bub", "session_realistic")
    compiled = (
        t.model_usage,
        t.cost,
        list(PhaseUsage.objects.filter(tape=t).values_list().order_by("phase_index", "model")),
    )
    monkeypatch.setattr(blocklane, "native", None)
    t.indexed_at, t.phase_count = None, -1  # read again whole
    t.save()
    index.refresh(t)
    t.refresh_from_db()
    python = (
        t.model_usage,
        t.cost,
        list(PhaseUsage.objects.filter(tape=t).values_list().order_by("phase_index", "model")),
    )
    assert [row[2:] for row in python[2]] == [row[2:] for row in compiled[2]]
    assert python[:2] == compiled[:2]


def test_the_agents_own_cost_wins_over_the_priced_one(sources, reader, viewer_client) -> None:
    path = sources["next"] / "session_realistic.jsonl"
    steps = [json.loads(line)["data"] for line in path.read_text().splitlines() if '"metrics"' in line]
    reported = sum(s["metrics"]["cost"] for s in steps if s.get("source") == "agent")
    t = tape("nx", "session_realistic")
    assert t.model_usage  # its calls' tokens are kept, and would price otherwise
    priced = costs.priced(t.model_usage, prices.current())
    assert priced.usd is not None and priced.usd != pytest.approx(reported)
    body = reader.get(f"/api/tapes/{t.key}").json()
    assert (body["cost"], body["cost_source"]) == (pytest.approx(reported), "reported")
    page = viewer_client.get(f"/tapes/{t.key}/").content.decode()
    header = text(re.search(r"<dt>Cost</dt>(.*?)</div>", page, re.S).group(1))
    assert header == f"${reported:.4f} reported by bub (its own figure, at its own rates)"


def test_a_model_without_a_price_leaves_the_cost_unknown(sources, reader, viewer_client) -> None:
    t = tape("bub", "legacy_v0.2.3_session_timestamp")
    assert t.tokens and t.model_usage
    body = reader.get(f"/api/tapes/{t.key}").json()
    assert (body["cost"], body["cost_source"]) == (None, None)
    page = viewer_client.get(f"/tapes/{t.key}/").content.decode()
    header = text(re.search(r"<dt>Cost</dt>(.*?)</div>", page, re.S).group(1))
    assert header == "– unknown: no price for qwen/qwen3-coder-next"
    listing = viewer_client.get("/prices/").content.decode()
    assert "qwen/qwen3-coder-next" in text(re.search(r'id="unpriced">(.*?)</p>', listing, re.S).group(1))


def test_families_that_record_no_usage_have_no_cost(sources, reader) -> None:
    items = reader.get("/api/tapes", source="ya").json()["items"]
    assert items and all((i["cost"], i["cost_source"]) == (None, None) for i in items)


def test_the_index_sorts_by_cost_with_unknown_costs_last(sources, reader, viewer_client) -> None:
    found = Tape.objects.filter(owner__isnull=True, cost__isnull=False)
    known = list(found.order_by("-cost", "id").values_list("key", flat=True))
    assert len(known) >= 3 and len(set(found.values_list("cost_source", flat=True))) == 2
    items = []
    cursor = None
    while True:
        page = reader.get(
            "/api/tapes", sort="-cost", limit=5, **({"cursor": cursor} if cursor else {})
        ).json()
        items += page["items"]
        cursor = page["next_cursor"]
        if not cursor:
            break
    costs_seen = [i["cost"] for i in items]
    assert [i["id"] for i in items[: len(known)]] == known
    assert all(c is None for c in costs_seen[len(known) :])
    rising = [i["cost"] for i in reader.get("/api/tapes", sort="cost").json()["items"][: len(known)]]
    assert rising == sorted(c for c in costs_seen if c is not None)

    html = viewer_client.get("/", {"sort": "-cost"}).content.decode()
    order = [key for key in re.findall(r'href="/tapes/([^/]+)/"', html) if key in known]
    assert list(dict.fromkeys(order)) == known
    assert 'aria-sort="descending"' in html.split('class="c-cost"')[1][:40]


def test_an_override_file_changes_the_price_and_the_pages(
    sources, settings, tmp_path, reader, viewer_client
) -> None:
    t = tape("bub", "session_realistic")
    before = reader.get(f"/api/tapes/{t.key}").json()["cost"]
    _, tokens = by_hand(sources["bub"] / "session_realistic.jsonl")
    override = tmp_path / "prices.toml"
    override.write_text('[models."gpt-4o-mini"]\ninput = 100.0\noutput = 200.0\ncached_input = 50.0\n')
    settings.TAPEVIEW_PRICES = str(override)

    page = viewer_client.get("/prices/").content.decode()  # finds the table changed: prices again
    assert "priced again" in page and str(override) in page
    assert "override" in text(re.search(r'id="price-gpt-4o-mini"[^>]*>(.*?)</tr>', page, re.S).group(1))
    prompt, completion, cached = tokens["openai:gpt-4o-mini"]
    mini = ((prompt - cached) * 100 + cached * 50 + completion * 200) / 1e6
    rates = TABLE["gpt-4.1-mini"]
    prompt, completion, cached = tokens["openai:gpt-4.1-mini"]
    other = (
        (prompt - cached) * rates["input"] + cached * rates["cached_input"] + completion * rates["output"]
    ) / 1e6
    after = reader.get(f"/api/tapes/{t.key}").json()["cost"]
    assert after == pytest.approx(mini + other) and after != pytest.approx(before)
    html = viewer_client.get(f"/tapes/{t.key}/").content.decode()
    assert (
        text(re.search(r'<span id="cost">(.*?)</span>', html).group(1)) == f"${after:,.2f}"
        if after >= 1
        else f"${after:.4f}"
    )


def test_a_broken_override_is_shown_and_the_last_good_table_stays(
    sources, settings, tmp_path, viewer_client
) -> None:
    override = tmp_path / "prices.json"
    override.write_text('{"models": {"gpt-4o-mini": {"input": "free"}}}')
    settings.TAPEVIEW_PRICES = str(override)
    page = viewer_client.get("/prices/")
    assert page.status_code == 200
    problem = text(re.search(r'id="prices-problem"[^>]*>(.*?)</p>', page.content.decode(), re.S).group(1))
    assert "gpt-4o-mini.input: 'free' is not a price" in problem


def test_the_sources_page_adds_up_cost_by_source_and_day(sources, viewer_client) -> None:
    html = viewer_client.get("/sources/").content.decode()
    table = re.search(r'<table class="costs by-source">(.*?)</table>', html, re.S).group(1)
    rows = {text(r).split(" ")[0]: text(r) for r in table.split("<tr>")[2:]}
    bub = sum(
        Tape.objects.filter(source="bub", role__in=("tape", "sidecar"))
        .exclude(cost=None)
        .values_list("cost", flat=True)
    )
    assert rows["bub"].startswith(f"bub ${bub:.4f}" if bub < 1 else f"bub ${bub:,.2f}")
    assert rows["ar"] == "ar $0.0115 0 1 0"  # araliya's own figure (its spend.json)
    assert rows["nb"] == "nb – 0 0 3"  # nanobot keeps only its last turn's usage: no cost known
    assert "ya" not in rows  # yachiyo records no usage: nothing to add up
    assert 'href="/prices/"' in html


def test_a_command_starting_prices_stored_costs_again_or_stops_on_a_broken_file(
    sources, settings, tmp_path, reader
) -> None:
    from django.core.management import CommandError

    from tapeview.tapes.management.commands import _schema

    t = tape("bub", "session_realistic")
    override = tmp_path / "prices.json"
    override.write_text(
        json.dumps({"models": {"gpt-4.1-mini": {"input": 0, "output": 0, "cached_input": 0}}})
    )
    settings.TAPEVIEW_PRICES = str(override)
    _schema.migrate()
    _, tokens = by_hand(sources["bub"] / "session_realistic.jsonl")
    prompt, completion, cached = tokens["openai:gpt-4o-mini"]
    rates = TABLE["gpt-4o-mini"]
    mini = (
        (prompt - cached) * rates["input"] + cached * rates["cached_input"] + completion * rates["output"]
    ) / 1e6
    assert reader.get(f"/api/tapes/{t.key}").json()["cost"] == pytest.approx(mini)

    override.write_text('{"models": {"gpt-4o": {"output": null}}}')
    with pytest.raises(CommandError, match=r"TAPEVIEW_PRICES: .*gpt-4o.output: None is not a price"):
        _schema.migrate()
