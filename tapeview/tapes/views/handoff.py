"""Writing a handoff from the dashboard, after showing what the agent's next context would be."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from tapeview.accounts.audit import Actor
from tapeview.accounts.roles import role_required
from tapeview.outbox import queue as outbox
from tapeview.outbox.answers import result_of, waited
from tapeview.outbox.views import queued_page
from tapeview.sources import AgentStopped, TapeBusy, TapeNotFound

from .. import context, handoff, lookup
from ..api.handoffs import queue_handoff
from ..forms import (
    HandoffForm,
    SuggestionForm,
)


@role_required("operator")
def tape_handoff(request: HttpRequest, key: str) -> HttpResponse:
    """Write a handoff after showing what the agent's next context would be.

    Template `tapes/tape_handoff.html`; 409 with Retry-After when the tape is mid-turn.
    """
    tape = lookup.find_tape(key)
    refusal = handoff.refusal(tape)
    form = HandoffForm(request.POST or None, initial={"after": None if refusal else _last_id(tape)})
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
        if outbox.elsewhere(tape.host):
            return _handoff_elsewhere(request, ctx)
        try:
            written = handoff.write(
                tape,
                data["name"],
                Actor.of(request.user),
                summary=data["summary"],
                confirm_stopped=data["confirm_stopped"],
                after=data["after"],
            )
        except handoff.HandoffStale as stale:
            return _stale(request, ctx, stale)
        except TapeBusy as busy:
            return _busy(request, ctx, busy)
        except handoff.HandoffRefused as exc:
            form.add_error("name", str(exc))
        else:
            return _written(request, tape, written[0]["payload"]["name"], [e["id"] for e in written])
    return render(
        request,
        "tapes/tape_handoff.html",
        ctx,
        status=400 if refusal and request.method == "POST" else 200,
    )


def _last_id(tape) -> int | None:
    try:
        return handoff.last_id(tape)
    except TapeNotFound:
        return None  # the page says the file is gone when it is read


def _stale(request: HttpRequest, ctx: dict, stale: handoff.HandoffStale) -> HttpResponse:
    """409: the tape ends elsewhere than the form was drawn at. The page shows the context as it is
    now, the form keeps what was typed, and sending it again hands off after what is there now."""
    data = {**ctx["form"].data.dict(), "after": stale.now}
    ctx["form"] = HandoffForm(data)
    ctx["form"].is_valid()
    ctx["stale"] = stale
    return render(request, "tapes/tape_handoff.html", ctx, status=409)


def _busy(request: HttpRequest, ctx: dict, busy: TapeBusy) -> HttpResponse:
    """409 with Retry-After: the agent is mid-turn (or looks stopped); nothing was written."""
    ctx["stopped" if isinstance(busy, AgentStopped) else "busy"] = busy
    response = render(request, "tapes/tape_handoff.html", ctx, status=409)
    response["Retry-After"] = str(max(1, round(busy.retry_after)))
    return response


def _written(request: HttpRequest, tape, name: str, ids: list[int]) -> HttpResponse:
    messages.info(request, f"Handoff {name!r} written as ids {ids[0]}–{ids[-1]}.")
    return redirect(f"{reverse('tapes:tape_detail', args=[tape.key])}?end=1")


def _handoff_elsewhere(request: HttpRequest, ctx: dict) -> HttpResponse:
    """A tape on another host: its watcher writes the handoff; the page answers as it would here
    when that is done within the wait, else it shows the request queued on that host."""
    tape, form = ctx["tape"], ctx["form"]
    data = {k: form.cleaned_data[k] for k in ("name", "summary", "confirm_stopped", "after")}
    queued = waited(queue_handoff(tape, data, Actor.of(request.user)))
    result = result_of(queued)
    body = result.body if result is not None and isinstance(result.body, dict) else {}
    if result is None or not body:
        return queued_page(request, queued)
    if result.ok:
        return _written(request, tape, data["name"], body["ids"])
    if result.status == 409 and "last_id" in body:
        return _stale(request, ctx, handoff.HandoffStale(data["after"] or 0, body["last_id"]))
    if result.status == 409 and "retry_after" in body:
        busy = (AgentStopped if body.get("stopped") else TapeBusy)(result.reason, body["retry_after"])
        return _busy(request, ctx, busy)
    if result.status == 400:
        form.add_error("name", result.reason)
        return render(request, "tapes/tape_handoff.html", ctx)
    return queued_page(request, queued)  # the tape gone on its host, a full disk: its panel says
