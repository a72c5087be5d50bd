"""The MCP tools: each the REST endpoint it mirrors, called with the same schemas, answered in its JSON."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from django.http import HttpRequest, HttpResponseBase
from ninja import Field, Schema, Status
from pydantic import BaseModel, ConfigDict
from pydantic.json_schema import SkipJsonSchema

from memory_admin import api as memory_api
from memory_admin import lookup as memory_lookup
from memory_admin import versions
from memory_admin.api.schemas import (
    AsOfIn,
    BlamePageOut,
    LongTermIn,
    StoreDetailOut,
    StoreFilters,
    VersionPageOut,
)
from tapeview.api import api
from tapeview.reviews import api as reviews_api
from tapeview.reviews.api import ReviewIn, ReviewOut
from tapeview.search import api as search_api
from tapeview.search.api import HitPageOut, MemoryHitPageOut, MemorySearchFilters, SearchFilters
from tapeview.tapes import context, lookup
from tapeview.tapes.api import analysis, entries, handoffs, tapes
from tapeview.tapes.api.analysis import BudgetOut, PhasePageOut
from tapeview.tapes.api.cursor import decode, encode
from tapeview.tapes.api.entries import AnchorOut, EntryFilters, EntryPageOut, MessageOut
from tapeview.tapes.api.handoffs import HandoffIn, HandoffOut
from tapeview.tapes.api.schemas import TEXT, PageIn
from tapeview.tapes.api.tapes import TapeDetailOut, TapeFilters, TapePageOut


def tape_id() -> Any:
    return Field(max_length=lookup.KEY_LENGTH, pattern=TEXT, description="a tape's id (list_sessions)")


def store_id() -> Any:
    return Field(max_length=lookup.KEY_LENGTH, pattern=TEXT, description="a memory store's id")


# An argument the tool does not take is an error that names it, never silently dropped.
STRICT = ConfigDict(extra="forbid")


class ToolFailed(Exception):
    """The REST twin's error answer (`status`, its JSON `body`): a tool error, never a protocol error."""

    def __init__(self, status: int, body: Any) -> None:
        self.status, self.body = status, body
        detail = body.get("detail") if isinstance(body, dict) else body
        super().__init__(f"{status}: {detail if isinstance(detail, str) else json.dumps(detail)}")


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    arguments: type[BaseModel]
    run: Callable[[HttpRequest, Any], Any]
    answer: type[BaseModel] | None  # the success schema; None: the endpoint's own JSON response
    write: bool = False

    def subject(self, args: BaseModel) -> str:
        """What the call is about, as the audit log names it (tape:<id>, store:<id>)."""
        if tape := getattr(args, "tape_id", None):
            return f"tape:{tape}"
        if store := getattr(args, "store_id", None):
            return f"store:{store}"
        return ""


# --- arguments: the REST twin's query or body, and its path parameter --------------------------


class SessionsArgs(TapeFilters):
    model_config = STRICT


class TapeArgs(Schema):
    model_config = STRICT
    tape_id: str = tape_id()


class ReadTapeArgs(EntryFilters):
    model_config = STRICT
    tape_id: str = tape_id()
    anchor: str | None = Field(
        None, max_length=300, pattern=TEXT, description="start at this anchor: its position or its name"
    )
    # Bounded as a page is: a payload past 16 KB is a preview here (the REST API's ?full=true is not offered).
    full: SkipJsonSchema[Literal[False]] = False


class SearchArgs(SearchFilters):
    model_config = STRICT
    of: Literal["tapes", "memory"] = Field("tapes", description="search tape entries or memory stores")
    q: str = Field(min_length=1, max_length=500, pattern=TEXT, description="words, or a phrase in quotes")
    store: str | None = Field(None, max_length=32, pattern=TEXT, description="of=memory: one store")
    kind: str | None = Field(None, max_length=40, pattern=TEXT, description="of=memory: a kind or its family")


class ContextArgs(PageIn):
    model_config = STRICT
    tape_id: str = tape_id()
    anchor: str | None = Field(
        None, max_length=300, pattern=TEXT, description="a position or a name; default the last anchor"
    )


class PhasesArgs(PageIn):
    model_config = STRICT
    tape_id: str = tape_id()


class MemoryArgs(AsOfIn):
    model_config = STRICT
    store_id: str = store_id()
    version: str | None = Field(
        None, max_length=80, pattern=TEXT, description="one version's text (memory_history lists them)"
    )


class StorePageArgs(PageIn):
    model_config = STRICT
    store_id: str = store_id()


class HandoffArgs(HandoffIn):
    model_config = STRICT
    tape_id: str = tape_id()


class EditMemoryArgs(LongTermIn):
    model_config = STRICT
    store_id: str = store_id()


class ReviewArgs(ReviewIn):
    model_config = STRICT
    tape_id: str = tape_id()


# --- answers the REST API has no schema of its own for -----------------------------------------


class ContextTotalsOut(Schema):
    exact: bool = Field(description="messages and chars counted by reading the whole context")
    messages: int | None
    chars: int | None
    entries: int = Field(description="entries after the anchor")
    dropped: int = Field(description="entries after the anchor that the model never sees")


class ContextPageOut(Schema):
    anchor: AnchorOut | None = Field(description="null: no anchor yet, the whole tape is context")
    messages: list[MessageOut]
    totals: ContextTotalsOut
    next_cursor: str | None


class VersionTextOut(Schema):
    store_id: str
    version: str
    content: str


# --- the calls ---------------------------------------------------------------------------------


def _own(args: BaseModel, model: type[BaseModel], *skip: str) -> Any:
    """The REST twin's own schema built from the tool's arguments (without the path parameter)."""
    fields = {k: getattr(args, k) for k in model.model_fields if k not in skip and k in args.model_fields_set}
    return model(**fields)


def _read_tape(request: HttpRequest, args: ReadTapeArgs) -> dict:
    filters = _own(args, EntryFilters, "full")
    if args.anchor:
        anchor = context.find_anchor(lookup.find_tape(args.tape_id), args.anchor)  # AnchorNotFound: 404
        filters.after = max(filters.after or 0, anchor.pos - 1)
    return entries.list_entries(request, args.tape_id, filters)


def _search(request: HttpRequest, args: SearchArgs) -> dict:
    model = SearchFilters if args.of == "tapes" else MemorySearchFilters
    stray = sorted(args.model_fields_set - set(model.model_fields) - {"of"})
    if stray:
        raise ToolFailed(400, {"detail": f"of={args.of} takes no {', '.join(stray)}"})
    found = _own(args, model)
    if args.of == "tapes":
        return search_api.search_tapes(request, found)
    return search_api.search_memory(request, found)


def _context(request: HttpRequest, args: ContextArgs) -> dict:
    tape = lookup.find_tape(args.tape_id)
    after = decode(args.cursor, {"pos": int})["pos"] if args.cursor else None
    found = context.page(tape, args.anchor, after=after, size=args.limit)
    totals = found.totals
    return {
        "anchor": found.anchor,
        "messages": found.messages,
        "totals": {
            "exact": totals.exact,
            "messages": totals.messages,
            "chars": totals.chars,
            "entries": totals.rows,
            "dropped": totals.dropped,
        },
        "next_cursor": encode({"pos": found.last_pos}) if found.has_newer else None,
    }


def _read_memory(request: HttpRequest, args: MemoryArgs) -> dict:
    if args.version is None:
        return memory_api.get_store(request, args.store_id, _own(args, AsOfIn))
    if args.as_of is not None:
        raise ToolFailed(400, {"detail": "give a version or as_of, not both"})
    store = memory_lookup.find_store(args.store_id)
    try:
        text = versions.version_text(store, args.version)
    except LookupError as exc:
        raise ToolFailed(404, {"detail": str(exc) or "no such version"}) from None
    return {"store_id": store.key, "version": args.version, "content": text}


TOOLS = [
    Tool(
        "list_sessions",
        "The session index: every tape, filtered (q, source, host, kind, errors, and filter: the filter "
        'language, e.g. errors > 0 and kind == "bub", since:2d) and sorted; paged by cursor.',
        SessionsArgs,
        lambda request, args: tapes.list_tapes(request, _own(args, TapeFilters)),
        TapePageOut,
    ),
    Tool(
        "get_session",
        "One tape: its counts, last anchor, attachments and whether a handoff can be written now.",
        TapeArgs,
        lambda request, args: tapes.get_tape(request, args.tape_id),
        TapeDetailOut,
    ),
    Tool(
        "read_tape",
        "A page of a tape's entries in file order, after a position (`after`) or from an anchor (`anchor`); "
        "payloads past 16 KB are previews.",
        ReadTapeArgs,
        _read_tape,
        EntryPageOut,
    ),
    Tool(
        "search",
        "Full-text search over every tape entry (of=tapes: source, tape, kinds, since, until, role, name, "
        "label, score, filter) or every memory store (of=memory: store, kind); best matches first.",
        SearchArgs,
        _search,
        None,
    ),
    Tool(
        "context_after",
        "What the model is given after an anchor (default the last one), a page of entries' messages at a "
        "time, with the whole context's totals.",
        ContextArgs,
        _context,
        ContextPageOut,
    ),
    Tool(
        "phases",
        "A tape's phases (the spans between anchors) in order, each with its tokens, tool calls and errors.",
        PhasesArgs,
        lambda request, args: analysis.list_phases(request, args.tape_id, _own(args, PageIn)),
        PhasePageOut,
    ),
    Tool(
        "budget",
        "Tokens since the last anchor against the model's context window, and where a handoff fits.",
        TapeArgs,
        lambda request, args: analysis.get_budget(request, args.tape_id),
        BudgetOut,
    ),
    Tool(
        "read_memory",
        "A memory store's content and its `version` (send it to edit_memory); as it was at `as_of`, or one "
        "`version`'s text.",
        MemoryArgs,
        _read_memory,
        None,
    ),
    Tool(
        "memory_history",
        "Every version of a memory store, newest first.",
        StorePageArgs,
        lambda request, args: memory_api.list_versions(request, args.store_id, _own(args, PageIn)),
        VersionPageOut,
    ),
    Tool(
        "blame",
        "Each line of a memory store: the version that introduced it, when, by whom, and the entry that "
        "wrote it.",
        StorePageArgs,
        lambda request, args: memory_api.list_blame(request, args.store_id, _own(args, PageIn)),
        BlamePageOut,
    ),
    Tool(
        "handoff",
        "Append an anchor and its handoff event to a live Bub tape while it is idle (`after`: the last "
        "entry id you saw).",
        HandoffArgs,
        lambda request, args: handoffs.create_handoff(request, args.tape_id, _own(args, HandoffIn)),
        HandoffOut,
        write=True,
    ),
    Tool(
        "edit_memory",
        "Replace a store's long-term text if it is still at `base_version` (read_memory's `version`); a "
        "stale edit changes nothing and answers the current text and a diff.",
        EditMemoryArgs,
        lambda request, args: memory_api.update_long_term(request, args.store_id, _own(args, LongTermIn)),
        StoreDetailOut,
        write=True,
    ),
    Tool(
        "add_review",
        "Record a review (score, verdict, labels, comment) of an entry, a turn or a phase of a tape.",
        ReviewArgs,
        lambda request, args: reviews_api.create_review(request, args.tape_id, _own(args, ReviewIn)),
        ReviewOut,
        write=True,
    ),
]
BY_NAME = {tool.name: tool for tool in TOOLS}
ANSWERS: dict[str, dict[str, type[BaseModel]]] = {
    "search": {"tapes": HitPageOut, "memory": MemoryHitPageOut},
    "read_memory": {"store": StoreDetailOut, "version": VersionTextOut},
}


LISTED = 50  # the tapes (the newest) and the stores that resources/list names


def resources(request: HttpRequest) -> list[tuple[str, str]]:
    """The name and URI of the newest tapes' and the first stores' resources."""
    found = tapes.list_tapes(request, TapeFilters(limit=LISTED))["items"]
    stores = memory_api.list_stores(request, StoreFilters(limit=LISTED))["items"]
    return [(t["label"], f"tapeview://tape/{t['id']}") for t in found] + [
        (s["title"], f"tapeview://memory/{s['id']}") for s in stores
    ]


def answer_schema(tool: Tool, args: BaseModel) -> type[BaseModel]:
    if tool.answer is not None:
        return tool.answer
    if tool.name == "search":
        return ANSWERS["search"][args.of]  # type: ignore[attr-defined]
    return ANSWERS["read_memory"]["version" if args.version else "store"]  # type: ignore[attr-defined]


def result(tool: Tool, args: BaseModel, request: HttpRequest, value: Any) -> tuple[int, Any]:
    """The endpoint's answer as its JSON: (status, body), as the REST API would send it."""
    if isinstance(value, HttpResponseBase):  # a write queued for another host's watcher (outbox)
        return value.status_code, json.loads(value.content)
    status = 200
    if isinstance(value, Status):
        status, value = value.status_code, value.value
    if status >= 400:
        body = value.model_dump() if isinstance(value, BaseModel) else value
        return status, json.loads(api.create_response(request, body, status=status).content)
    shaped = answer_schema(tool, args).model_validate(value).model_dump()
    return status, json.loads(api.create_response(request, shaped, status=status).content)
