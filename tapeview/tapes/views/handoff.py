"""Writing a handoff from the dashboard, after showing what the agent's next context would be."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from tapeview.accounts.audit import Actor
from tapeview.accounts.roles import role_required
from tapeview.sources import AgentStopped, TapeBusy

from .. import context, handoff, lookup
from ..forms import (
    HandoffForm,
    SuggestionForm,
)


@role_required("operator")
def tape_handoff(request: HttpRequest, key: str) -> HttpResponse:
    """Write a handoff after showing what the agent's next context would be.

    Template `tapeview/tape_handoff.html`; 409 with Retry-After when the tape is mid-turn.
    """
    tape = lookup.find_tape(key)
    form = HandoffForm(request.POST or None)
    refusal = handoff.refusal(tape)
    ctx = {"tape": tape, "form": form, "refusal": refusal}
    if not refusal:
        # Totals only, bounded on a tape of any length: the messages are on the context page.
        ctx["now"] = context.summarize(tape)
        ctx["state"] = handoff.append_state(tape)
        suggestion = SuggestionForm(request.GET)
        at = suggestion.cleaned_data.get("at") if suggestion.is_valid() else None
        if at is not None:
            # The suggested handoff point of the budget gauge: the context as it was there.
            ctx["suggested"] = context.summarize(tape, until=at)
            ctx["suggested_at"] = at
    if request.method == "POST" and not refusal and form.is_valid():
        data = form.cleaned_data
        try:
            written = handoff.write(
                tape,
                data["name"],
                Actor.of(request.user),
                summary=data["summary"],
                confirm_stopped=data["confirm_stopped"],
            )
        except AgentStopped as stopped:
            ctx["stopped"] = stopped
            response = render(request, "tapes/tape_handoff.html", ctx, status=409)
            response["Retry-After"] = str(max(1, round(stopped.retry_after)))
            return response
        except TapeBusy as busy:
            ctx["busy"] = busy
            response = render(request, "tapes/tape_handoff.html", ctx, status=409)
            response["Retry-After"] = str(max(1, round(busy.retry_after)))
            return response
        except handoff.HandoffRefused as exc:
            form.add_error("name", str(exc))
        else:
            first, last = written[0], written[-1]
            messages.info(
                request, f"Handoff {first['payload']['name']!r} written as ids {first['id']}–{last['id']}."
            )
            return redirect(f"{reverse('tapes:tape_detail', args=[tape.key])}?end=1")
    return render(
        request,
        "tapes/tape_handoff.html",
        ctx,
        status=400 if refusal and request.method == "POST" else 200,
    )
