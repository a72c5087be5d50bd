"""The Alerts page: alerts firing first, then cleared ones, with their history; rules for admins."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from tapeview.accounts.audit import Actor
from tapeview.accounts.roles import has_role, role_required

from . import listing, rules
from .forms import RuleForm
from .models import Rule


def alert_list(request: HttpRequest, form: RuleForm | None = None, status: int = 200) -> HttpResponse:
    """The alerts, firing first (at most listing.PAGE), each with its history and deliveries; the
    rules. Template `alerts/alert_list.html`; admins also get the form of a new rule."""
    admin = has_role(request.user, "admin")
    ctx = {
        "alerts": listing.alerts()[: listing.PAGE],
        "rules": Rule.objects.all(),
        "form": (form or RuleForm(initial={"enabled": True})) if admin else None,
        "conditions": dict(Rule.CONDITIONS),
    }
    return render(request, "alerts/alert_list.html", ctx, status=status)


@require_POST
@role_required("admin")
def rule_create(request: HttpRequest) -> HttpResponse:
    form = RuleForm(request.POST)
    if not form.is_valid():
        return alert_list(request, form, status=400)
    try:
        rule = rules.save(None, form.rule_input(), Actor.of(request.user))
    except rules.RuleRefused as exc:
        form.add_error(exc.field, exc.message)
        return alert_list(request, form, status=400)
    messages.info(request, f"Added the rule {rule.name}: the indexer evaluates it from its next pass.")
    return redirect("alerts:alert_list")


@role_required("admin")
def rule_edit(request: HttpRequest, rule_id: int) -> HttpResponse:
    """One rule's form. Template `alerts/rule_edit.html`."""
    rule = get_object_or_404(Rule, pk=rule_id)
    form = RuleForm(request.POST) if request.method == "POST" else RuleForm.of(rule)
    if request.method == "POST" and form.is_valid():
        try:
            rules.save(rule, form.rule_input(), Actor.of(request.user))
        except rules.RuleRefused as exc:
            form.add_error(exc.field, exc.message)
        else:
            messages.info(request, f"Saved the rule {rule.name}.")
            return redirect("alerts:alert_list")
    status = 400 if request.method == "POST" else 200
    return render(request, "alerts/rule_edit.html", {"rule": rule, "form": form}, status=status)


@require_POST
@role_required("admin")
def rule_delete(request: HttpRequest, rule_id: int) -> HttpResponse:
    rule = get_object_or_404(Rule, pk=rule_id)
    rules.delete(rule, Actor.of(request.user))
    messages.info(request, f"Removed the rule {rule.name} and its alerts.")
    return redirect("alerts:alert_list")
