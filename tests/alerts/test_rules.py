"""Each kind of rule on a real tape written as an agent writes it: it fires once, clears, fires again."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from tapeview.alerts import evaluate
from tapeview.alerts.models import Alert, Event, Rule
from tapeview.tapes import index, signals
from tapeview.tapes.watcher import Watcher

from .conftest import indexed

pytestmark = pytest.mark.django_db


def rule(**fields) -> Rule:
    return Rule.objects.create(name=fields.pop("name", fields["condition"]), **fields)


def history(r: Rule) -> list[tuple[str, str]]:
    return [(e.kind, e.alert.subject) for e in Event.objects.filter(alert__rule=r).order_by("pk")]


def state(r: Rule) -> str | None:
    alert = Alert.objects.filter(rule=r).first()
    return alert.state if alert else None


def test_the_errors_rule_fires_once_clears_and_fires_again(live) -> None:
    tape, agent = live
    r = rule(condition="errors", threshold=2, minutes=10)
    agent.error()
    indexed(tape)
    assert state(r) is None  # one error in the window: below K
    agent.error()
    indexed(tape)
    assert state(r) == "firing"
    assert "2 errors in the last 10 min" in Alert.objects.get(rule=r).text
    agent.error()
    indexed(tape)  # still over: no second firing
    assert history(r) == [("fired", tape.key)]

    evaluate.run(timezone.now() + timedelta(minutes=11))  # the errors have left the window
    assert state(r) == "cleared"
    agent.error()
    agent.error()
    indexed(tape)
    assert state(r) == "firing"
    assert history(r) == [("fired", tape.key), ("cleared", tape.key), ("fired", tape.key)]


def test_the_errors_rule_keeps_to_its_scope(live) -> None:
    tape, agent = live
    elsewhere = rule(
        name="elsewhere", condition="errors", threshold=1, minutes=10, scope="source", scope_value="other"
    )
    here = rule(name="here", condition="errors", threshold=1, minutes=10, scope="kind", scope_value="bub")
    agent.error()
    indexed(tape)
    assert (state(elsewhere), state(here)) == (None, "firing")


def run_usage(prompt_tokens: int) -> dict:
    usage = {"completion_tokens": 10, "prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens + 10}
    return {"status": "ok", "usage": usage, "model": "openai:gpt-4o-mini"}


def test_the_budget_rule_fires_when_the_context_passes_its_threshold(live) -> None:
    tape, agent = live
    r = rule(condition="budget", threshold=0.75)
    agent.event("run", run_usage(110_000))  # of gpt-4o-mini's 128,000
    indexed(tape)
    assert state(r) == "firing"
    assert "context at 86% of its window (≥ 75%)" in Alert.objects.get(rule=r).text
    agent.event("run", run_usage(112_000))
    indexed(tape)
    assert history(r) == [("fired", tape.key)]

    agent.write("anchor", {"name": "phase/next", "state": {"summary": "a fresh start"}})  # a handoff
    indexed(tape)
    assert state(r) == "cleared"
    agent.event("run", run_usage(120_000))
    indexed(tape)
    assert history(r) == [("fired", tape.key), ("cleared", tape.key), ("fired", tape.key)]


def test_the_silent_rule_fires_for_an_agent_quiet_mid_turn(live) -> None:
    tape, agent = live
    r = rule(condition="silent", minutes=5)
    agent.event("loop.start", {"model": "openai:gpt-4o-mini", "prompt": "go on"})
    indexed(tape)
    assert state(r) is None  # mid-turn, but it has just written
    start = timezone.now()
    evaluate.run(start + timedelta(minutes=6))  # the indexer's periodic check, six minutes on
    assert state(r) == "firing"
    assert "silent for 6 min mid-turn" in Alert.objects.get(rule=r).text
    evaluate.run(start + timedelta(minutes=7))
    assert history(r) == [("fired", tape.key)]

    agent.event("loop.step", {"status": "ok"})  # the turn ends
    indexed(tape)
    assert state(r) == "cleared"
    agent.event("loop.start", {"model": "openai:gpt-4o-mini", "prompt": "and now?"})
    indexed(tape)
    evaluate.run(start + timedelta(minutes=20))
    assert history(r) == [("fired", tape.key), ("cleared", tape.key), ("fired", tape.key)]


def test_a_silent_agent_between_turns_fires_nothing(live) -> None:
    tape, agent = live
    r = rule(condition="silent", minutes=5)
    agent.event("loop.step", {"status": "ok"})
    indexed(tape)
    evaluate.run(timezone.now() + timedelta(minutes=30))
    assert state(r) is None


def spend(path, cost: float) -> None:
    """araliya's spend.json, rewritten as araliya writes it after each turn."""
    body = {
        "total_input_tokens": 100,
        "total_output_tokens": 10,
        "total_cached_tokens": 0,
        "total_cost_usd": cost,
    }
    body["last_updated"] = timezone.now().strftime("%Y-%m-%dT%H:%M:%SZ")
    path.write_text(json.dumps(body, indent=2))


def test_the_cost_rule_fires_on_the_day_s_spend_over_its_limit(araliya) -> None:
    tape, spend_file = araliya
    r = rule(condition="cost", threshold=1.0, scope="kind", scope_value="araliya")
    spend(spend_file, 0.5)
    indexed(tape)
    assert tape.cost == 0.5 and state(r) is None  # what it spent before today is not today's
    spend(spend_file, 1.2)
    indexed(tape)
    assert state(r) is None  # $0.70 today
    spend(spend_file, 1.8)
    indexed(tape)
    assert state(r) == "firing"
    assert Alert.objects.get(rule=r).text == "kind araliya: $1.3000 spent today (limit $1.00)"

    tomorrow = timezone.now() + timedelta(days=1)
    evaluate.run(tomorrow)  # a new day: nothing spent yet
    assert state(r) == "cleared"
    spend(spend_file, 3.0)
    index.refresh(tape)
    evaluate.run(tomorrow + timedelta(minutes=1))  # $1.20 spent that day
    assert history(r) == [("fired", "scope"), ("cleared", "scope"), ("fired", "scope")]


def test_a_disabled_rule_is_not_evaluated(live) -> None:
    tape, agent = live
    r = rule(condition="errors", threshold=1, minutes=10, enabled=False)
    agent.error()
    indexed(tape)
    assert state(r) is None


def test_a_page_that_indexes_a_tape_evaluates_nothing_the_indexer_s_next_pass_does(
    live, viewer_client
) -> None:
    tape, agent = live
    r = rule(condition="errors", threshold=1, minutes=10)
    errors = tape.errors
    agent.error()
    assert viewer_client.get(f"/tapes/{tape.key}/").status_code == 200  # the page indexed the new line
    tape.refresh_from_db()
    assert tape.errors == errors + 1 and state(r) is None
    signals.indexer_idle.send(sender=Watcher, budget=1.0)
    assert state(r) == "firing"
