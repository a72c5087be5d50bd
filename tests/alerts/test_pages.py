"""The Alerts page and the alerts API: firing first with their history; rules made by admins, bad ones refused."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from tapeview.accounts.models import AuditEvent
from tapeview.alerts import evaluate
from tapeview.alerts.models import Rule

from .conftest import indexed

pytestmark = pytest.mark.django_db


def text(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


@pytest.fixture
def admin_client(client, user_factory):
    client.force_login(user_factory("ada", "admin"))
    return client


@pytest.fixture
def fired(live) -> dict:
    """Two alerts of one tape: `old errors` fired and cleared, then a new rule `any error` fired."""
    tape, agent = live
    Rule.objects.create(name="old errors", condition="errors", threshold=1, minutes=10)
    agent.error()
    indexed(tape)
    start = timezone.now()
    evaluate.run(start + timedelta(minutes=11))
    Rule.objects.create(name="any error", condition="errors", threshold=1, minutes=60)
    evaluate.run(start + timedelta(minutes=12))  # a new rule looks over its whole scope
    return {"tape": tape}


def test_the_page_shows_firing_alerts_first_with_their_history(fired, viewer_client) -> None:
    response = viewer_client.get("/alerts/")
    assert response.status_code == 200
    page = response.content.decode()
    rows = text(page.split("<tbody>")[1].split("</tbody>")[0])
    assert rows.index("firing any error") < rows.index("cleared old errors")
    assert "1 error in the last 60 min (≥ 1)" in rows
    assert "fired" in rows and "cleared" in rows and "no webhook" in rows
    assert f'href="/tapes/{fired["tape"].key}/"' in page
    assert "Add a rule" not in page  # a viewer reads; admins change rules
    assert 'href="/alerts/"' in page  # in the navigation


def test_the_api_lists_firing_alerts_first_with_their_history(fired, reader) -> None:
    body = reader.get("/api/alerts").json()
    assert [(a["rule"], a["state"]) for a in body["items"]] == [
        ("any error", "firing"),
        ("old errors", "cleared"),
    ]
    assert body["next_cursor"] is None
    old = body["items"][1]
    assert [e["kind"] for e in old["history"]] == ["cleared", "fired"]
    assert old["tape"] == fired["tape"].key and old["history"][0]["deliveries"] == []
    assert [a["rule"] for a in reader.get("/api/alerts", state="cleared").json()["items"]] == ["old errors"]
    first = reader.get("/api/alerts", limit=1).json()
    assert [a["rule"] for a in first["items"]] == ["any error"]
    rest = reader.get("/api/alerts", limit=1, cursor=first["next_cursor"]).json()
    assert [a["rule"] for a in rest["items"]] == ["old errors"]
    assert reader.get("/api/alerts", cursor="nonsense").status_code == 400


def test_the_alerts_api_is_in_the_openapi_document(reader) -> None:
    paths = reader.get("/api/openapi.json").json()["paths"]
    assert paths["/api/alerts"]["get"]["operationId"] == "list_alerts"
    assert {"get", "post"} <= set(paths["/api/alerts/rules"])
    assert {"put", "delete"} <= set(paths["/api/alerts/rules/{rule_id}"])


def test_an_admin_adds_changes_and_removes_a_rule_on_the_page(admin_client) -> None:
    form = {
        "name": "busy agents",
        "condition": "silent",
        "minutes": "15",
        "scope": "kind",
        "scope_value": "bub",
    }
    response = admin_client.post("/alerts/rules/new", {**form, "enabled": "on"}, follow=True)
    assert response.status_code == 200
    shown = text(response.content.decode())
    assert "Added the rule busy agents" in shown and "kind bub" in shown
    rule = Rule.objects.get(name="busy agents")
    assert (rule.condition, rule.minutes, rule.enabled) == ("silent", 15, True)

    response = admin_client.post(f"/alerts/rules/{rule.pk}/", {**form, "minutes": "30"}, follow=True)
    assert "Saved the rule busy agents" in text(response.content.decode())
    rule.refresh_from_db()
    assert (rule.minutes, rule.enabled) == (30, False)
    response = admin_client.post(f"/alerts/rules/{rule.pk}/delete", follow=True)
    assert "Removed the rule busy agents" in text(response.content.decode())
    assert not Rule.objects.exists()
    actions = list(AuditEvent.objects.order_by("pk").values_list("action", "target"))
    assert actions == [
        (a, "busy agents") for a in ("alert_rule.create", "alert_rule.change", "alert_rule.delete")
    ]


@pytest.mark.parametrize(
    ("form", "error"),
    [
        ({"condition": "errors", "threshold": "3"}, "Minutes: the errors rule needs minutes (N)"),
        (
            {"condition": "errors", "minutes": "5"},
            "Threshold: the errors rule needs a whole number of errors",
        ),
        (
            {"condition": "cost", "threshold": "-2"},
            "Threshold: the cost rule needs a limit in USD per day, above 0",
        ),
        ({"condition": "silent", "minutes": "0"}, "Minutes: minutes must be from 1 to 10080"),
        ({"condition": "budget", "scope": "host"}, "Scope value: name the host the rule is about"),
        (
            {"condition": "budget", "webhook": "ftp://x"},
            "Webhook URL: the webhook must be an http:// or https:// URL",
        ),
        ({"condition": "nonsense"}, "Select a valid choice"),
    ],
)
def test_a_bad_rule_gets_the_form_back_with_why(admin_client, form: dict, error: str) -> None:
    response = admin_client.post("/alerts/rules/new", {"name": "bad", **form})
    assert response.status_code == 400
    assert error in text(response.content.decode())
    assert not Rule.objects.exists()


def test_a_viewer_cannot_change_rules(viewer_client) -> None:
    response = viewer_client.post("/alerts/rules/new", {"name": "x", "condition": "budget"})
    assert response.status_code == 403
    assert not Rule.objects.exists()


RULE = {"name": "spend", "condition": "cost", "threshold": 25.0, "scope": "source", "scope_value": "ar"}


def test_rules_are_made_changed_and_removed_through_the_api(writer, reader) -> None:
    made = writer.post("/api/alerts/rules", RULE)
    assert made.status_code == 201
    rule = made.json()
    assert (rule["name"], rule["condition"], rule["threshold"], rule["enabled"]) == (
        "spend",
        "cost",
        25.0,
        True,
    )
    changed = writer.put(f"/api/alerts/rules/{rule['id']}", {**RULE, "threshold": 50})
    assert changed.status_code == 200 and changed.json()["threshold"] == 50.0
    assert [r["threshold"] for r in reader.get("/api/alerts/rules").json()["items"]] == [50.0]
    gone = writer.client.delete(f"/api/alerts/rules/{rule['id']}", headers=writer.headers)
    assert gone.status_code == 204
    assert reader.get("/api/alerts/rules").json()["items"] == []


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        ({**RULE, "threshold": None}, "threshold: the cost rule needs a limit in USD per day, above 0"),
        ({**RULE, "condition": "nonsense"}, "condition: unknown condition 'nonsense'"),
        ({**RULE, "scope": "planet"}, "scope: unknown scope 'planet'"),
        ({**RULE, "minutes": 5}, "minutes: the cost rule takes no minutes"),
        ({**RULE, "name": " "}, "name: a rule needs a name"),
        ({**RULE, "threshold": float("inf")}, "threshold: the threshold must be a finite number"),
    ],
)
def test_a_bad_rule_gets_400_with_why(writer, body: dict, detail: str) -> None:
    response = writer.post("/api/alerts/rules", body)
    assert response.status_code == 400
    assert response.json()["detail"].startswith(detail)


def test_a_rule_s_name_is_its_own(writer) -> None:
    assert writer.post("/api/alerts/rules", RULE).status_code == 201
    again = writer.post("/api/alerts/rules", RULE)
    assert (again.status_code, again.json()["detail"]) == (400, "name: a rule named 'spend' exists already")


def test_a_read_token_cannot_change_rules(reader) -> None:
    response = reader.post("/api/alerts/rules", RULE)
    assert (response.status_code, response.json()["detail"]) == (403, "this needs a token with write scope")
    assert reader.put("/api/alerts/rules/1", RULE).status_code == 403


def test_an_unknown_rule_is_404(writer) -> None:
    assert writer.put("/api/alerts/rules/999", RULE).status_code == 404
