"""The handoff API: an anchor and its handoff event appended to a live Bub tape, here or through
its host's outbox."""

from __future__ import annotations

import json
import logging
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from ninja import Field, Router, Schema, Status
from pydantic import field_validator

from tapeview.accounts.audit import Actor
from tapeview.accounts.auth import writer
from tapeview.outbox import queue as outbox
from tapeview.outbox.answers import api_answer
from tapeview.outbox.api import OutboxRequestOut
from tapeview.outbox.handlers import Result, handler

from .. import handoff, lookup, timeline
from .. import rows as index_rows
from ..models import Tape
from .entries import EntryOut, entry_out
from .schemas import TEXT, BodyIn, BusyOut, WholeInt, responses

log = logging.getLogger(__name__)
router = Router(tags=["tapes"])


class StaleOut(Schema):
    """409 stale: the tape ends elsewhere than `after` said; nothing was written."""

    detail: str
    last_id: int = Field(
        description="the id of the tape's last entry now: send it as `after` to hand off there"
    )


class HandoffIn(BodyIn):
    name: str = Field(min_length=1, max_length=handoff.MAX_NAME, pattern=r"^[^\n\x00]*$")
    summary: str = Field("", max_length=100_000, pattern=TEXT)
    state: dict[str, Any] | None = None
    after: WholeInt | None = Field(
        None,
        ge=0,
        description="the id of the last entry you saw: 409, nothing written, if the tape ends elsewhere now",
    )
    confirm_stopped: bool = Field(
        False, description="write although the agent looks stopped mid-turn (409 `stopped` otherwise)"
    )

    @field_validator("state")
    @classmethod
    def plain_json(cls, state: dict[str, Any] | None) -> dict[str, Any] | None:
        # A ValueError here is a 422, not a tape the agent cannot read or an audit row PostgreSQL refuses.
        if "\\u0000" in json.dumps(state, allow_nan=False):
            raise ValueError("the state must not contain NUL characters")
        return state


class HandoffOut(Schema):
    ids: list[int] = Field(description="the ids of the anchor and its handoff event, as written")
    entries: list[EntryOut] = Field(description="the written entries as indexed (empty if not indexed yet)")


@router.post(
    "/tapes/{tape_id}/handoff",
    response={**responses({201: HandoffOut, 202: OutboxRequestOut}, 400, 403, 404), 409: BusyOut | StaleOut},
)
def create_handoff(request: HttpRequest, tape_id: str, body: HandoffIn) -> Status | HttpResponse:
    """Append an anchor and its handoff event while the tape is idle; 409 with Retry-After when busy.

    A tape on another host: its watcher writes it (201 when done within the wait, else 202 with
    a `status_url`, GET /api/outbox/{id}).
    """
    actor = writer(request)
    tape = lookup.find_tape(tape_id)
    if outbox.elsewhere(tape.host):
        return api_answer(queue_handoff(tape, body.model_dump(), actor))
    return _handoff(tape, body, actor)


def queue_handoff(tape: Tape, params: dict, actor: Actor):
    """A handoff for the watcher of the tape's host to write (the page's and the API's)."""
    return outbox.submit(
        tape.host,
        "handoff",
        {**params, "tape": tape.key},
        actor,
        subject=f"tape:{tape.key}",
        target=f"{tape.source}: {tape.label}",
        page=reverse("tapes:tape_detail", args=[tape.key]),
    )


@handler("handoff")
def carry_out_handoff(params: dict, actor: Actor) -> Result:
    """The outbox's handoff, on the tape's host: the API's own answer."""
    body = HandoffIn(**{k: v for k, v in params.items() if k != "tape"})
    answer = _handoff(lookup.find_tape(params["tape"]), body, actor)
    return Result.of(answer.status_code, HandoffOut.model_validate(answer.value))


def _handoff(tape: Tape, body: HandoffIn, actor: Actor) -> Status:
    start = tape.next_pos
    written = handoff.write(
        tape,
        body.name,
        actor,
        summary=body.summary,
        state=body.state,
        confirm_stopped=body.confirm_stopped,
        after=body.after,
    )
    ids = [e["id"] for e in written]
    try:
        found = index_rows.of(tape).starting(start).where(ids=tuple(ids)).all()
        entries = [
            entry_out(e, full=True) for e in sorted(timeline.read_rows(tape, found), key=lambda e: e.pos)
        ]
    except Exception:
        # Written is written: the ids say what, when reading the entries back fails.
        log.exception("handoff written to %s; reading it back failed", tape.path)
        entries = []
    return Status(201, {"entries": entries, "ids": ids})
