"""Deterministic demo tapes in the exact on-disk format of Bub 0.5.1 and 0.2.2 (formats/bub.md)."""

from __future__ import annotations

import hashlib
import json
import random
import shlex
import string
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

Entry = dict[str, Any]

SPILL_CHUNK_BYTES = 16 * 1024
SPILL_PREVIEW_CHARS = 300
CONTEXT_LIMIT = 128000
CSVKIT = "/home/ana/src/csvkit-lite"
WEATHERBOT = "/home/ana/src/weatherbot"
NOTES = "/home/ana/notes"
TELEGRAM = "telegram:-1001234567890"
DISCORD = "discord:1187654321098765432"


def tape_name(workspace: str, session_id: str) -> str:
    """The tape (file stem) Bub 0.5.1 gives a session in a workspace."""
    return f"{_md5(workspace)[:16]}__{_md5(session_id)[:16]}"


def legacy_tape_name(workspace: str, session_id: str) -> str:
    """The file stem of Bub 0.2.x: the full workspace hash and a url-quoted `bub:<session hash>`."""
    return f"{_md5(workspace)}__{quote('bub:' + _md5(session_id)[:16], safe='')}"


def bub_line(entry: Entry) -> str:
    """One tape line exactly as Bub's store writes it."""
    return json.dumps(entry, ensure_ascii=False) + "\n"


def system_prompt(workspace: str, full: bool = True) -> str:
    """A realistic system prompt: ~2.5 KB with tools and skills, a few hundred characters without."""
    core = SYSTEM_PROMPT.format(workspace=workspace)
    return core + TOOLS_PROMPT if full else core


def _md5(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()


SYSTEM_PROMPT = """\
You are Bub, a coding agent working in the workspace {workspace}.
Act through tools: read a file before you edit it, run the tests after every change, and never guess \
what a command printed. Keep answers short and concrete; show paths relative to the workspace.
This session is recorded on an append-only tape. When a phase of work is done, call tape.handoff with \
a short name and a one-line summary so the next phase starts from a clean context.
Reply in the language the user writes in."""

TOOLS_PROMPT = """

<tools>
bash(command, cwd?, timeout?): run a shell command in the workspace and return its combined output. \
Non-zero exit codes are errors. Prefer rg over grep and avoid interactive programs.
fs.read(path, offset?, limit?): read a text file, optionally a window of lines.
fs.write(path, content): create or overwrite a file with the given content.
fs.edit(path, old, new, replace_all?): replace an exact snippet in a file; fails if old is not found \
or is ambiguous.
web.fetch(url, max_chars?): fetch a web page and return it as markdown.
tape.info(): entries, anchors, last anchor and token usage of this tape.
tape.search(query, kinds?, limit?, start?, end?): search earlier messages and tool results.
tape.anchors(): the names of the last 20 anchors.
tape.handoff(name, summary): mark the end of a phase; the context restarts after the anchor.
tape.reset(archive?): start a fresh tape, optionally archiving the old one.
spill.read(handle, cursor?, count?, from_end?): read chunks of a tool output that was too large \
to keep inline.
skills.describe(name): load the full instructions of a skill.
help(): list the comma commands a human can type.
</tools>

<skills>
- friendly-python: idiomatic, typed, tested Python; small functions; pytest with parametrize.
- git-hygiene: small commits with imperative subjects; never rewrite published history.
- release: changelog, version bump, tag, build and upload, in that order.
- incident: collect logs first, find the first bad change, fix, add a regression test, write a note.
</skills>

<rules>
1. Only lines that start with a comma are commands; everything else is a request for you.
2. Large tool outputs are spilled to a sidecar tape; read them with spill.read instead of rerunning.
3. Ask before deleting files, pushing, publishing or touching anything outside the workspace.
4. When a command fails, read the error, fix the cause and retry once; then report what you tried.
5. Never print secrets, tokens or private keys, even when a file you read contains them.
6. Keep the working tree clean: remove temporary files you created before you finish a task.
7. When you are unsure what the user wants, ask one short question instead of guessing.
</rules>"""


# -- what a session does: turns of steps of tool calls, commands typed by a human, pauses


@dataclass(frozen=True, slots=True)
class Call:
    name: str
    args: dict[str, Any]
    result: str | dict[str, Any] = ""  # tape, fs and memory tools compute theirs


@dataclass(frozen=True, slots=True)
class Step:
    """One LLM call: tool calls (with optional text) or, with no calls, the final answer."""

    text: str = ""
    calls: tuple[Call, ...] = ()


@dataclass(frozen=True, slots=True)
class Turn:
    prompt: str
    steps: tuple[Step, ...] = ()
    fails: str = ""  # "", "overflow" (retried after an auto handoff), "provider" or "context"
    error: str = ""


@dataclass(frozen=True, slots=True)
class Command:
    raw: str  # without the comma, as Bub 0.5.1 records it


@dataclass(frozen=True, slots=True)
class Pause:
    days: float


Item = Turn | Command | Pause
Script = Callable[[random.Random, datetime], list[Item]]


def turn(prompt: str, *steps: Step, fails: str = "", error: str = "") -> Turn:
    return Turn(prompt, steps, fails, error)


def say(text: str) -> Step:
    return Step(text=text)


def act(*calls: Call, text: str = "") -> Step:
    return Step(text=text, calls=calls)


def bash(command: str, output: str) -> Call:
    return Call("bash", {"command": command}, output)


def bash_fails(command: str, code: int, output: str) -> Call:
    return Call(
        "bash",
        {"command": command},
        tool_error("bash", f"command exited with code {code}\noutput:\n{output}"),
    )


def read(path: str, text: str) -> Call:
    return Call("fs_read", {"path": path}, text)


def edit(path: str, old: str, new: str) -> Call:
    return Call("fs_edit", {"path": path, "old": old, "new": new})


def write(path: str, content: str) -> Call:
    return Call("fs_write", {"path": path, "content": content})


def handoff(name: str, summary: str) -> Call:
    return Call("tape_handoff", {"name": name, "summary": summary})


def tool_error(tool: str, message: str, exc: str = "RuntimeError") -> dict[str, Any]:
    """The error dict Bub puts in `tool_result.results` when a tool raises."""
    return {
        "kind": "tool",
        "message": f"Tool '{tool}' execution failed.",
        "details": {"error": f"{exc}({message!r})"},
    }


# -- the recorder: turns items into entries, in Bub's order, with Bub's ids and dates


class BubTape:
    """The entries of one tape, as Bub appends them at the end of each turn.

    `legacy=True` writes the Bub 0.2.2 vocabulary and lines without any time field.
    """

    def __init__(
        self,
        rng: random.Random,
        start_time: datetime,
        *,
        workspace: str = CSVKIT,
        session: str = "cli:local",
        model: str = "openai:gpt-4o-mini",
        prompt: str | None = None,
        sender: str = "human",
        start_id: int = 1,
        legacy: bool = False,
    ) -> None:
        self.rng, self.clock, self.legacy = rng, start_time, legacy
        self.workspace, self.model = workspace, model
        self.system = prompt if prompt is not None else system_prompt(workspace, full=False)
        self.name = legacy_tape_name(workspace, session) if legacy else tape_name(workspace, session)
        channel, _, chat_id = session.partition(":")
        self.context_prefix = f"sender_id={sender}|channel=${channel}|chat_id={chat_id}\n"
        self.next_id = start_id
        self.played = 0
        self.sidecar: list[Entry] = []
        self.anchors, self.last_anchor_name, self.last_anchor_id = 0, "", 0
        self.context_tokens = 0
        self.base_tokens = len(self.system) // 4 + 1400  # tool schemas travel with every call
        self.last_prompt_tokens, self.last_call = 0, start_time - timedelta(days=1)
        self.last_usage = (0, 0, 0)  # total, prompt, cached
        self.spill: tuple[str, int, list[bytes]] | None = None
        self.long_term, self.daily, self.memory_version = "", {}, 0
        self.searchable: deque[tuple[str, dict[str, Any]]] = deque(maxlen=500)

    def tick(self, low: float, high: float) -> None:
        self.clock += timedelta(microseconds=self.rng.randint(int(low * 1e6), int(high * 1e6)))

    def entry(self, kind: str, payload: dict[str, Any], meta: dict[str, Any] | None = None) -> Entry:
        entry: Entry = {"id": self.next_id, "kind": kind, "payload": payload, "meta": meta or {}}
        if not self.legacy:
            entry["date"] = self.clock.isoformat()
        if kind in ("message", "tool_result"):
            self.searchable.append((self.clock.isoformat(), payload))
        self.next_id += 1
        self.tick(0.000004, 0.000014)
        return entry

    def event(self, name: str, data: dict[str, Any], meta: dict[str, Any] | None = None) -> Entry:
        return self.entry("event", {"name": name, "data": data}, meta)

    def anchor(self, name: str, state: dict[str, Any] | None = None) -> Entry:
        self.anchors += 1
        self.last_anchor_name, self.last_anchor_id = name, self.next_id
        self.context_tokens = 0  # the model's context restarts after any anchor
        return self.entry("anchor", {"name": name} if state is None else {"name": name, "state": state})

    def handoff_pair(self, name: str, state: dict[str, Any]) -> list[Entry]:
        return [self.anchor(name, state), self.event("handoff", {"name": name, "state": state})]

    def bootstrap(self, archived: str | None = None) -> list[Entry]:
        state = {"owner": "human"} | ({"archived": archived} if archived else {})
        return self.handoff_pair("session/start", state)

    def open_memory(self) -> list[Entry]:
        """The empty first memory zone that PR #33's `ensure()` writes right after session/start."""
        return self._memory_zone()

    def reset_events(self, sidecar_archive: str) -> list[Entry]:
        """What `,tape.reset archive=true` writes after the new session/start anchor."""
        off = {"context": False}
        done = {"sidecar": "spill", "status": "ok", "reason": "tape.reset"}
        return [
            self.event("sidecar.archive", done | {"archive": sidecar_archive}, off),
            self.event("sidecar.reset", done, off),
        ]

    def play(self, items: Iterable[Item]) -> Iterator[Entry]:
        for item in items:
            if isinstance(item, Pause):
                self.clock += timedelta(days=item.days)
                continue
            if self.played:
                self.tick(15, 420)  # the human reads the answer and types the next message
            self.played += 1
            yield from self.command(item.raw) if isinstance(item, Command) else self.turn(item)

    def command(self, raw: str) -> list[Entry]:
        words = shlex.split(raw)
        name, args = words[0], dict(w.split("=", 1) for w in words[1:] if "=" in w)
        out: list[Entry] = []
        status, output = "ok", ""
        if name == "tape.handoff":
            out += self.handoff_pair(args["name"], {"summary": args.get("summary", "")})
            output = f"{'handoff created' if self.legacy else 'anchor added'}: {args['name']}"
        elif name == "tape.info":
            output = self._info()
        elif name == "tape.search":
            output = self._search(args.get("query", ""))
        elif name == "model":
            self.model = words[1]
            out.append(self.event("model_switch", {"model": self.model}))
            output = f"Session model set to {self.model} (applies from the next turn)."
        else:
            status, output = "error", f"unknown command: {name}"
        self.tick(0.00002, 0.002)
        if self.legacy:
            data = {"origin": "human", "kind": "internal", "raw": "," + raw, "name": name, "status": status}
            return [*out, self.event("command", data | {"elapsed_ms": 0, "output": output})]
        data = {"raw": raw, "name": name, "status": status, "elapsed_ms": self.rng.randint(0, 2)}
        return [*out, self.command_event(data | {"output": output})]

    def command_event(self, data: dict[str, Any]) -> Entry:
        done = self.clock.isoformat()
        self.tick(0.000004, 0.000008)
        return self.event("command", data | {"date": done})

    # turns (0.5.1)

    def turn(self, turn: Turn) -> list[Entry]:
        if self.legacy:
            return self._legacy_turn(turn)
        sent = self.clock.replace(microsecond=0).isoformat()
        text = f"{self.context_prefix}---Date: {sent}---\n{turn.prompt}"
        self.tick(0.0005, 0.002)
        start = {"model": self.model, "prompt": text, "allowed_skills": None, "allowed_tools": None}
        out = [self.event("loop.start", start)]
        if turn.fails in ("provider", "context"):
            return out + self._failed_step(text, turn)
        first = 1
        if turn.fails == "overflow":
            started = self.clock
            out.append(self.event("loop.step.start", {"step": 1, "prompt": text}))
            self.tick(0.4, 1.5)
            tokens = CONTEXT_LIMIT + self.rng.randint(800, 9000)
            error = (
                "Error code: 400 - {'error': {'message': \"This model's maximum context length is "
                f'{CONTEXT_LIMIT} tokens. However, your messages resulted in {tokens} tokens.", '
                "'type': 'invalid_request_error', 'code': 'context_length_exceeded'}}"
            )
            reason = {"reason": "context_length_exceeded", "error": error}
            out += self.handoff_pair("auto_handoff/context_overflow", reason)
            out.append(self._step_end(1, started, "auto_handoff", error))
            first = 2
        for i, step in enumerate(turn.steps):
            out += self._step(first + i, step, text if i == 0 else None)
        return out

    def _step(self, number: int, step: Step, user: str | None) -> list[Entry]:
        started = self.clock
        out = [self.event("loop.step.start", {"step": number, "prompt": user})]
        run_id = self._run_id()
        calls, results = self._call_tools(step, run_id, out)
        meta = {"run_id": run_id}
        out.append(self.entry("system", {"content": self.system}, meta))
        if user is not None:
            self.context_tokens += _tokens(user)
            out.append(self.entry("message", {"role": "user", "content": user}, meta))
        if calls:
            content = {"content": step.text} if step.text else {}
            out.append(self.entry("tool_call", {"calls": calls} | content, meta))
            out.append(self.entry("tool_result", {"results": results}, meta))
        else:
            out.append(self.entry("message", {"role": "assistant", "content": step.text}, meta))
        usage = self._usage(step, results)
        out.append(self.event("run", {"status": "ok", "usage": usage, "model": self.model}, meta))
        out.append(self._step_end(number, started, "continue" if calls else "ok"))
        return out

    def _failed_step(self, text: str, turn: Turn) -> list[Entry]:
        started = self.clock
        out = [self.event("loop.step.start", {"step": 1, "prompt": text})]
        meta = {"run_id": self._run_id()}
        if turn.fails == "provider":
            self.tick(20, 60)  # the provider sheds load after a long wait
            out.append(self.entry("system", {"content": self.system}, meta))
            out.append(self.entry("message", {"role": "user", "content": text}, meta))
        else:
            self.tick(0.001, 0.004)
            out.append(self.entry("system", {"content": self.system}, meta))
            out.append(self.entry("error", {"kind": "not_found", "message": turn.error}, meta))
        out.append(self.event("run", {"status": "error", "model": self.model}, meta))
        out.append(self._step_end(1, started, "error", turn.error))
        return out

    def _call_tools(self, step: Step, run_id: str, out: list[Entry]) -> tuple[list[dict], list[Any]]:
        """Run the step's tools; what they write to the tape while running goes to `out`."""
        self.tick(0.8, 2.5 + 3 * len(step.text) / 400)  # the model thinks and writes
        calls, results = [], []
        for call in step.calls:
            self.tick(*_tool_seconds(call))
            args, result = self._run_tool(call, run_id, out)
            # The key order differs between the versions, as in the real sample tapes.
            if self.legacy:
                function = {"name": call.name, "arguments": _json(args)}
                calls.append({"function": function, "id": _call_id(self.rng), "type": "function"})
            else:
                function = {"arguments": _json(args), "name": call.name}
                calls.append({"id": _call_id(self.rng), "function": function, "type": "function"})
            results.append(result)
        self.tick(0.001, 0.006)
        return calls, results

    def _step_end(self, number: int, started: datetime, status: str, error: str = "") -> Entry:
        elapsed = int((self.clock - started).total_seconds() * 1000)
        data: dict[str, Any] = {"step": number, "elapsed_ms": elapsed, "status": status}
        data |= {"error": error} if error else {}
        data["date"] = self.clock.isoformat()
        self.tick(0.000004, 0.000008)
        return self.event("loop.step", data)

    def _run_id(self) -> str:
        self.tick(0.001, 0.003)
        if self.legacy:
            return f"{self.rng.getrandbits(128):032x}"
        return "run-" + self.clock.strftime("%Y%m%dT%H%M%S%fZ")

    def _usage(self, step: Step, results: list[Any]) -> dict[str, Any]:
        prompt = self.base_tokens + self.context_tokens
        written = _tokens(step.text) + sum(_tokens(_json(c.args)) + 12 for c in step.calls)
        completion = written + self.rng.randint(3, 40)
        # Provider prompt caches hold a shared prefix for a few minutes, in 128-token blocks from 1024 on.
        warm = self.clock - self.last_call < timedelta(minutes=10)
        cached = min(self.last_prompt_tokens, prompt) // 128 * 128 if warm else 0
        cached = cached if cached >= 1024 else 0
        self.last_prompt_tokens, self.last_call = prompt, self.clock
        self.context_tokens += written + sum(_tokens(r if isinstance(r, str) else _json(r)) for r in results)
        self.last_usage = (prompt + completion, prompt, cached)
        usage = {
            "completion_tokens": completion,
            "prompt_tokens": prompt,
            "total_tokens": prompt + completion,
        }
        if self.legacy:
            return usage | {"completion_tokens_details": None, "prompt_tokens_details": None}
        return usage | {"prompt_tokens_details": {"cached_tokens": cached}}

    # what tools do to the tape while they run

    def _run_tool(self, call: Call, run_id: str, out: list[Entry]) -> tuple[dict[str, Any], Any]:
        args, result = dict(call.args), call.result
        if call.name == "tape_handoff":
            out += self.handoff_pair(args["name"], {"summary": args["summary"]})
            return args, f"{'handoff created' if self.legacy else 'anchor added'}: {args['name']}"
        if call.name in ("fs_edit", "fs_write") and not result:
            return args, f"{'edited' if call.name == 'fs_edit' else 'wrote'}: {self.workspace}/{args['path']}"
        if call.name.startswith("memory_"):
            return args, self._memory_tool(call.name, args, out)
        if call.name == "spill_read" and self.spill:
            handle, size, chunks = self.spill
            more = (
                "next_cursor: 1\ncomplete: false" if len(chunks) > 1 else "next_cursor: null\ncomplete: true"
            )
            text = f"[spilled tool result: {size:,} bytes, {len(chunks)} chunks]\nchunks: 0-0\n{more}\n"
            return {"handle": handle, "cursor": 0, "count": 1}, f"{text}content:\n{chunks[0].decode()}"
        if isinstance(result, str) and len(result.encode()) > SPILL_CHUNK_BYTES and not self.legacy:
            return args, self._spill(call.name, result, run_id, out)
        return args, result

    def _spill(self, tool: str, output: str, run_id: str, out: list[Entry]) -> str:
        handle = f"{self.rng.getrandbits(128):032x}"
        data = output.encode()
        chunks = [data[i : i + SPILL_CHUNK_BYTES] for i in range(0, len(data), SPILL_CHUNK_BYTES)]
        for i, chunk in enumerate(chunks):
            self._sidecar_entry("anchor", {"name": f"spill/{handle}/chunk/{i}"})
            # Chunks are cut by bytes, mid-line; the demo's output is ASCII, so each one decodes alone.
            self._sidecar_entry(
                "tool_result", {"results": [chunk.decode()]}, {"spill_handle": handle, "spill_chunk": i}
            )
        self._sidecar_entry("anchor", {"name": f"spill/{handle}/manifest"})
        manifest = {"handle": handle, "chunks": len(chunks), "bytes": len(data), "chars": len(output)}
        manifest |= {"lines": output.count("\n") + 1, "tool": tool}
        self._sidecar_entry(
            "event", {"name": "spill.manifest", "data": manifest}, {"spill_handle": handle, "run_id": run_id}
        )
        self.spill = (handle, len(data), chunks)
        written = {"status": "ok", "handle": handle, "bytes": len(data), "chunks": len(chunks), "tool": tool}
        out.append(self.event("spill.write", written, {"run_id": run_id, "context": False}))
        head, tail = output[:SPILL_PREVIEW_CHARS], output[-SPILL_PREVIEW_CHARS:]
        return (
            f"[tool output spilled: {len(data):,} bytes in {len(chunks)} chunks; handle: {handle}]\n"
            f"[read with: spill_read(handle='{handle}', cursor=0, count=1, from_end=False)]\n"
            f"{head}\n\n...[{len(output) - 2 * SPILL_PREVIEW_CHARS:,} chars omitted]...\n\n{tail}"
        )

    def _sidecar_entry(self, kind: str, payload: dict[str, Any], meta: dict[str, Any] | None = None) -> None:
        entry = {"id": len(self.sidecar) + 1, "kind": kind, "payload": payload, "meta": meta or {}}
        self.sidecar.append(entry | {"date": self.clock.isoformat()})
        self.tick(0.000008, 0.000020)

    def _memory_tool(self, name: str, args: dict[str, Any], out: list[Entry]) -> str:
        today = self.clock.date()
        if name == "memory_show":
            notes = "\n\n".join(self.daily[d] for d in sorted(self.daily, reverse=True))
            return f"## Long-term\n{self.long_term or '(empty)'}\n\n## Daily\n{notes or '(none)'}"
        if name == "memory_save":
            self.long_term = f"{self.long_term}\n{args['content']}" if self.long_term else args["content"]
            result = "appended to long-term memory"
        elif name == "memory_daily":
            key = today.isoformat()
            note = self.daily.get(key)
            self.daily[key] = f"{note}\n{args['content']}" if note else f"# {key}\n\n{args['content']}"
            result = "appended to daily notes (today)"
        elif name == "memory_prune":
            cutoff = today - timedelta(days=args.get("retention_days", 30))
            old = [d for d in self.daily if date.fromisoformat(d) < cutoff]
            if not old:
                return "nothing to prune"  # PR #33 writes a new version only when something was removed
            for d in old:
                del self.daily[d]
            result = f"pruned {len(old)} daily notes older than {cutoff.isoformat()}"
        else:
            self.long_term, self.daily = "", {}
            result = "memory cleared"
        out += self._memory_zone()
        return result

    def _memory_zone(self) -> list[Entry]:
        self.memory_version += 1
        version = {"version": self.memory_version}
        out = [self.anchor("memory/open", version)]
        if self.long_term:
            out.append(self._memory_event("memory.long_term", {"content": self.long_term}))
        for day in sorted(self.daily, reverse=True):
            out.append(self._memory_event("memory.daily", {"date": day, "content": self.daily[day]}))
        return [*out, self.anchor("memory/seal", version)]

    def _memory_event(self, name: str, data: dict[str, Any]) -> Entry:
        updated = self.clock.isoformat()
        self.tick(0.000003, 0.000006)
        return self.event(name, data | {"updated_at": updated})

    # comma commands that report on the tape

    def _info(self) -> str:
        entries = self.next_id - 1
        since = entries - self.last_anchor_id
        total, prompt, cached = self.last_usage
        if self.legacy:
            tape = self.name.split("__")[1].replace("%3A", ":")
            return (
                f"tape={tape}\nentries={entries}\nanchors={self.anchors}\nlast_anchor={self.last_anchor_name}\n"
                f"entries_since_last_anchor={since}\nlast_token_usage={total}"
            )
        rate = f"{cached / prompt * 100:.2f}%" if prompt else "n/a"
        return (
            f"name: {self.name}\nentries: {entries}\nanchors: {self.anchors}\n"
            f"last_anchor: {self.last_anchor_name}\nentries_since_last_anchor: {since}\n"
            f"last_token_usage: {total}\nlast_token_cache_hit_rate: {rate}"
        )

    def _search(self, query: str) -> str:
        # Bub's pre-filter dumps with ensure_ascii=True, so non-ASCII queries never match (formats/bub.md §7).
        needle, hits, filtered = query.casefold(), [], 0
        for when, payload in reversed(self.searchable):
            if needle not in json.dumps(payload, sort_keys=True).casefold():
                continue
            line = json.dumps({"date": when, "content": payload}, ensure_ascii=False)
            if "[tape.search]" in line:
                filtered += 1
            elif len(hits) < 20:
                hits.append(line)
        return "\n".join([f"[tape.search]: {len(hits)} matches ({filtered} filtered)", *hits])

    # bub 0.2.2

    def _legacy_turn(self, turn: Turn) -> list[Entry]:
        out: list[Entry] = []
        for i, step in enumerate(turn.steps, 1):
            out.append(self.event("loop.step.start", {"step": i, "model": self.model}))
            run_id = self._run_id()
            calls, results = self._call_tools(step, run_id, out)
            meta = {"run_id": run_id}
            out.append(self.entry("system", {"content": self.system}, meta))
            # Follow-up steps of 0.2.x asked the model to go on with a synthetic user message.
            user = turn.prompt if i == 1 else "Continue the task."
            self.context_tokens += _tokens(user)
            out.append(self.entry("message", {"role": "user", "content": user}, meta))
            if calls:
                out.append(self.entry("tool_call", {"calls": calls}, meta))
                out.append(self.entry("tool_result", {"results": results}, meta))
            if step.text or not calls:
                out.append(self.entry("message", {"role": "assistant", "content": step.text}, meta))
            provider, _, model = self.model.partition(":")
            run = {"status": "ok", "usage": self._usage(step, results), "provider": provider, "model": model}
            out.append(self.event("run", run, meta))
            finish = {
                "step": i,
                "visible_text": bool(step.text),
                "followup": bool(calls),
                "exit_requested": False,
            }
            out.append(self.event("loop.step.finish", finish))
        steps = len(turn.steps)
        result = {"steps": steps, "followups": steps - 1, "exit_requested": False, "error": None}
        return [*out, self.event("loop.result", result)]


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _tokens(text: str) -> int:
    return len(text) // 4 + 1


def _call_id(rng: random.Random) -> str:
    return "call_" + "".join(rng.choices(string.ascii_letters + string.digits, k=24))


def _tool_seconds(call: Call) -> tuple[float, float]:
    command = call.args.get("command", "") if call.name == "bash" else ""
    if any(word in command for word in ("pytest", "build", "push", "upload")):
        return (1.5, 9.0)
    return (0.6, 2.5) if call.name == "web_fetch" else (0.01, 0.8)


# -- realistic tool output


def pytest_output(rng: random.Random, files: dict[str, int], failures: dict[str, str] | None = None) -> str:
    """`pytest -q` output for test files with a number of tests each; failures map test ids to reports."""
    failures = failures or {}
    marks = []
    for path, count in files.items():
        failed = sum(1 for test in failures if test.startswith(path))
        row = ["."] * (count - failed) + ["F"] * failed
        rng.shuffle(row)
        marks += row
    total = len(marks)
    lines = [
        f"{''.join(marks[i : i + 72]):<73}[{round(100 * min(i + 72, total) / total):>3}%]"
        for i in range(0, total, 72)
    ]
    seconds = f"{rng.uniform(0.18, 1.9):.2f}s"
    if not failures:
        return "\n".join([*lines, f"{total} passed in {seconds}"])
    lines.append(" FAILURES ".center(80, "="))
    for test, report in failures.items():
        lines += [f" {test.split('::')[-1]} ".center(80, "_"), "", *report.splitlines(), ""]
    lines.append(" short test summary info ".center(80, "="))
    for test, report in failures.items():
        first_error = next(line for line in report.splitlines() if line.startswith("E "))
        lines.append(f"FAILED {test} - {first_error[1:].strip()}")
    lines.append(f"{len(failures)} failed, {total - len(failures)} passed in {seconds}")
    return "\n".join(lines)


def trips_output(rng: random.Random, rows: int) -> str:
    """The csvkit-lite CLI printing a trips export as TSV: big enough to be spilled."""
    stations = [
        "Harbour Rd",
        "Main St, Apt 4",
        "Central Station",
        "Mill Lane, Gate B",
        "Riverside",
        "Kings Rd, North",
    ]
    lines = ["trip_id\tstarted_at\tstart_station\tend_station\tdistance_km\tfare_eur"]
    start = datetime(2026, 3, 1, 6, 0)
    for n in range(rows):
        start += timedelta(minutes=rng.randint(1, 25))
        a, b = rng.sample(stations, 2)
        km = rng.uniform(0.6, 14.0)
        lines.append(f"T{24000 + n}\t{start:%Y-%m-%d %H:%M}\t{a}\t{b}\t{km:.1f}\t{2.1 + km * 0.85:.2f}")
    return "\n".join([*lines, f"-- {rows} rows, 6 columns, 0 malformed"])


def _ls_date(when: datetime) -> str:
    return f"{when:%b} {when.day:>2} {when:%H:%M}"


LS_CSVKIT = """\
total 40
drwxr-xr-x 6 ana ana 4096 {day} .
drwxr-xr-x 9 ana ana 4096 {day} ..
drwxr-xr-x 8 ana ana 4096 {day} .git
-rw-r--r-- 1 ana ana  112 {day} .gitignore
-rw-r--r-- 1 ana ana  311 {day} AGENTS.md
-rw-r--r-- 1 ana ana 1480 {day} CHANGELOG.md
-rw-r--r-- 1 ana ana  902 {day} README.md
-rw-r--r-- 1 ana ana  688 {day} pyproject.toml
drwxr-xr-x 3 ana ana 4096 {day} src
drwxr-xr-x 3 ana ana 4096 {day} tests"""

README = """\
# csvkit-lite

A tiny, dependency-free CSV toolkit: `csvkit-lite cat`, `stats` and `sort`.

    pip install csvkit-lite
    csvkit-lite cat trips.csv --format tsv

Rows are parsed by `csvkit_lite.reader.split_row`; see AGENTS.md for how we work."""

PYPROJECT = """\
[project]
name = "csvkit-lite"
version = "0.3.2"
requires-python = ">=3.10"
dependencies = []

[project.scripts]
csvkit-lite = "csvkit_lite.cli:main"

[tool.pytest.ini_options]
testpaths = ["tests"]"""

READER = '''\
"""Read CSV rows without the csv module (kept dependency-free on purpose)."""

from collections.abc import Iterable, Iterator


def split_row(line: str, delimiter: str = ",") -> list[str]:
    return line.rstrip("\\r\\n").split(delimiter)


def iter_rows(lines: Iterable[str], delimiter: str = ",") -> Iterator[list[str]]:
    for line in lines:
        if line.strip():
            yield split_row(line, delimiter)
'''

SPLIT_V1 = """    return line.rstrip("\\r\\n").split(delimiter)"""

SPLIT_V2 = """\
    fields, field, quoted = [], "", False
    for ch in line.rstrip("\\r\\n"):
        if ch == '"':
            quoted = not quoted
        elif ch == delimiter and not quoted:
            fields.append(field)
            field = ""
        else:
            field += ch
    fields.append(field)
    return fields"""

LOOP_V2 = """    for ch in line.rstrip("\\r\\n"):"""

LOOP_V3 = """\
    text = line.rstrip("\\r\\n")
    for i, ch in enumerate(text):"""

QUOTE_V2 = """\
        if ch == '"':
            quoted = not quoted"""

QUOTE_V3 = """\
        if ch == '"' and quoted and text[i + 1 : i + 2] == '"':
            field += '"'
            i += 1
        elif ch == '"':
            quoted = not quoted"""

SPLIT_V3 = """\
    fields, field, quoted = [], "", False
    text, i = line.rstrip("\\r\\n"), 0
    while i < len(text):
        ch = text[i]
        if ch == '"' and quoted and text[i + 1 : i + 2] == '"':
            field += '"'
            i += 1
        elif ch == '"':
            quoted = not quoted
        elif ch == delimiter and not quoted:
            fields.append(field)
            field = ""
        else:
            field += ch
        i += 1
    fields.append(field)
    return fields"""

QUOTED_FAILURE = """\
    def test_quoted_field_with_comma():
>       assert split_row('a,"Main St, Apt 4",c') == ["a", "Main St, Apt 4", "c"]
E       AssertionError: assert ['a', '"Main St', ' Apt 4"', 'c'] == ['a', 'Main St, Apt 4', 'c']
E         At index 1 diff: '"Main St' != 'Main St, Apt 4'

tests/test_reader.py:41: AssertionError"""

ESCAPED_FAILURE = '''\
    def test_escaped_quote():
>       assert split_row('a,"say ""hi""",c') == ["a", 'say "hi"', "c"]
E       assert ['a', {got}, 'c'] == ['a', 'say "hi"', 'c']
E         At index 1 diff: {got} != 'say "hi"'

tests/test_reader.py:48: AssertionError'''

CLI = """\
import argparse

from .reader import iter_rows


def main(argv=None):
    parser = argparse.ArgumentParser(prog="csvkit-lite")
    parser.add_argument("command", choices=["cat", "stats", "sort"])
    parser.add_argument("path")
    parser.add_argument("--format", default="csv")
    args = parser.parse_args(argv)
    with open(args.path, encoding="utf-8") as f:
        rows = list(iter_rows(f))
"""

FORMAT_OPTION = '    parser.add_argument("--format", default="csv")'
DELIMITER_OPTION = FORMAT_OPTION + '\n    parser.add_argument("-d", "--delimiter", default=",")'

CSVKIT_TESTS = {"tests/test_reader.py": 21, "tests/test_writer.py": 15, "tests/test_cli.py": 12}
QUOTED_TEST = "tests/test_reader.py::test_quoted_field_with_comma"
ESCAPED_TEST = "tests/test_reader.py::test_escaped_quote"
READER_PATH = "src/csvkit_lite/reader.py"
COMMIT = "7d2c4a9 Keep quoted delimiters in split_row; add --delimiter"


def _csvkit_main(rng: random.Random, day: datetime) -> list[Item]:
    """Explore csvkit-lite, fix the quoted-field bug, look at a big output, add an option, commit."""
    before = {QUOTED_TEST: QUOTED_FAILURE, ESCAPED_TEST: ESCAPED_FAILURE.format(got='\'"say ""hi"""\'')}
    escaped = {ESCAPED_TEST: ESCAPED_FAILURE.format(got="'say hi'")}
    reader_v2b = SPLIT_V2.replace(LOOP_V2, LOOP_V3).replace(QUOTE_V2, QUOTE_V3)
    defs = (
        '6:def split_row(line: str, delimiter: str = ",") -> list[str]:\n10:def iter_rows(lines, delimiter):'
    )
    quote_tests = "tests/test_reader.py:40:def test_quoted_field_with_comma():\n47:def test_escaped_quote():"
    git_log = (
        "3c9e1f2 Add stats command\n8b41d07 Sort: natural order for numeric columns\n51aa6e0 Release 0.3.2"
    )
    commit = f"[main {COMMIT}]\n 3 files changed, 31 insertions(+), 4 deletions(-)"
    return [
        turn(
            "what is in this repo?",
            act(
                bash("ls -la", LS_CSVKIT.format(day=_ls_date(day - timedelta(days=2, hours=5)))),
                read("README.md", README),
                read("pyproject.toml", PYPROJECT),
                text="Let me look around first.",
            ),
            say(
                "csvkit-lite 0.3.2: a dependency-free CSV toolkit with a `csvkit-lite` CLI (`cat`, `stats`, "
                "`sort`). Parsing lives in `src/csvkit_lite/reader.py`, tests in `tests/`."
            ),
        ),
        turn(
            "how does the reader split rows? 有没有测试覆盖引号的情况？",
            act(bash("rg -n 'def ' src/csvkit_lite/reader.py", defs)),
            act(read(READER_PATH, READER), bash("rg -n 'quote' tests/", quote_tests)),
            say(
                '`split_row` just calls `str.split(delimiter)`, so `"Main St, Apt 4"` is cut in two. '
                "测试里有两个关于引号的用例：`test_quoted_field_with_comma` 和 `test_escaped_quote`，"
                "按现在的实现它们应该会失败。"
            ),
        ),
        turn(
            "run the tests and show me the last commits",
            act(
                bash_fails("python -m pytest -q", 1, pytest_output(rng, CSVKIT_TESTS, before)),
                bash("git log --oneline -3", git_log),
            ),
            say("46 passed, 2 failed: both quoting tests. The last commit is 3c9e1f2 “Add stats command”."),
        ),
        Command("tape.info"),
        turn(
            "good, let's close the exploration phase",
            act(
                handoff(
                    "phase/explore-done", "Explored csvkit-lite: split_row ignores quotes; 2 failing tests"
                )
            ),
            say("Exploration phase handed off."),
        ),
        Command("tape.handoff name=phase/fix-quoting summary='Keep quoted delimiters and escaped quotes'"),
        turn(
            "fix split_row so quoted fields keep their commas, then run the tests",
            act(read(READER_PATH, READER), text="I'll read the current implementation first."),
            act(
                edit(READER_PATH, SPLIT_V1, SPLIT_V2),
                text="Replacing the plain split with a small state machine.",
            ),
            act(bash_fails("python -m pytest -q", 1, pytest_output(rng, CSVKIT_TESTS, escaped))),
            act(
                edit(READER_PATH, LOOP_V2, LOOP_V3),
                edit(READER_PATH, QUOTE_V2, QUOTE_V3),
                text="A doubled quote inside a quoted field is an escaped quote; handling that too.",
            ),
            act(bash("python -m pytest -q", pytest_output(rng, CSVKIT_TESTS))),
            act(
                edit(READER_PATH, reader_v2b, SPLIT_V3),
                text="Green, but `i += 1` inside a for loop is a no-op that passes by accident. "
                "Switching to an explicit index so the second quote is really skipped.",
            ),
            act(bash("python -m pytest -q", pytest_output(rng, CSVKIT_TESTS))),
            say('Fixed: `split_row` keeps quoted delimiters and turns `""` into `"`. All 48 tests pass.'),
        ),
        turn(
            "run the CLI on the March trips export and check nothing gets split wrong",
            act(
                bash(
                    "python -m csvkit_lite.cli cat tests/data/trips_2026-03.csv --format tsv",
                    trips_output(rng, 560),
                )
            ),
            act(Call("spill_read", {}), text="The output was spilled; reading the first chunk."),
            say(
                "All 560 rows have 6 columns, 0 malformed; `Main St, Apt 4` and `Kings Rd, North` stay whole."
            ),
        ),
        Command("model openai:gpt-4.1-mini"),
        turn(
            "now add a --delimiter option to the CLI and document it in the README",
            act(read("src/csvkit_lite/cli.py", CLI), read("README.md", README)),
            act(
                edit("src/csvkit_lite/cli.py", FORMAT_OPTION, DELIMITER_OPTION),
                edit(
                    "src/csvkit_lite/cli.py",
                    "rows = list(iter_rows(f))",
                    "rows = list(iter_rows(f, args.delimiter))",
                ),
                edit(
                    "README.md",
                    "--format tsv\n",
                    "--format tsv\n    csvkit-lite stats export.csv --delimiter ';'\n",
                ),
            ),
            act(bash("python -m pytest -q", pytest_output(rng, CSVKIT_TESTS | {"tests/test_cli.py": 13}))),
            say("Added `-d/--delimiter` (default `,`), passed to `iter_rows`, documented. 49 tests pass."),
            fails="overflow",
        ),
        turn(
            "commit it",
            act(
                bash(
                    "git add -A && git commit -m 'Keep quoted delimiters in split_row; add --delimiter'",
                    commit,
                )
            ),
            act(bash("git log --oneline -2", f"{COMMIT}\n3c9e1f2 Add stats command")),
            say("Committed as 7d2c4a9."),
        ),
        Command("tape.search query=delimiter"),
        turn(
            "用中文总结一下今天做了什么",
            say(
                "今天的工作：\n1. 浏览了 csvkit-lite 仓库，发现 `split_row` 没有处理引号；\n"
                '2. 修复了带逗号的引号字段和转义引号 `""`，48 个测试全部通过；\n'
                "3. 用 3 月的行程数据验证了 CLI 输出（560 行，没有错误）；\n"
                "4. 新增 `--delimiter` 选项并更新 README，提交为 7d2c4a9。"
            ),
        ),
        turn(
            "great, hand off this phase",
            act(
                handoff(
                    "phase/delimiter-done", "split_row handles quotes; --delimiter added; committed 7d2c4a9"
                )
            ),
            say("Done — the next phase starts from a clean context."),
        ),
    ]


CHANGELOG = """\
# Changelog

## 0.3.2

- Fix: `sort` crashed on empty files."""

CHANGELOG_040 = """\
## 0.4.0

- New: `stats` command.
- New: `--delimiter` option and `--format tsv`.
- Fix: quoted fields with commas and escaped quotes are parsed correctly.

## 0.3.2"""

SINCE_030 = f"""\
{COMMIT}
3c9e1f2 Add stats command
8b41d07 Sort: natural order for numeric columns
e02b9c1 CLI: --format tsv
b7f3a55 Reader: skip blank lines"""

GH_RUNS = """\
STATUS  TITLE                                       WORKFLOW  BRANCH  EVENT  ID
X       Keep quoted delimiters in split_row; add…  ci        main    push   9912345
✓       Add stats command                           ci        main    push   9911872
✓       Sort: natural order for numeric columns     ci        main    push   9907310"""

GH_FAILED = """\
{ci} src/csvkit_lite/cli.py:12:111: E501 Line too long (118 > 110)
{ci} Found 1 error.
{ci} ##[error]Process completed with exit code 1."""

BUILD = """\
* Creating isolated environment: venv+pip...
* Installing packages in isolated environment:
  - hatchling
* Building sdist...
* Building wheel from sdist
* Building wheel...
Successfully built csvkit_lite-0.4.0.tar.gz and csvkit_lite-0.4.0-py3-none-any.whl"""

UPLOAD = """\
Uploading distributions to https://upload.pypi.org/legacy/
Uploading csvkit_lite-0.4.0-py3-none-any.whl
100% ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ 9.1/9.1 kB • 00:00 • ?
Uploading csvkit_lite-0.4.0.tar.gz
100% ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ 8.4/8.4 kB • 00:00 • ?

View at:
https://pypi.org/project/csvkit-lite/0.4.0/"""

RELEASE_NOTES_JA = """\
csvkit-lite 0.4.0 リリースノート 🎉

- 新機能: `stats` コマンド
- 新機能: `--delimiter` オプション（区切り文字を指定）と `--format tsv`
- 修正: カンマや `""` を含む引用符付きフィールドを正しく読み込みます"""


def _release_before_reset(rng: random.Random, day: datetime) -> list[Item]:
    """The Telegram group tracking the csvkit-lite 0.4 release, before the tape was reset."""
    failed = GH_FAILED.format(ci=f"lint\truff check\t{day - timedelta(minutes=47):%Y-%m-%dT%H:%M:%SZ}")
    help_option = DELIMITER_OPTION.replace('default=",")', 'default=",", help="field separator")')
    return [
        turn("hi bub, please keep track of the v0.4 release for us", say("Sure — what should be in 0.4?")),
        turn(
            "what has been merged since v0.3.0?",
            act(
                bash("git log v0.3.0..HEAD --oneline", SINCE_030),
                text="Checking the history since the last tag.",
            ),
            say(
                "Five commits: `stats`, `--format tsv`, `--delimiter`, natural sort and blank-line skipping."
            ),
        ),
        Command(
            "tape.handoff name=topic/release-0.4 summary='0.4: stats, --delimiter, --format tsv, quoting fix'"
        ),
        turn(
            "draft the CHANGELOG entry",
            act(read("CHANGELOG.md", CHANGELOG)),
            act(edit("CHANGELOG.md", "## 0.3.2", CHANGELOG_040)),
            say("Drafted the 0.4.0 entry at the top of CHANGELOG.md."),
        ),
        turn(
            "CI is red on main, can you check?",
            act(
                bash("gh run list --limit 3", GH_RUNS),
                bash("gh run view 9912345 --log-failed", failed),
                text="Looking at the latest runs and the failed log.",
            ),
            act(edit("src/csvkit_lite/cli.py", DELIMITER_OPTION, help_option)),
            act(bash("ruff check src tests", "All checks passed!")),
            say("A lint failure (E501 in cli.py line 12). Fixed; `ruff check` is clean. Push when ready."),
        ),
        Command("tape.info"),
    ]


def _release_after_reset(rng: random.Random, day: datetime) -> list[Item]:
    push = "GIT_SSH_COMMAND='ssh -i ~/.ssh/csvkit_deploy' git push git@github.com:ana/csvkit-lite.git v0.4.0"
    no_https = "fatal: could not read Username for 'https://github.com': No such device or address"
    return [
        turn("リリースノートを日本語でも書いてもらえますか？短めでお願いします 🙏", say(RELEASE_NOTES_JA)),
        turn(
            "great, tag v0.4.0 and push it",
            act(
                bash("git tag -a v0.4.0 -m 'csvkit-lite 0.4.0'", ""),
                bash_fails("git push origin v0.4.0", 128, no_https),
            ),
            say("v0.4.0 is tagged locally; the push failed (no HTTPS credentials). Is there a deploy key?"),
        ),
        turn(
            "use the deploy key in ~/.ssh/csvkit_deploy",
            act(bash(push, "To github.com:ana/csvkit-lite.git\n * [new tag]         v0.4.0 -> v0.4.0")),
            say("Pushed v0.4.0 🎉"),
        ),
        turn(
            "publish it to PyPI",
            act(bash("rm -rf dist && python -m build", BUILD), text="Building a fresh sdist and wheel."),
            act(bash("twine upload dist/*", UPLOAD)),
            say("csvkit-lite 0.4.0 is on PyPI: https://pypi.org/project/csvkit-lite/0.4.0/ ✅"),
        ),
        turn(
            "close out the release topic",
            act(
                handoff(
                    "topic/release-0.4-done", "0.4.0 tagged, pushed with the deploy key, published to PyPI"
                )
            ),
            say("Release topic handed off ✅"),
        ),
        turn(
            "ありがとう！来週は stats コマンドの性能を見よう",
            say("了解です！大きな CSV のサンプルを用意しておきますね 📊"),
        ),
    ]


JOURNAL = """\
{at} pi weatherbot[1822]: INFO forecast request city=Lisbon user=402938475610293847
{at} pi weatherbot[1822]: WARNING open-meteo returned 400: Cannot initialize WeatherVariable from \
invalid String value ['temperature_2m_max', 'temperature_2m_min', 'precipitation_sum']
{at} pi weatherbot[1822]: ERROR Task exception was never retrieved
Traceback (most recent call last):
  File "/home/ana/src/weatherbot/src/weatherbot/bot.py", line 64, in forecast
    days = await provider.daily(city)
  File "/home/ana/src/weatherbot/src/weatherbot/providers/openmeteo.py", line 31, in daily
    return parse_daily(resp.json()["daily"])
KeyError: 'daily'"""

OPENMETEO = '''\
"""Open-Meteo client."""

import httpx

DAILY = ["temperature_2m_max", "temperature_2m_min", "precipitation_sum"]


async def daily(city):
    lat, lon = await geocode(city)
    params = {"latitude": lat, "longitude": lon, "daily": str(DAILY), "timezone": "auto"}
    async with httpx.AsyncClient(timeout=10) as client:
        resp = await client.get("https://api.open-meteo.com/v1/forecast", params=params)
    return parse_daily(resp.json()["daily"])
'''

SERVICE_STATUS = """\
● weatherbot.service - Discord weather bot
     Loaded: loaded (/home/ana/.config/systemd/user/weatherbot.service; enabled)
     Active: active (running) since {at} UTC; 2s ago
   Main PID: 2417 (python)"""

REGRESSION_TEST = """\
def test_daily_params_are_comma_separated(fake_client):
    run(daily("Lisbon"))
    assert fake_client.params["daily"] == "temperature_2m_max,temperature_2m_min,precipitation_sum"


def test_parse_daily():"""

RATELIMIT = '''\
"""Token bucket shared by all commands."""

import time


class Bucket:
    def __init__(self, rate: int = 30, per: float = 60.0) -> None:
        self.rate, self.per = rate, per
        self.tokens, self.stamp = float(rate), time.monotonic()
'''

POSTMORTEM = """\
# /forecast returned nothing ({day})

- Impact: /forecast failed for about ten hours.
- Cause: 4e1a9c2 sent `daily` as `str(list)`; Open-Meteo answered 400.
- Fix: join the fields with commas; regression test added.
- Follow-up: alert on the provider's 4xx rate.
"""

I18N_EN = '    "en": {"forecast": "Forecast for {city}", "max": "max", "min": "min", "rain": "rain"},'
I18N_JA = '    "ja": {"forecast": "{city}の天気予報", "max": "最高", "min": "最低", "rain": "降水量"},'
WEATHER_TESTS = {"tests/test_openmeteo.py": 6, "tests/test_i18n.py": 4, "tests/test_ratelimit.py": 3}


def _weatherbot_incident(rng: random.Random, day: datetime) -> list[Item]:
    """A Discord channel: a broken /forecast, a fix, a provider outage, a context error, Japanese replies."""
    broke = day - timedelta(hours=9, minutes=20)
    blame = f'4e1a9c2 (ana {broke:%Y-%m-%d %H:%M:%S} +0000 23)     params = {{..., "daily": str(DAILY), ...}}'
    status = SERVICE_STATUS.format(at=f"{day + timedelta(minutes=9):%a %Y-%m-%d %H:%M:%S}")
    openmeteo = "src/weatherbot/providers/openmeteo.py"
    postmortem = f"docs/postmortems/{day:%Y-%m-%d}-forecast-400.md"
    overloaded = (
        "Error code: 529 - {'type': 'error', 'error': {'type': 'overloaded_error', 'message': 'Overloaded'}}"
    )
    return [
        turn(
            "the bot stopped answering /forecast since this morning 😕",
            act(
                bash(
                    "journalctl --user -u weatherbot --since today -n 9 --no-pager",
                    JOURNAL.format(at=f"{day - timedelta(minutes=13):%b %d %H:%M:%S}"),
                ),
                text="Checking the service logs first.",
            ),
            act(read(openmeteo, OPENMETEO), bash(f"git blame -L 23,23 {openmeteo}", blame)),
            say(
                "Found it 🔍 Since 4e1a9c2 the request sends `daily=['temperature_2m_max', …]` (`str(DAILY)` "
                'instead of `",".join(DAILY)`). Open-Meteo answers 400 without `daily`, hence the KeyError. '
                "Shall I fix it and add a regression test?"
            ),
        ),
        turn(
            "yes please, fix it and add a regression test",
            act(edit(openmeteo, '"daily": str(DAILY)', '"daily": ",".join(DAILY)')),
            act(edit("tests/test_openmeteo.py", "def test_parse_daily():", REGRESSION_TEST)),
            act(
                bash(
                    "python -m pytest -q tests/test_openmeteo.py",
                    pytest_output(rng, {"tests/test_openmeteo.py": 6}),
                )
            ),
            act(
                bash(
                    "systemctl --user restart weatherbot && systemctl --user status weatherbot | head -4",
                    status,
                )
            ),
            say(
                "Fixed and restarted ✅ /forecast works again; the new test pins the comma-separated `daily`."
            ),
        ),
        Command(
            "tape.handoff name=incident/forecast-400 summary='daily param was str(list); fixed and tested'"
        ),
        turn(
            "can you also check that the rate limiter still lets 30 requests per minute through?",
            fails="provider",
            error=overloaded,
        ),
        turn(
            "try again please 🙏",
            act(read("src/weatherbot/ratelimit.py", RATELIMIT)),
            act(
                bash(
                    "python -m pytest -q tests/test_ratelimit.py",
                    pytest_output(rng, {"tests/test_ratelimit.py": 3}),
                )
            ),
            say(
                "The bucket still allows 30 requests per 60 s; the burst test passes. Nothing changed there."
            ),
        ),
        turn(
            "continue from the incident/forcast-400 handoff and write a short postmortem",
            fails="context",
            error="Anchor 'incident/forcast-400' was not found.",
        ),
        turn(
            "oops, typo: continue from incident/forecast-400 and write the postmortem",
            act(
                write(postmortem, POSTMORTEM.format(day=f"{day:%Y-%m-%d}")),
                text="Writing it under docs/postmortems/.",
            ),
            say(f"Postmortem written to {postmortem} 📝"),
        ),
        turn(
            "天気予報のメッセージを日本語でも返せるようにしてください（/forecast lang:ja）",
            act(read("src/weatherbot/i18n.py", f"MESSAGES = {{\n{I18N_EN}\n}}\n")),
            act(edit("src/weatherbot/i18n.py", I18N_EN, f"{I18N_EN}\n{I18N_JA}")),
            act(bash("python -m pytest -q", pytest_output(rng, WEATHER_TESTS))),
            say("対応しました ☀️ `/forecast lang:ja` で「東京の天気予報 — 最高 18°」のように返します。"),
        ),
        turn("thanks! 👍", say("Anytime 👋")),
    ]


CACHE = '''\
"""A small TTL cache for provider calls."""

import time
from typing import Any


class TTLCache:
    def __init__(self, ttl: float = 600.0) -> None:
        self.ttl, self.items = ttl, {}

    def get(self, key: str) -> Any | None:
        hit = self.items.get(key)
        if hit and hit[0] > time.time():
            return hit[1]
        return None

    def put(self, key: str, value: Any) -> None:
        self.items[key] = (time.time() + self.ttl, value)
'''

CACHE_TEST = """\
from weatherbot.cache import TTLCache


def test_entry_expires(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr("time.monotonic", lambda: now[0])
    cache = TTLCache(ttl=600)
    cache.put("Lisbon", 1)
    now[0] += 601
    assert cache.get("Lisbon") is None
"""

EXPIRY_FAILURE = """\
    def test_entry_expires(monkeypatch):
        ...
>       assert cache.get("Lisbon") is None
E       AssertionError: assert 1 is None

tests/test_cache.py:10: AssertionError"""

CACHED_DAILY = """\
_cache = TTLCache(ttl=600)


async def daily(city):
    if (hit := _cache.get(city)) is not None:
        return hit"""

CITIES = """\
    612 city=Lisbon
    388 city=Porto
    201 city=Tokyo
    133 city=Berlin
     74 city=Faro"""


def _weatherbot_cache(rng: random.Random, day: datetime) -> list[Item]:
    """A CLI session adding a cache to weatherbot, past a missing file and a failing test."""
    files = WEATHER_TESTS | {"tests/test_cache.py": 3}
    failing = {"tests/test_cache.py::test_entry_expires": EXPIRY_FAILURE}
    missing = tool_error(
        "fs_read", "[Errno 2] No such file or directory: 'src/weatherbot/cache.py'", "FileNotFoundError"
    )
    log = "~/.local/state/weatherbot/bot.log.1"
    commit = "[main 91c0b3e] Cache Open-Meteo forecasts for 10 minutes\n 3 files changed, 38 insertions(+)"
    return [
        turn(
            "add a 10-minute cache to the forecast fetcher so we stop hitting the API on every /forecast",
            act(
                read(
                    "src/weatherbot/providers/openmeteo.py",
                    OPENMETEO.replace("str(DAILY)", '",".join(DAILY)'),
                ),
                Call("fs_read", {"path": "src/weatherbot/cache.py"}, missing),
                text="Checking the provider and whether a cache module exists.",
            ),
            act(write("src/weatherbot/cache.py", CACHE), text="No cache module yet; creating one."),
            act(
                edit("src/weatherbot/providers/openmeteo.py", "async def daily(city):", CACHED_DAILY),
                write("tests/test_cache.py", CACHE_TEST),
            ),
            act(bash_fails("python -m pytest -q", 1, pytest_output(rng, files, failing))),
            act(
                edit("src/weatherbot/cache.py", "time.time()", "time.monotonic()"),
                text="The test patches time.monotonic; a cache should not follow wall-clock jumps anyway.",
            ),
            act(bash("python -m pytest -q", pytest_output(rng, files))),
            say("Added `TTLCache` (10 min, monotonic clock) in front of `daily()`. 16 tests pass."),
        ),
        Command("tape.info"),
        turn(
            "how much would it have saved yesterday?",
            act(
                bash(f"grep -c 'GET https://api.open-meteo.com' {log}", "1437"),
                bash(f"grep -o 'city=[A-Za-z]*' {log} | sort | uniq -c | sort -rn | head -5", CITIES),
            ),
            say("1437 API calls yesterday, 82% for five cities. A 10-minute cache caps that near 720."),
        ),
        turn(
            "nice. commit it with a good message",
            act(bash("git add -A && git commit -m 'Cache Open-Meteo forecasts for 10 minutes'", commit)),
            say("Committed as 91c0b3e."),
        ),
        turn(
            "hand off; next we refactor the slash commands",
            act(handoff("phase/cache-done", "TTL cache in front of Open-Meteo (10 min); committed 91c0b3e")),
            say("Handed off. Ready for the slash-command refactor."),
        ),
    ]


def _notes_memory(rng: random.Random, day: datetime) -> list[Item]:
    """Six weeks of notes kept in the memory zone of bub PR #33: saves, dailies, a prune, a clear."""

    def memory(prompt: str, tool: str, answer: str, **args: Any) -> Turn:
        return turn(prompt, act(Call(tool, args)), say(answer))

    return [
        memory(
            "remember: I prefer Python 3.12, type hints everywhere, and pytest over unittest",
            "memory_save",
            "Saved to long-term memory.",
            content="Prefers Python 3.12, type hints everywhere, pytest over unittest.",
        ),
        Pause(1),
        memory(
            "note for today: the csvkit-lite reader is 1.8x faster after the split_row rewrite",
            "memory_daily",
            "Noted in today's daily notes.",
            content="csvkit-lite reader: 1.8x faster after the split_row rewrite.",
        ),
        Pause(2),
        memory(
            "note: weatherbot forecast outage, root cause was str(list) in the request params",
            "memory_daily",
            "Added to today's notes.",
            content="weatherbot /forecast outage: str(list) in the request params (4e1a9c2).",
        ),
        Pause(9),
        memory(
            "today: started reading the Bub tape format docs 📼",
            "memory_daily",
            "Noted.",
            content="Bub tape docs 📼",
        ),
        memory(
            "also today: since 0.3 the archive .bak is re-serialized, not renamed",
            "memory_daily",
            "Appended to today's note.",
            content="Bub 0.3+: tape archives are re-serialized copies, not renames.",
        ),
        turn(
            "what do you remember about me?",
            act(Call("memory_show", {})),
            say("Python 3.12 with type hints and pytest. Recent notes: Bub tapes, weatherbot, csvkit."),
        ),
        memory(
            "remember too: 回答は短めに",
            "memory_save",
            "保存しました。",
            content="回答は短めに (keep answers short).",
        ),
        Pause(22),
        memory(
            "prune notes older than 30 days",
            "memory_prune",
            "Pruned the two oldest notes.",
            retention_days=30,
        ),
        turn(
            "close this planning phase",
            act(handoff("phase/planning-done", "Notes pruned to 30 days; preferences kept")),
            say("Handed off."),
        ),
        Pause(3),
        memory("forget everything, start fresh", "memory_clear", "Memory cleared."),
        memory(
            "remember: fresh start — concise answers and Python 3.12",
            "memory_save",
            "Saved.",
            content="Fresh start: prefers concise answers and Python 3.12.",
        ),
        memory(
            "note for today: 整理好了笔记，下周开始写 tapeview 的 memory 页面",
            "memory_daily",
            "记下了 ✍️",
            content="整理好了笔记，下周开始写 tapeview 的 memory 页面。",
        ),
    ]


def _legacy_session(rng: random.Random, day: datetime) -> list[Item]:
    """The same repo under bub 0.2.2 in February: the old vocabulary and no time field."""
    probe = "python -c 'from csvkit_lite.reader import split_row; print(split_row(\"a,b,c\"))'"
    return [
        turn(
            "what files are here?",
            act(Call("bash", {"cmd": "ls"}, "AGENTS.md\nREADME.md\npyproject.toml\nsrc\ntests")),
            say("README.md, AGENTS.md, pyproject.toml, src/ and tests/."),
        ),
        turn(
            "read the README",
            act(read("README.md", README)),
            say("csvkit-lite, a tiny dependency-free CSV toolkit."),
        ),
        Command("tape.handoff name=phase-1 summary='explored workspace'"),
        Command("tape.info"),
        turn(
            "please hand off to phase-2",
            act(handoff("phase-2", "ready to implement")),
            say("Handed off to phase-2."),
        ),
        turn(
            "write a first version of split_row in src/csvkit_lite/reader.py",
            act(write(READER_PATH, READER), text="Writing a first, plain version."),
            act(Call("bash", {"cmd": probe}, "['a', 'b', 'c']")),
            say("`split_row` splits on the delimiter; quoting is not handled yet."),
        ),
        turn(
            "does it handle quotes?",
            say('No: `"a,b",c` becomes three fields. We need a small state machine.'),
        ),
    ]


def write_bub_demo(root: Path, now: datetime | None = None) -> list[Path]:
    """Write a realistic Bub `tapes/` directory at `root`; the same `now` always gives the same bytes.

    Files of the same names are overwritten and other files are left alone, so clear `root` first
    to rewrite it: the archive's name follows `now`.
    """
    now = now or datetime.now(UTC)
    now = (now if now.tzinfo else now.replace(tzinfo=UTC)).astimezone(UTC)
    root.mkdir(parents=True, exist_ok=True)
    rng = random.Random("bub-demo/scripts")
    written: list[Path] = []

    def save(name: str, entries: Iterable[Entry]) -> None:
        with open(root / name, "w", encoding="utf-8", newline="\n") as f:
            f.writelines(bub_line(e) for e in entries)
        written.append(root / name)

    def tape(seed: str, days: float, **kwargs: Any) -> BubTape:
        # A whole second, so the first line of each tape shows the fraction-less ISO form too.
        return BubTape(
            random.Random(f"bub-demo/{seed}"), (now - timedelta(days=days)).replace(microsecond=0), **kwargs
        )

    def session(seed: str, days: float, script: Script, memory: bool = False, **kwargs: Any) -> BubTape:
        t = tape(seed, days, **kwargs)
        entries = t.bootstrap() + (t.open_memory() if memory else [])
        save(t.name + ".jsonl", [*entries, *t.play(script(rng, t.clock))])
        return t

    main = session("csvkit", 3.2, _csvkit_main)
    save(main.name + "__sidecar__spill.jsonl", main.sidecar)
    session("weatherbot-cli", 1.3, _weatherbot_cache, workspace=WEATHERBOT, model="openai:gpt-4.1")
    session(
        "weatherbot-discord",
        0.25,
        _weatherbot_incident,
        workspace=WEATHERBOT,
        session=DISCORD,
        model="openrouter:anthropic/claude-sonnet-4.5",
        sender="402938475610293847",
    )
    session("notes", 45, _notes_memory, memory=True, workspace=NOTES, model="openai:gpt-4.1-mini")
    session("legacy", 280, _legacy_session, model="openrouter:qwen/qwen3-coder-next", legacy=True)

    # The Telegram session was reset with `,tape.reset archive=true`: its earlier life is a .bak.
    telegram = {"session": TELEGRAM, "model": "openrouter:qwen/qwen3-coder-next", "sender": "528491736"}
    before = tape("telegram-1", 9, **telegram)
    old = [*before.bootstrap(), *before.play(_release_before_reset(rng, before.clock))]
    reset_at = before.clock + timedelta(days=6, hours=3, seconds=17)
    stamp = reset_at.strftime("%Y%m%dT%H%M%SZ")
    bak = root.resolve() / f"{before.name}.jsonl.{stamp}.bak"
    sidecar_bak = root.resolve() / f"{before.name}__sidecar__spill.jsonl.{stamp}.bak"
    save(bak.name, old)
    save(sidecar_bak.name, [])  # Bub archives every sidecar with the same stamp, even an empty one.
    after = BubTape(random.Random("bub-demo/telegram-2"), reset_at, **telegram)
    after.tick(0.001, 0.004)
    new = [*after.bootstrap(str(bak)), *after.reset_events(str(sidecar_bak))]
    after.tick(0.00003, 0.0001)
    reset = {"raw": "tape.reset archive=true", "name": "tape.reset", "status": "ok", "elapsed_ms": 3}
    new.append(after.command_event(reset | {"output": f"Archived: {bak}"}))
    after.played = 1  # the first message comes a while after the reset command
    save(after.name + ".jsonl", [*new, *after.play(_release_after_reset(rng, after.clock))])
    return sorted(written)


# -- an endless session, for benchmarks


def _random_turn(rng: random.Random) -> Item:
    module = rng.choice(["reader", "writer", "sniff", "stats", "sort", "cli"])
    func = rng.choice(
        ["split_row", "iter_rows", "quote_field", "guess_delimiter", "column_stats", "natural_key"]
    )
    path, test, count = f"src/csvkit_lite/{module}.py", f"tests/test_{module}.py", rng.randint(6, 30)
    body = "".join(
        f"    step_{i} = {rng.choice(['rows', 'len(rows)', 'sorted(rows)'])}\n"
        for i in range(rng.randint(4, 30))
    )
    source = f'def {func}(rows, delimiter=","):\n    """{func.replace("_", " ").capitalize()}."""\n{body}'
    edge = rng.choice(
        ["an empty file", "a trailing newline", "a BOM", "CRLF line endings", "a header-only file"]
    )
    pick = rng.random()
    if pick < 0.25:
        return turn(
            f"how does {func} in {module}.py work?",
            act(
                bash(
                    f"rg -n 'def {func}' src",
                    f'{path}:{rng.randint(5, 200)}:def {func}(rows, delimiter=","):',
                )
            ),
            act(read(path, source), text="Reading the function."),
            say(f"`{func}` walks the rows once; it does not handle {edge} yet."),
        )
    if pick < 0.45:
        tests = pytest_output(rng, {test: count})
        return turn(
            f"run the {module} tests",
            act(bash(f"python -m pytest -q {test}", tests)),
            say(f"All {count} pass."),
        )
    if pick < 0.70:
        name = f"{test}::test_{func}_{edge.split()[-1]}"
        report = f"    def test_{func}():\n>       assert {func}([]) == []\nE       IndexError\n\n{test}:12"
        return turn(
            f"{func} crashes on {edge}, fix it",
            act(read(path, source)),
            act(
                edit(path, "    step_0", "    if not rows:\n        return []\n    step_0"),
                text="Guarding the edge case.",
            ),
            act(
                bash_fails(
                    f"python -m pytest -q {test}", 1, pytest_output(rng, {test: count}, {name: report})
                )
            ),
            act(edit(path, "        return []", "        return [] if delimiter else None")),
            act(bash(f"python -m pytest -q {test}", pytest_output(rng, {test: count}))),
            say(f"Fixed `{func}` for {edge}; {count} tests pass."),
        )
    if pick < 0.82:
        other = rng.choice(["writer", "sniff", "stats"])
        sizes = f"  {rng.randint(40, 300)} {path}\n  {rng.randint(40, 300)} src/csvkit_lite/{other}.py"
        return turn(
            f"compare {module}.py and {other}.py — which one should own the delimiter logic?",
            act(
                read(path, source),
                read(f"src/csvkit_lite/{other}.py", source),
                bash("wc -l src/csvkit_lite/*.py", sizes),
            ),
            say(f"`{other}.py` already guesses delimiters; `{module}.py` should take one as a parameter."),
        )
    if pick < 0.92:
        return turn(
            "what changed since yesterday?",
            act(
                bash("git log --oneline --since=yesterday", f"{COMMIT}\n3c9e1f2 Add stats command"),
                bash("git diff --stat HEAD~2", f" {path} | {count} ++++--\n 1 file changed"),
            ),
            say("Two commits: the quoting fix and the stats command."),
        )
    if pick < 0.96:
        return Command("tape.info")
    return turn(
        rng.choice(["这个函数为什么这么慢？", "テストを追加してください"]),
        say("It copies every row. 用生成器更省内存。"),
    )


def bub_turns(
    rng: random.Random,
    start_id: int = 1,
    start_time: datetime | None = None,
    *,
    handoff_every: int = 40,
    prompt: str | None = None,
) -> Iterator[Entry]:
    """Endless entries of a csvkit-lite CLI session, as Bub 0.5.1 appends them.

    A tape starting at id 1 opens with the bootstrap anchor. Every `handoff_every` turns the
    session hands off, alternately by tool and by `,tape.handoff`. The system prompt defaults to
    the full ~2.5 KB one, which dominates the size of a real tape.
    """
    start_time = start_time or datetime.now(UTC)
    tape = BubTape(
        rng,
        start_time,
        start_id=start_id,
        model="openai:gpt-4.1-mini",
        prompt=prompt or system_prompt(CSVKIT),
    )
    if start_id == 1:
        yield from tape.bootstrap()
    turns = 0
    while True:
        turns += 1
        phase, due = divmod(turns, handoff_every)
        if due:
            item = _random_turn(rng)
        elif phase % 2:
            item = turn(
                "let's wrap up this phase",
                act(handoff(f"phase/{phase}", f"Phase {phase} done")),
                say("Done."),
            )
        else:
            item = Command(f"tape.handoff name=phase/{phase} summary='Phase {phase} done'")
        yield from tape.play([item])
