"""The audit log for admins: every write made through Tapeview, with filters."""

from __future__ import annotations

from django import forms
from django.db.models import Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from ..models import AuditEvent
from ..roles import role_required


class AuditFilterForm(forms.Form):
    q = forms.CharField(required=False, max_length=200, label="Store or person")
    action = forms.CharField(required=False, max_length=40)
    since = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))


@role_required("admin")
def audit_list(request: HttpRequest) -> HttpResponse:
    """Every write made through Tapeview, newest first. Template `accounts/audit_list.html`."""
    form = AuditFilterForm(request.GET)
    form.is_valid()
    events = AuditEvent.objects.all()
    data = form.cleaned_data
    if data.get("q"):
        events = events.filter(Q(target__icontains=data["q"]) | Q(actor__icontains=data["q"]))
    if data.get("action"):
        events = events.filter(action=data["action"])
    if data.get("since"):
        events = events.filter(at__date__gte=data["since"])
    actions = AuditEvent.objects.values_list("action", flat=True).distinct().order_by("action")
    return render(
        request, "accounts/audit_list.html", {"form": form, "events": events[:500], "actions": actions}
    )
