"""A tape's turns drawn as a trace (a tree of model and tool calls, a detail pane), and as a conversation."""

from __future__ import annotations

from dataclasses import dataclass

from django import forms
from django.core.exceptions import BadRequest
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.vary import vary_on_headers

from tapeview.sources import TapeNotFound

from .. import lookup, raw, turn_tree
from ..api.cursor import BadCursor, decode, encode
from ..models import Tape

TABS = ("content", "raw", "attributes")
RAW_LINES = 20  # raw lines a detail pane shows; the rest are a link each
RAW_BYTES = 64 * 1024  # of each one


class TurnsForm(forms.Form):
    cursor = forms.RegexField(regex=r"^[A-Za-z0-9_-]*$", max_length=1000, required=False)
    node = forms.RegexField(regex=turn_tree.NODE_ID, max_length=40, required=False)
    tab = forms.ChoiceField(choices=[(t, t) for t in TABS], required=False)

    def start(self) -> turn_tree.Start:
        cursor = self.cleaned_data.get("cursor")
        if not cursor:
            return turn_tree.Start()
        try:
            return turn_tree.Start.of(decode(cursor, turn_tree.KEY_TYPES))
        except BadCursor as exc:
            raise BadRequest(f"?cursor= {exc}: the links of the turns pages hand them out") from None


def _page(request: HttpRequest, key: str) -> tuple[Tape, TurnsForm, turn_tree.TurnPage]:
    tape = lookup.find_tape(key)
    form = TurnsForm(request.GET)
    if not form.is_valid():
        problems = "; ".join(f"?{name}= {' '.join(errs)}" for name, errs in form.errors.items())
        raise BadRequest(
            f"{problems} (a node is t<pos>, m<pos> or x<pos>.<n>; a tab one of {', '.join(TABS)})"
        )
    return tape, form, turn_tree.page(tape, form.start())


def _paging(form: TurnsForm, found: turn_tree.TurnPage) -> dict:
    cursor = form.cleaned_data.get("cursor") or ""
    return {
        "cursor": cursor,
        "here": f"cursor={cursor}&" if cursor else "",  # what the node links keep
        "next_cursor": encode(found.next.key()) if found.next else "",
        "first_page": not cursor,
    }


@vary_on_headers("HX-Request", "HX-Target")
def tape_turns(request: HttpRequest, key: str) -> HttpResponse:
    """A page of the tape's turns, each a tree of its model and tool calls, and the node `?node=`
    selected in the detail pane (its `?tab=`). Template `tapes/tape_turns.html`; partial `#detail`
    when htmx asks for the pane (target `node-detail`)."""
    tape, form, found = _page(request, key)
    node_id = form.cleaned_data.get("node") or ""
    node = found.find(node_id) if node_id else None
    tab = form.cleaned_data.get("tab") or "content"
    ctx = {
        "tape": tape,
        "page": found,
        "node": node,
        "node_id": node_id,
        "tab": tab,
        "tabs": TABS,
        "raw_lines": _raw_lines(tape, node) if node is not None and tab == "raw" else [],
        "raw_limit": RAW_LINES,
        **_paging(form, found),
    }
    if request.htmx and request.htmx.target == "node-detail":
        return render(request, "tapes/tape_turns.html#detail", ctx)
    return render(request, "tapes/tape_turns.html", ctx)


@dataclass(frozen=True)
class RawLine:
    pos: int
    text: str
    more: int  # bytes not shown


def _raw_lines(tape: Tape, node: turn_tree.Node) -> list[RawLine]:
    lines = []
    for pos in node.positions[:RAW_LINES]:
        try:
            entry = raw.read(tape, lookup.find_row(tape, pos))
        except (lookup.NoSuchEntry, TapeNotFound):
            continue
        shown = bytearray()
        for chunk in entry.chunks:
            shown += chunk[: RAW_BYTES - len(shown)]
            if len(shown) >= RAW_BYTES:
                break
        lines.append(RawLine(pos, shown.decode(errors="replace"), max(0, entry.length - len(shown))))
    return lines


@dataclass(frozen=True)
class Said:
    """A part of a conversation: the assistant's words, or a tool call folded inside them."""

    text: str = ""
    tool: turn_tree.Node | None = None


def talk(turn: turn_tree.TurnNode) -> list[Said]:
    """What the assistant said in a turn and the tools it called, in order."""
    out: list[Said] = []
    for child in turn.children:
        if child.kind == "tool_call":
            out.append(Said(tool=child))
            continue
        words = [
            p.get("content")
            for message in child.output or []
            for p in (message.get("parts") or [] if isinstance(message, dict) else [])
            if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("content"), str)
        ]
        text = "".join(words).strip()
        if text:
            out.append(Said(text=text))
    if not any(s.text for s in out) and turn.output:
        out.append(Said(text=turn.output))
    return out


@vary_on_headers("HX-Request")
def tape_conversation(request: HttpRequest, key: str) -> HttpResponse:
    """A page of the tape's turns as a conversation: the user's and the assistant's words, tool calls
    folded inside, each turn's tokens, cost and time, and its review. Template
    `tapes/tape_conversation.html`."""
    tape, form, found = _page(request, key)
    ctx = {
        "tape": tape,
        "page": found,
        "turns": [(t, talk(t)) for t in found.turns],
        **_paging(form, found),
    }
    return render(request, "tapes/tape_conversation.html", ctx)
