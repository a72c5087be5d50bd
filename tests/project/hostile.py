"""Hostile agent files of every family, built from copies of the real fixtures.

Every field a page shows (text, names, ids, keys, file names) carries a script payload. The files
stay valid for each family's reader, so the dashboard indexes and shows them like any other.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import quote

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

# What a page must show as text, never run.
SCRIPT = "<script>window.__xss=1</script>"
IMG = '<img src=x onerror="window.__xss=1">'
SVG = '"><svg onload=window.__xss=1>'
SVG_SQ = "'><svg onload=window.__xss=1>"
CLOSE = "</textarea></title></pre></code></details><script>window.__xss=1</script>"
HTMX = '<div hx-get="/" hx-trigger="load" hx-on::load="window.__xss=1">htmx</div>'
JS_URL = "javascript:window.__xss=1"
TEMPLATE = "{{7*7}} {% now 'Y' %} ${7*7}"
MD_LINK = "[x](javascript:window.__xss=1)"
BUNDLE = " ".join([SCRIPT, IMG, SVG, SVG_SQ, CLOSE, HTMX, JS_URL, TEMPLATE, MD_LINK])

# Names that must stay free of some characters: no "/" (a path), no quote or space (a Bub channel).
NAME_IMG = "<img src=x onerror=window.__xss=1>"
NAME_SVG = "<svg/onload=window.__xss=1>"
NAME_QUOTES = "'\"><svg onload=window.__xss=1>{{7*7}}"

# Raw HTML and unsafe links in memory Markdown (nanobot renders MEMORY.md and friends).
MARKDOWN = f"""

## {SCRIPT} heading

- [click me](javascript:window.__xss=1)
- [again](JAVASCRIPT:window.__xss=1 "a title")
- [entity](&#106;avascript:window.__xss=1)
- [spaces]( javascript:window.__xss=1 )
- [data](data:text/html;base64,PHNjcmlwdD53aW5kb3cuX194c3M9MTwvc2NyaXB0Pg==)
- ![picture](javascript:window.__xss=1)
- <javascript:window.__xss=1>
- [reference link][evil]
- {IMG}
- {SVG}
- {HTMX}
- {CLOSE}
- {TEMPLATE}

<div onmouseover="window.__xss=1">a raw html block</div>

{SCRIPT}

<iframe src="javascript:window.__xss=1"></iframe>

[evil]: javascript:window.__xss=1
"""


def taint(value: Any, skip: frozenset[str] = frozenset(), extra: str = BUNDLE) -> Any:
    """Every string inside `value` with the payloads appended, except under the keys in `skip`.

    A string that holds a JSON object or array (tool arguments, yachiyo tool results) is tainted
    inside and written back as JSON, so it still decodes.
    """
    if isinstance(value, dict):
        return {k: v if k in skip else taint(v, skip, extra) for k, v in value.items()}
    if isinstance(value, list):
        return [taint(v, skip, extra) for v in value]
    if isinstance(value, str):
        if value[:1] in "{[":
            try:
                inner = json.loads(value)
            except ValueError:
                pass
            else:
                if isinstance(inner, (dict, list)):
                    return json.dumps(taint(inner, skip, extra), ensure_ascii=False)
        return f"{value} {extra}"
    return value


def _dump_lines(records: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def _read_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# Bub ------------------------------------------------------------------------------------------

BUB_CHANNEL = NAME_IMG  # the channel= of the prompts: the session id is "<channel>:<chat_id>"
BUB_CHAT = NAME_SVG
BUB_SESSION = f"{BUB_CHANNEL}:{BUB_CHAT}"
BUB_STRUCTURAL_EVENTS = {"handoff", "run", "loop.step", "loop.step.start", "loop.start", "command"}
LONG_TEXT = "a long answer. " * 220  # over the timeline's 3,000-character clip: "show all"


def bub_anchor(name: str) -> str:
    if name == "session/start" or name.startswith(("memory/", "spill/")):
        return name
    return f"{name} {SCRIPT}"


def _bub_entry(entry: dict) -> dict:
    kind, p = entry["kind"], entry["payload"]
    prompt_prefix = f"sender_id={NAME_SVG}|channel=${BUB_CHANNEL}|chat_id={BUB_CHAT}"
    if kind == "message":
        p = json.loads(json.dumps(p).replace("sender_id=human|channel=$cli|chat_id=local", prompt_prefix))
        p["content"] = taint(p["content"])
    elif kind == "tool_call":
        if p.get("content"):
            p["content"] = taint(p["content"])
        for call in p["calls"]:
            call["id"] = f"{call['id']}{SVG}"
            call["function"]["name"] = f"{call['function']['name']}{NAME_IMG}"
            call["function"]["arguments"] = taint(call["function"]["arguments"])
    elif kind == "tool_result":
        p["results"] = taint(p["results"], frozenset({"kind"}))
    elif kind == "anchor":
        p["name"] = bub_anchor(p["name"])
        if "state" in p:
            p["state"] = taint(p["state"], frozenset({"version"}))
    elif kind == "event":
        data = p.get("data")
        if p["name"] == "handoff":
            data["name"] = bub_anchor(data["name"])
            data["state"] = taint(data["state"])
        elif p["name"].startswith(("spill.", "sidecar.")):
            pass
        elif isinstance(data, dict):
            text = json.dumps(data).replace("sender_id=human|channel=$cli|chat_id=local", prompt_prefix)
            p["data"] = taint(json.loads(text), frozenset({"status", "step", "elapsed_ms", "date", "usage"}))
    elif kind in ("system", "error"):
        p = taint(p)
    entry = {**entry, "payload": p, "meta": {**entry["meta"], "note": BUNDLE}}
    return entry


def _bub_zone(version: int) -> list[dict]:
    """A complete zone: version 1 holds the long-term text only, later ones daily notes too."""
    when = "2026-11-22T01:37:39.284495+00:00"
    long_term = f"I prefer Python 3.12 and always want type hints.\n{BUNDLE}\n{MD_LINK}"
    zone = [
        {"kind": "anchor", "payload": {"name": "memory/open", "state": {"version": version}}},
        {
            "kind": "event",
            "payload": {"name": "memory.long_term", "data": {"content": long_term, "updated_at": when}},
        },
        {
            "kind": "event",
            "payload": {
                "name": "memory.daily",
                "data": {"date": "2026-11-22", "content": f"# 2026-11-22\n\n{BUNDLE}", "updated_at": when},
            },
        },
        {
            "kind": "event",
            "payload": {
                "name": "memory.daily",
                "data": {
                    "date": f"2026-11-21{NAME_IMG}",
                    "content": f"# {SVG}\n\n{SCRIPT}",
                    "updated_at": when,
                },
            },
        },
        {"kind": "anchor", "payload": {"name": "memory/seal", "state": {"version": version}}},
    ]
    return zone if version > 1 else [zone[0], zone[1], zone[-1]]


def _bub_extra() -> list[dict]:
    """Entries of kinds and names no agent writes, every part hostile."""
    return [
        {"kind": "event", "payload": {"name": NAME_IMG, "data": {NAME_SVG: BUNDLE, "n": [BUNDLE]}}},
        {"kind": "event", "payload": {"name": f"custom.{NAME_SVG}", "data": {"text": BUNDLE}}},
        {"kind": NAME_IMG, "payload": {SCRIPT: BUNDLE}},
        {"kind": "message", "payload": {"role": NAME_IMG, "content": BUNDLE}},
        {"kind": "message", "payload": {"role": "assistant", "content": LONG_TEXT + BUNDLE}},
        {
            "kind": "tool_call",
            "payload": {
                "calls": [{"id": SVG, "function": {"arguments": BUNDLE, "name": SCRIPT}, "type": "function"}]
            },
        },  # fmt: skip
        {"kind": "tool_result", "payload": {"results": [LONG_TEXT + BUNDLE]}},
    ]


def _number(entries: list[dict], date: str = "2026-11-22T01:37:39.100000+00:00") -> list[dict]:
    out = []
    for i, e in enumerate(entries, 1):
        out.append({"id": i, "kind": e["kind"], "payload": e["payload"], "meta": e.get("meta", {}), "date": e.get("date", date)})  # fmt: skip
    return out


def bub_tape_name(session: str, workspace: str = "/home/ana/src/csvkit-lite") -> str:
    ws = hashlib.md5(workspace.encode()).hexdigest()[:16]
    return f"{ws}__{hashlib.md5(session.encode()).hexdigest()[:16]}"


def build_bub(root: Path) -> dict[str, str]:
    """A tapes directory: the realistic session, hostile throughout and labelled by a hostile session id;
    a tape whose file name is hostile, with an archive; a memory zone with hostile notes."""
    root.mkdir(parents=True)
    real = _read_lines(FIXTURES / "bub" / "session_realistic.jsonl")
    entries = [_bub_entry(e) for e in real]
    # The zone right after the session/start handoff; the odd entries after the first turn.
    entries = entries[:2] + _bub_zone(1) + entries[2:15] + _bub_extra() + _bub_zone(2) + entries[15:]
    name = bub_tape_name(BUB_SESSION)
    text = _dump_lines(_number(entries))
    # A line no reader can parse, holding the payloads (shown as an unreadable line's preview).
    broken = '{"id": 999, "kind": "message", "payload": ' + json.dumps(BUNDLE) + ", oops\n"
    lines = text.splitlines(keepends=True)
    lines.insert(20, broken)
    (root / f"{name}.jsonl").write_text("".join(lines))
    sidecar = _read_lines(FIXTURES / "bub" / "session_realistic__sidecar__spill.jsonl")
    (root / f"{name}__sidecar__spill.jsonl").write_text(_dump_lines([_bub_entry(e) for e in sidecar]))

    other = NAME_QUOTES  # "window.__xss" gives it the one "__" of a tape name
    forked = [_bub_entry(e) for e in _read_lines(FIXTURES / "bub" / "fork_merged.jsonl")]
    (root / f"{other}.jsonl").write_text(_dump_lines(forked) + '{"id": 13, "kind": "message", ' + SCRIPT)
    (root / f"{other}.jsonl.20261122T013739Z.bak").write_text(_dump_lines(forked[:4]))
    return {"tape": name, "other": other}


# nanobot --------------------------------------------------------------------------------------

NANOBOT_KEY = f"telegram:{SCRIPT}"
NANOBOT_LEGACY_KEY = f"discord:{SVG}"
NANOBOT_SKIP = frozenset({"_type", "role", "timestamp", "type", "created_at", "updated_at", "_compaction_route", "_last_usage"})  # fmt: skip


def _storage_key(key: str) -> str:
    return base64.urlsafe_b64encode(key.encode()).decode().rstrip("=")


def _nanobot_record(record: dict, key: str) -> dict:
    if record.get("_type") == "metadata":
        record = {**record, "key": key}
        record["metadata"] = {**record["metadata"], "_last_summary": {"text": BUNDLE, "last_active": "2026-11-12T07:30:09"}}  # fmt: skip
        return record
    record = taint(record, NANOBOT_SKIP | {"tool_calls", "tool_call_id", "thinking_blocks"})
    for call in record.get("tool_calls") or []:
        call["id"] = f"{call['id']}{SVG}"
        call["function"]["name"] = f"{call['function']['name']}{NAME_IMG}"
        call["function"]["arguments"] = taint(call["function"]["arguments"])
    if "tool_call_id" in record:
        record["tool_call_id"] = f"{record['tool_call_id']}{SVG}"
    return record


def build_nanobot(root: Path) -> dict[str, str]:
    """A 0.3.5 data directory: a session whose key (and so file name) is hostile, a legacy file with
    a hostile name, and the workspace memory with hostile Markdown, history, a skill and its name."""
    shutil.copytree(FIXTURES / "nanobot" / "current", root)
    shutil.copytree(
        FIXTURES / "nanobot_memory" / "current" / "workspace", root / "workspace", dirs_exist_ok=True
    )
    sessions = next(p for p in (root / "sessions").iterdir() if p.is_dir())
    original = sessions / f"{_storage_key('telegram:8123456789')}.jsonl"
    records = [_nanobot_record(r, NANOBOT_KEY) for r in _read_lines(original)]
    original.unlink()
    (sessions / f"{_storage_key(NANOBOT_KEY)}.jsonl").write_text(_dump_lines(records))
    legacy = [
        {
            "_type": "metadata",
            "key": NANOBOT_LEGACY_KEY,
            "created_at": "2026-03-01T10:00:00",
            "updated_at": "2026-03-01T10:05:00",
            "metadata": {},
            "last_consolidated": 0,
        },  # fmt: skip
        {"role": "user", "content": BUNDLE, "timestamp": "2026-03-01T10:00:00"},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": BUNDLE}],
            "timestamp": "2026-03-01T10:05:00",
        },
    ]
    (sessions / f"{NAME_IMG}.jsonl").write_text(_dump_lines(legacy))

    workspace = root / "workspace"
    for name in ("memory/MEMORY.md", "USER.md", "SOUL.md", "skills/nas-health-check/SKILL.md"):
        path = workspace / name
        path.write_text(path.read_text() + MARKDOWN)
    skill = workspace / "skills" / NAME_IMG / "SKILL.md"
    skill.parent.mkdir()
    skill.write_text(f"---\nname: {NAME_IMG}\ndescription: {BUNDLE}\n---\n{MARKDOWN}")
    history = workspace / "memory" / "history.jsonl"
    cursor = int((workspace / "memory" / ".cursor").read_text()) + 1
    line = {"cursor": cursor, "timestamp": "2026-11-21 09:00", "content": BUNDLE, "session_key": NANOBOT_KEY}
    history.write_text(history.read_text() + json.dumps(line, ensure_ascii=False) + "\n")
    (workspace / "memory" / ".cursor").write_text(str(cursor))
    return {"key": NANOBOT_KEY, "legacy_key": NANOBOT_LEGACY_KEY}


# yachiyo --------------------------------------------------------------------------------------

YACHIYO_ID = f"{NAME_IMG}/{SCRIPT}"  # a slash too: yachiyo encodes ids into file names
YACHIYO_TITLE = f"</title>{SVG} {TEMPLATE}"
YACHIYO_SKIP = frozenset({"id", "role", "created_at", "updated_at", "trace_id", "request_id", "session_id", "event", "source", "state", "mode", "permission_level", "call_id", "task_id", "type", "error"})  # fmt: skip


def _js_json(doc: Any) -> str:
    return json.dumps(doc, ensure_ascii=False, indent=2)


def build_yachiyo(root: Path) -> dict[str, str]:
    """A data dir: a session whose id, title and every message, run and event are hostile, and a
    long-term memory whose entries' content and keywords are hostile."""
    shutil.copytree(FIXTURES / "yachiyo" / "data", root)
    shutil.copytree(FIXTURES / "yachiyo_memory" / "data" / "long-term-memory", root / "long-term-memory")
    store = root / "session-store"
    old = store / "sessions" / "sess-low-permission.json"
    doc = json.loads(old.read_text())
    old.unlink()
    doc["session_id"], doc["title"] = YACHIYO_ID, YACHIYO_TITLE
    doc["messages"] = taint(doc["messages"], YACHIYO_SKIP | {"metadata"})
    doc["runs"] = taint(doc["runs"], YACHIYO_SKIP | {"metadata"})
    for run in doc["runs"]:
        run["input"] = f"{SCRIPT} {run['input']}"  # the run's anchor shows the input's beginning
    for wrapper in doc["events"]:
        inner = wrapper["event"]
        inner["session_id"] = YACHIYO_ID
        inner["payload"] = taint(inner["payload"], YACHIYO_SKIP)
        if "name" in inner["payload"]:
            inner["payload"]["name"] = f"memory_write{NAME_IMG}"
    first = doc["events"][0]
    doc["events"].append(
        {
            "id": "0b8f2a52-5a43-4d53-9d2b-4a4cfe0b1e01",
            "created_at": first["created_at"],
            "event": {**first["event"], "seq": 99, "event": NAME_IMG, "payload": {SCRIPT: BUNDLE}},
        }
    )
    (store / "sessions" / (quote(YACHIYO_ID, safe="-_.!~*'()") + ".json")).write_text(_js_json(doc))
    index = json.loads((store / "index.json").read_text())
    summary = index["sessions"].pop("sess-low-permission")
    summary.update(
        session_id=YACHIYO_ID, title=YACHIYO_TITLE, last_output_preview=BUNDLE, last_state=NAME_IMG
    )
    index["sessions"][YACHIYO_ID] = summary
    (store / "index.json").write_text(_js_json(index))

    memory = root / "long-term-memory" / "memory.json"
    mem = json.loads(memory.read_text())
    for entry in mem["entries"][:5]:
        entry["content"] = f"{entry['content']} {BUNDLE}"
        entry["keywords"] = [*entry["keywords"], SCRIPT, NAME_IMG, SVG]
        entry["source_session_id"] = YACHIYO_ID
    memory.write_text(_js_json(mem))
    return {"id": YACHIYO_ID, "title": YACHIYO_TITLE}


# araliya --------------------------------------------------------------------------------------

ARALIYA_ID = f"{NAME_QUOTES}"  # a plain folder name (no slash) that araliya would load
ARALIYA_UNSAFE_ID = f"../{SCRIPT}"  # refused on the Sources page, never read: not a folder name


def _transcript(entries: list[tuple[str, str, str]]) -> str:
    return "".join(f"### {role} — {ts}\n\n{content}\n\n" for role, ts, content in entries)


def build_araliya(root: Path) -> dict[str, str]:
    """An identity dir: a session whose id, agent, transcript (roles, stamps, text) and kv keys and
    values are hostile; one listed under an id that is not a folder name; hostile kv in a real one."""
    shutil.copytree(FIXTURES / "araliya", root)
    memory = root / "bot-pkey51aee87e" / "memory"
    index = json.loads((memory / "sessions.json").read_text())
    for sid, agent in ((ARALIYA_ID, SCRIPT), (ARALIYA_UNSAFE_ID, NAME_IMG)):
        index["sessions"][sid] = {"session_id": sid, "created_at": "2026-11-22T01:36:00Z", "store_types": ["basic_session"], "last_agent": agent}  # fmt: skip
    (memory / "sessions.json").write_text(_js_json(index))
    folder = memory / "sessions" / ARALIYA_ID
    folder.mkdir()
    (folder / "transcript.md").write_text(
        _transcript(
            [
                ("user", "2026-11-22T01:36:00Z", BUNDLE),
                ("assistant", "2026-11-22T01:36:01Z", f"## {SCRIPT}\n\n{MD_LINK}\n\n{BUNDLE}"),
                (NAME_IMG, f"2026-11-22T01:36:02Z{SVG}", BUNDLE),
            ]
        )
    )
    kv = {"cap": 200, "entries": [
        {"key": SCRIPT, "value": BUNDLE, "ts": "2026-11-22T01:36:00Z"},
        {"key": "working_memory", "value": f"# Working memory\n\n{MARKDOWN}", "ts": "2026-11-22T01:36:00Z"},
        {"key": NAME_QUOTES, "value": json.dumps({"html": BUNDLE}), "ts": "2026-11-22T01:36:01Z"},
    ]}  # fmt: skip
    (folder / "kv.json").write_text(_js_json(kv))
    real = next(p for p in (memory / "sessions").iterdir() if p.name.startswith("01a200e4"))
    real_kv = json.loads((real / "kv.json").read_text())
    real_kv["entries"].append({"key": NAME_IMG, "value": BUNDLE, "ts": "2026-11-22T01:36:02Z"})
    (real / "kv.json").write_text(_js_json(real_kv))
    return {"id": ARALIYA_ID, "unsafe_id": ARALIYA_UNSAFE_ID}


def build(root: Path) -> dict[str, Any]:
    """Every family under `root` (whose own name is hostile too); returns TAPEVIEW_SOURCES and names."""
    base = root / f"{SVG} {NAME_IMG}"
    paths = {
        "bub": base / "bub" / "tapes",
        "nanobot": base / "nanobot",
        "yachiyo": base / "yachiyo" / "data",
        "araliya": base / "araliya",
    }
    names = {
        "bub": build_bub(paths["bub"]),
        "nanobot": build_nanobot(paths["nanobot"]),
        "yachiyo": build_yachiyo(paths["yachiyo"]),
        "araliya": build_araliya(paths["araliya"]),
    }
    sources = ",".join(f"{kind}={kind}:{path}" for kind, path in paths.items())
    return {"sources": sources, "paths": paths, "names": names}
