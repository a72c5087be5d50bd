"""API tokens for admins: list them, create one (its plaintext shown once), revoke one."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from .. import tokens
from ..audit import Actor, record
from ..models import ApiToken
from ..roles import role_required


class TokenForm(forms.Form):
    name = forms.RegexField(
        regex=tokens.NAME, max_length=100, error_messages={"invalid": tokens.NAME_RULE.capitalize() + "."}
    )
    scope = forms.ChoiceField(choices=ApiToken.SCOPES, initial=ApiToken.READ)
    expires_days = forms.IntegerField(required=False, min_value=1, max_value=36500, label="Expires in days")


@role_required("admin")
def token_list(request: HttpRequest) -> HttpResponse:
    """Every API token, and a form to create one. Template `accounts/token_list.html`.

    After a create the page shows the new token's plaintext once, in the response itself: it is
    never put in the session or a message, which would keep it beyond this page.
    """
    form = TokenForm(request.POST or None)
    created = plaintext = None
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            created, plaintext = tokens.create(
                data["name"], data["scope"], created_by=request.user, expires_days=data["expires_days"]
            )
        except tokens.TokenError as exc:
            form.add_error("name", str(exc))
        else:
            record(Actor.of(request.user), "token.create", **tokens.audited(created))
            form = TokenForm()
    rows = ApiToken.objects.select_related("created_by").order_by("name", "-created_at")
    ctx = {
        "form": form,
        "created": created,
        "plaintext": plaintext,
        "rows": [(row, tokens.state(row)) for row in rows],
    }
    response = render(request, "accounts/token_list.html", ctx)
    response["Cache-Control"] = "no-store"
    return response


@require_POST
@role_required("admin")
def token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    row = get_object_or_404(ApiToken, pk=token_id)
    if row.revoked_at is None:  # revoking twice keeps the first time: one row for it
        record(Actor.of(request.user), "token.revoke", **tokens.audited(tokens.revoke(row)))
    messages.info(request, f"Revoked the token {row.name}: it no longer works.")
    return redirect("accounts:token_list")
