"""Records demo Bub tapes entry by entry, in the exact line format of Bub 0.5.1 and 0.2.2 (formats/bub.md)."""

from __future__ import annotations

import hashlib
import json
import random
import shlex
import string
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import date, datetime, timedelta
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
