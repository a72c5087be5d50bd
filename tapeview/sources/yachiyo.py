"""yachiyo sessions: one JSON document per session in `session-store/`, rewritten wholesale.

Follows ../shared/formats/yachiyo.md (§A.3, §A.4). The document becomes entries in the order
yachiyo_entries describes. `context_messages` replays the prompt yachiyo recorded (the format
doc: `llm.prompt.assembled` holds the full prompt), the last one in the slice, then that run's
tool calls and results. A slice without one (only messages) gives the messages in order.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from urllib.parse import quote, unquote

from . import documents
from .documents import DocumentUnreadable
from .model import ContextMessage, Entry, TapeFile, TapeNotFound, call_id
from .paths import CONTROL, quoted
from .python_json import LONE_SURROGATE, without_lone_surrogates
from .raw_bytes import read_raw as read_raw  # the contract's byte reader (unused: entries have no bytes)
from .yachiyo_entries import as_text, body, decode_result, flatten, obj, result_failed

KIND = "yachiyo"
PREVIEW_BYTES = 600
TITLE_UNITS = 40  # yachiyo's title: the first user message's first 40 UTF-16 units (formats §A.3)
FIRST_MESSAGE = 300  # characters of it the index keeps (Tape.first_message), for the hover
SAFE = "-_.!~*'()"  # what JS encodeURIComponent leaves alone
NAME_MAX = 255  # bytes of a file name on the file systems an agent runs on


def detect(root: Path) -> bool:
    """A yachiyo data dir (or its session store, or the home above it) holds an index.json."""
    return _store(root) is not None


def _store(root: Path) -> Path | None:
    for store in (root / "session-store", root / "data" / "session-store"):
        if store.is_dir():
            return store
    is_store = (root / "index.json").is_file() and (root / "sessions").is_dir()
    return root if is_store or root.name == "session-store" and root.is_dir() else None


def discover(root: Path) -> list[TapeFile]:
    """Every session of index.json, then every session file the index does not list."""
    store = _store(root)
    if store is None:
        return []
    index, problem = _read_index(store / "index.json")
    found, seen = [], set()
    for sid, summary in index.items():
        path = store / "sessions" / (quote(sid, safe=SAFE) + ".json")
        why = refused_id(sid, summary, path.name)
        if why:  # named on the Sources page, never listed as a session
            index_file = store / "index.json"
            found.append(TapeFile(index_file.relative_to(root).as_posix(), index_file, sid, refused=why))
            continue
        title = summary.get("title") if isinstance(summary, dict) else None
        label = f"{_marked(title)} · {sid}" if isinstance(title, str) and title else sid
        note = "" if path.is_file() else "listed in index.json but its file is gone (yachiyo answers 404)"
        rel = path.relative_to(root).as_posix()
        found.append(TapeFile(rel, path, sid, label=label, append_only=False, note=note))
        seen.add(path.name)
    # Crash leftovers `*.json.tmp-*` do not end in .json: the glob skips them, as yachiyo's does.
    files = sorted(p for p in (store / "sessions").glob("*.json") if p.name not in seen)
    note = problem or "not listed in index.json: yachiyo's session list does not show it"
    for path in files:
        rel, sid = path.relative_to(root).as_posix(), unquote(path.stem)
        why = refused_id(sid, {}, path.name)  # a file named `nul%00x.json`: no id the index can hold
        found.append(TapeFile(rel, path, sid, append_only=False, note=note, refused=why))
    return found


def refused_id(sid: str, summary: object, file_name: str) -> str:
    """Why a session of index.json is not read ("" when it is). Any string is a yachiyo id (its file
    name is the id encoded, formats §A.4: a slash or ".." stays inside the store), but not one with a
    control character (no name a page or the index can hold), nor one too long for a file name."""
    shown = quoted(sid)
    if CONTROL.search(sid) or len(file_name.encode("utf-8", "surrogatepass")) > NAME_MAX:
        return f"session {shown}: a session id that is not a safe name: not read"
    if not isinstance(summary, dict):
        return f"session {shown}: its entry is not an object: not read"
    return ""


def _read_index(path: Path) -> tuple[dict, str]:
    try:
        doc = _loads(documents.read_bytes(path))
    except FileNotFoundError:
        return {}, "no index.json"
    except OSError as exc:
        return {}, f"index.json is unreadable ({exc.strerror or exc})"
    except DocumentUnreadable as exc:
        return {}, f"index.json is unreadable ({exc.problem}{'; caught half-written?' if exc.torn else ''})"
    sessions = doc.get("sessions") if isinstance(doc, dict) else None
    return (sessions, "") if isinstance(sessions, dict) else ({}, "index.json has no sessions object")


def _loads(raw: bytes) -> object:
    """The document, lone surrogates made U+FFFD; DocumentUnreadable (a ValueError) saying why not."""
    # JS can leave a lone surrogate ("\ud83d") that orjson rejects: the stdlib parser takes it.
    doc = documents.parse(raw, lone_surrogates=True)
    if not LONE_SURROGATE.search(raw):
        return doc
    try:
        return without_lone_surrogates(doc)
    except RecursionError:  # the stdlib parser follows ~1,000 levels, without_lone_surrogates fewer
        raise DocumentUnreadable(documents.TOO_DEEP, raw) from None


def scan(path: Path, start: int = 0, first_pos: int = 1) -> Iterator[Entry]:
    """All entries of the document; `start` and `first_pos` are ignored (always read whole)."""
    try:
        raw = documents.read_bytes(path)
        doc = _loads(raw)
    except FileNotFoundError as exc:
        raise TapeNotFound(str(path)) from exc
    except OSError as exc:
        yield _unreadable(b"", f"cannot read the file: {exc.strerror or exc}")
        return
    except DocumentUnreadable as exc:
        hint = ": yachiyo rewrites the whole file, caught half-written?" if exc.torn else ""
        yield _unreadable(exc.head, exc.problem + hint)
        return
    if not isinstance(doc, dict):
        yield _unreadable(raw, "not a session: the document is not a JSON object")
        return
    yield from flatten(doc)


def read_entries(path: Path, spans: Iterable[tuple[int, int, int]]) -> list[Entry]:
    """The entries at these positions: the document is small, so it is read again whole."""
    wanted = {pos for pos, _, _ in spans}
    return [e for e in scan(path) if e.pos in wanted] if wanted else []


def unfinished_tail(path: Path, offset: int, pos: int) -> Entry | None:
    return None  # rewritten wholesale by an atomic rename: there is no tail


def _unreadable(raw: bytes, problem: str) -> Entry:
    text = raw[:PREVIEW_BYTES].decode("utf-8", errors="replace").rstrip("\n")
    preview = text + ("…" if len(raw) > PREVIEW_BYTES else "")
    return Entry(1, 0, 0, None, "unreadable", readable=False, problem=problem, preview=preview)


def pointer(metadata: dict | None, messages: int) -> int:
    """0: yachiyo keeps no archive pointer (a session keeps every message it has)."""
    return 0


def session_label(tape_name: str, entry: Entry) -> str | None:
    """yachiyo's own title rule (the first user message, trimmed, cut to 40 UTF-16 units), with an
    ellipsis where it cut: the label of a session index.json does not list."""
    text = _user_text(entry)
    title = _utf16(text)[: TITLE_UNITS * 2].decode("utf-16-le", errors="ignore")  # a cut pair: dropped
    return (title + "…" if len(_utf16(text)) > TITLE_UNITS * 2 else title) or None


def first_message(entry: Entry) -> str | None:
    """A user message, trimmed, as the session index's hover shows the title's whole text: at most
    FIRST_MESSAGE characters, the last of them "…" where it was cut. None for any other entry."""
    text = _user_text(entry)
    return (text[: FIRST_MESSAGE - 1] + "…" if len(text) > FIRST_MESSAGE else text) or None


def _user_text(entry: Entry) -> str:
    if entry.kind != "message" or entry.name != "user" or not isinstance(entry.payload, dict):
        return ""
    return as_text(entry.payload.get("content")).strip()


def _marked(title: str) -> str:
    """An index.json title with an ellipsis where yachiyo cut it: a title of exactly 40 UTF-16 units
    was cut (or the message was exactly that long: the index keeps no more to tell). A longer one
    was not made by that rule (edited by hand?): shown as it is."""
    return title + "…" if len(_utf16(title)) == TITLE_UNITS * 2 else title


def _utf16(text: str) -> bytes:
    return text.encode("utf-16-le", errors="surrogatepass")


def _bodies(entry: Entry) -> list[dict]:
    return [body(w) for w in entry.payload] if isinstance(entry.payload, list) else []


def tool_calls(entry: Entry) -> list[dict]:
    return [
        {"id": call_id(b.get("call_id")), "name": as_text(b.get("name")) or "?", "arguments": b.get("args")}
        for b in _bodies(entry)
    ]


def tool_results(entry: Entry) -> list[dict]:
    """Results with their call ids; `content` is the decoded JSON of yachiyo's result string."""
    return [
        {
            "call_id": call_id(b.get("call_id")),
            "content": decode_result(b.get("result")),
            "is_error": result_failed(b),
        }
        for b in _bodies(entry)
    ]


def context_messages(entries: Iterable[Entry]) -> list[ContextMessage]:
    entries = [e for e in entries if e.readable]
    prompts = [i for i, e in enumerate(entries) if e.kind == "event" and e.name == "llm.prompt.assembled"]
    if not prompts:
        return [
            ContextMessage(e.name, e.payload.get("content"), e.pos) for e in entries if e.kind == "message"
        ]
    prompt = entries[prompts[-1]]
    recorded = body(prompt.payload).get("messages")
    out = [
        ContextMessage(as_text(obj(m).get("role")), obj(m).get("content"), prompt.pos)
        for m in (recorded if isinstance(recorded, list) else [])
    ]
    # Then the run's loop: an assistant turn with the calls, one tool message per result string.
    for e in entries[prompts[-1] + 1 :]:
        if e.meta.get("trace_id") != prompt.meta.get("trace_id"):
            continue
        if e.kind == "tool_call":
            calls = [{"id": c["id"], "type": "function", "function": _function(c)} for c in tool_calls(e)]
            out.append(ContextMessage("assistant", "", e.pos, tool_calls=calls))
        elif e.kind == "tool_result":
            out += [
                ContextMessage(
                    "tool", as_text(b.get("result")), e.pos, tool_call_id=b.get("call_id"), name=b.get("name")
                )
                for b in _bodies(e)
            ]
    return out


def _function(call: dict) -> dict:
    args = call["arguments"]
    if not isinstance(args, str):
        try:
            args = json.dumps(args)
        except RecursionError:  # arguments nested past what the encoder follows: never crash on them
            args = "(not shown: nested too deeply to write as JSON)"
    return {"name": call["name"], "arguments": args}
