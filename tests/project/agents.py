"""Live agents of the four families, for the tests: each writes its files as the real program does.

One class per family. `step()` is one unit of the agent's own writing (a turn, a command, a
save); `Runner` calls it in a forked process until a stop event or a deadline. Each agent
records what it wrote, so that afterwards a test can check that all of it is on disk (and in
the index) and that nothing else changed but what the dashboard reported writing.

How each one writes follows /work/shared/formats/ (the section of each family on writing):

- Bub (bub.md §2.2, §3, §4, §5, §6): a turn writes nothing while it runs; at its end the turn's
  entries are appended in one burst (a spill sidecar's first, then the tape's), each line one
  write() on a fresh O_APPEND descriptor after a tail-read of the file from the cached offset,
  with id = the last read entry's id + 1 (so a dashboard's handoff is read and counted). A reset
  (`,tape.reset archive=true`) re-serializes the entries into `<tape>.jsonl.<stamp>.bak` (and
  the sidecar's into its own, 0 bytes when empty), unlinks both and starts the tape again at
  id 1 with `session/start` (`archived` in its state), the sidecar events and the command. A
  crash leaves half a line; the restarted process reads the file afresh, skips the half line
  (its offset moves past it) and appends right after it, so its next line is glued on.
- nanobot (nanobot.md §2.2, §2.5, §2.7, §3): the session in memory is authoritative; every save
  (the user's message persisted early, the turn's end) rewrites the whole file: a new
  `.<name>.<16 hex>.tmp`, then os.replace, under `.session-files.lock`. Consolidation appends
  one line to history.jsonl (cursor = max(.cursor, last cursor) + 1, then .cursor rewritten),
  inserts the hidden summary marker, moves last_archived/last_consolidated to it and saves;
  Dream then edits MEMORY.md in place (read, replace, Path.write_text: truncate then write) and
  moves .dream_cursor.
- yachiyo (yachiyo.md §A.2-§A.6): every mutation reads the whole file afresh and writes it to
  `<file>.tmp-<pid>-<ms>` (memory.json: `-<random7>` more), then renames it over: each message
  and each event rewrites the session file and then index.json's summary of it; memory_write
  adds (or merges into) an entry of memory.json the same way.
- araliya (araliya.md §B.2-§B.5): transcript_append re-parses transcript.md, appends, caps and
  rewrites it (File::create + write_all); kv_set and the sessions.json update are fs::write.
  All truncate first and then write: no temp file, no rename, no lock.

`TORN_GAP` keeps a non-atomic rewrite's file truncated for a moment before its bytes arrive.
The real window is the time between two system calls; the gap only makes it long enough for a
concurrent reader to land in it now and then, which is what a reader must survive.
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import json
import multiprocessing
import multiprocessing.synchronize
import os
import random
import secrets
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

_FORK = multiprocessing.get_context("fork")  # the agent object goes to the child as it is
TORN_GAP = 0.001  # seconds between truncating a file and writing it again (non-atomic writers)
ORIGIN = "tapeview"  # meta.origin of the dashboard's own lines


class Runner:
    """Runs `agent.step()` in a process of its own, as the real agent runs beside the dashboard.

    The child is forked with the agent as it is, steps until `stop` is set or `seconds` have
    passed, and sends back the agent's state (what it wrote) through a pipe: `join()` puts it
    into the parent's agent object. The agent waits through `agent.wait` (the stop event), so
    stopping never waits out a pause. An exception in the child comes back in `error`.
    A process of its own also keeps the agent's timing its own: as a thread it would queue for
    the GIL behind the test's HTTP clients, stretching windows the real program keeps short.
    """

    def __init__(self, agent: Agent, stop: multiprocessing.synchronize.Event, seconds: float) -> None:
        self.agent, self.stop, self.seconds = agent, stop, seconds
        self.error: str | None = None
        self.steps = 0
        self._parent, self._child = _FORK.Pipe(duplex=False)
        self.process = _FORK.Process(target=self._run, name=type(agent).__name__, daemon=True)

    @property
    def name(self) -> str:
        return self.process.name

    def start(self) -> None:
        self.process.start()
        self._child.close()

    def join(self, timeout: float) -> None:
        """Wait for the child and take over what it recorded (idempotent)."""
        if self._parent.closed:
            return
        if self._parent.poll(timeout):
            try:
                state, self.steps, self.error = self._parent.recv()
            except EOFError:
                state, self.error = None, "the agent's process died without a word"
            if state is not None:
                self.agent.__dict__.update(state)
        else:
            self.error = f"the agent's process did not finish within {timeout} s"
            self.process.kill()
        self.process.join(5)
        self._parent.close()

    def is_alive(self) -> bool:
        return self.process.is_alive()

    def _run(self) -> None:
        agent, error = self.agent, None
        agent.wait = self.stop.wait
        deadline = time.monotonic() + self.seconds
        try:
            while not self.stop.is_set() and time.monotonic() < deadline:
                agent.step()
                self.steps += 1
                self.stop.wait(agent.rng.uniform(*agent.pause))
        except BaseException as exc:  # noqa: BLE001 - the test reports whatever the agent hit
            error = "".join(traceback.format_exception(exc))
        state = {k: v for k, v in agent.__dict__.items() if k != "wait"}
        self._child.send((state, self.steps, error))
        self._child.close()


class Agent:
    """What a Runner needs of an agent: one step, a pause between steps, a seeded random source."""

    pause: tuple[float, float] = (0.1, 0.5)

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.wait: Callable[[float], object] = time.sleep

    def step(self) -> None:
        raise NotImplementedError


def rewrite_in_place(path: Path, data: bytes, gap: float = TORN_GAP) -> None:
    """A non-atomic rewrite: truncate (O_TRUNC), then write the whole buffer."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        if gap:
            time.sleep(gap)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def replace_atomically(path: Path, data: bytes, tmp: Path) -> None:
    """Write `tmp` (created fresh) and rename it over `path`, without fsync."""
    with open(tmp, "xb") as f:
        f.write(data)
    os.replace(tmp, path)


# --- Bub ------------------------------------------------------------------------------------------

BUB_WORKSPACE = "9d11f561157e98d3"  # md5 of the workspace path of the sample tapes, first 16 hex
SYSTEM_PROMPT = (
    "You are Bub, a coding agent working in the user's workspace. Use tools to read and change "
    "files; keep answers short. " * 24
).strip()  # about 2.5 KB, like the real prompt of the samples


def bub_tape_name(session_id: str) -> str:
    """`md5(workspace)[:16] + "__" + md5(session_id)[:16]` (formats/bub.md §1)."""
    return f"{BUB_WORKSPACE}__{hashlib.md5(session_id.encode()).hexdigest()[:16]}"


def bub_encode(entry: dict) -> bytes:
    """One line as Bub writes it: json.dumps(asdict(entry), ensure_ascii=False) + newline."""
    return (json.dumps(entry, ensure_ascii=False) + "\n").encode()


def bub_entry(raw: bytes) -> dict | None:
    """What TapeFile.entry_from_payload accepts: id an int, kind a str, payload a dict."""
    try:
        obj = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(obj, dict):
        return None
    ok = (
        type(obj.get("id")) is int
        and isinstance(obj.get("kind"), str)
        and isinstance(obj.get("payload"), dict)
    )
    return obj if ok else None


def now_iso() -> str:
    return datetime.now(UTC).isoformat()


def run_id() -> str:
    return f"run-{datetime.now(UTC):%Y%m%dT%H%M%S%fZ}"


@dataclass
class Line:
    """One line the agent appended: its bytes, where they landed, and its place in its burst."""

    data: bytes
    offset: int
    burst: int
    first: bool
    last: bool  # False for every line of a burst a crash cut short


@dataclass
class Crash:
    """The half line a crash left, at `offset` of the tape."""

    offset: int
    residue: bytes
    burst: int


@dataclass
class Generation:
    """One life of a tape file, from its creation (or the agent's start) to its reset."""

    start: int  # bytes already in the file when it began (the sample's own lines)
    start_lines: int  # how many entries those bytes hold
    lines: list[Line] = field(default_factory=list)
    crash: Crash | None = None
    archive: Path | None = None  # the .bak the reset wrote
    archived: bytes = b""  # what the reset wrote into it
    lost: bytes = b""  # bytes a guest appended after the archive was read and before the unlink


class BubTape:
    """One tape as bub 0.5.1's FileTapeStore keeps it (formats/bub.md §3), plus what was written."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.cache: list[dict] = []
        self.offset = 0
        self.read()
        size = path.stat().st_size if path.exists() else 0
        self.generations = [Generation(size, len(self.cache))]

    @property
    def generation(self) -> Generation:
        return self.generations[-1]

    def restart(self) -> None:
        """A new process: nothing cached, the file is read from its first byte on the next append."""
        self.cache, self.offset = [], 0

    def read(self) -> list[dict]:
        """`_read_locked`: parse from the cached offset to EOF, bad lines (a half one too) skipped."""
        try:
            st = self.path.stat()
        except FileNotFoundError:
            self.cache, self.offset = [], 0
            return []
        if st.st_size < self.offset:
            self.cache, self.offset = [], 0
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            data = f.read()
        for raw in data.split(b"\n"):
            entry = bub_entry(raw) if raw.strip() else None
            if entry is not None:
                self.cache.append(entry)
        self.offset += len(data)
        return list(self.cache)

    def append(
        self, kind: str, payload: dict, meta: dict, date: str, burst: int, first: bool, last: bool
    ) -> Line:
        """Tail-read, id = last id + 1, one write() on a fresh O_WRONLY|O_CREAT|O_APPEND descriptor."""
        self.read()
        entry = {
            "id": self.cache[-1]["id"] + 1 if self.cache else 1,
            "kind": kind,
            "payload": payload,
            "meta": meta,
            "date": date,
        }
        data = bub_encode(entry)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            written = os.write(fd, data)
            end = os.lseek(fd, 0, os.SEEK_CUR)  # tell(): just past our line
        finally:
            os.close(fd)
        assert written == len(data), f"short write to {self.path.name}"
        self.cache.append(entry)
        self.offset = end
        line = Line(data, end - len(data), burst, first, last)
        self.generation.lines.append(line)
        return line

    def write_half(self, kind: str, payload: dict, meta: dict, date: str, burst: int) -> None:
        """The crash: the first half of the next line reaches the file, no newline, nothing more."""
        self.read()
        entry = {"id": self.cache[-1]["id"] + 1, "kind": kind, "payload": payload, "meta": meta, "date": date}
        data = bub_encode(entry)
        half = data[: len(data) // 2]
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, half)
            end = os.lseek(fd, 0, os.SEEK_CUR)
        finally:
            os.close(fd)
        self.generation.crash = Crash(end - len(half), half, burst)

    def archive(self, stamp: str) -> Path:
        """Reset, step 1: `<tape>.jsonl.<stamp>.bak`, opened with "w", the entries re-serialized."""
        entries = self.read()
        bak = self.path.with_name(f"{self.path.name}.{stamp}.bak")
        data = b"".join(bub_encode(e) for e in entries)
        with open(bak, "wb") as f:
            f.write(data)
        self.generation.archive, self.generation.archived = bak, data
        return bak

    def unlink(self) -> None:
        """Reset, step 2: `store.reset()` unlinks the file and clears the cache."""
        # Not Bub's: what a guest appended since the archive read the file is lost with it.
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                self.generation.lost = f.read()
        except FileNotFoundError:
            pass
        self.path.unlink(missing_ok=True)
        self.cache, self.offset = [], 0
        self.generations.append(Generation(0, 0))


class BubAgent(Agent):
    """A Bub 0.5.1 gateway serving two sessions of one workspace (formats/bub.md).

    `main` has a spill sidecar and is reset now and then (`reset_every` seconds); `other` is the
    tape the crash hits once, `crash_after` seconds in; the process is back `restart_seconds`
    later. Every line written is kept per tape (`tapes[path].generations`).
    """

    pause = (0.15, 0.8)  # the model's time between turns: often past a 0.3 s quiet period

    def __init__(
        self,
        main: Path,
        other: Path,
        seed: int = 1,
        *,
        reset_every: float = 6.0,
        crash_after: float | None = 4.0,
        restart_seconds: float = 2.0,
        line_gap: float = 0.002,
    ) -> None:
        super().__init__(seed)
        self.main, self.other = main, other
        self.sidecar = main.with_name(main.stem + "__sidecar__spill.jsonl")
        self.tapes = {p: BubTape(p) for p in (main, self.sidecar, other)}
        self.started = time.monotonic()
        self.last_reset = self.started
        self.reset_every = reset_every
        self.crash_after = crash_after
        self.restart_seconds = restart_seconds
        self.line_gap = line_gap
        self.crashed_at: float | None = None
        self.restarted_at: float | None = None
        self.resume_other = False
        self.bursts = 0
        self.turns = self.resets = self.spills = 0
        self.last_stamp = ""

    # The step: one turn, command or reset on one of the tapes.

    def step(self) -> None:
        elapsed = time.monotonic() - self.started
        if self.crash_after is not None and self.crashed_at is None and elapsed >= self.crash_after:
            self._crash()
            return
        if self.main_due_for_reset():
            self._reset()
            return
        tape = self.main if self.rng.random() < 0.6 else self.other
        if self.resume_other:  # back from the crash, the user retries the turn it cut short
            tape, self.resume_other = self.other, False
        roll = self.rng.random()
        self.turns += 1
        if tape == self.main and roll < 0.2:
            self._spill_turn()
        elif roll < 0.3:
            self._burst(tape, [self._command("tape.info", "name: ...\nentries: ...")])
        elif roll < 0.4:
            self._burst(tape, self._error_turn(tape))
        elif roll < 0.7:
            self._burst(tape, self._tool_turn(tape))
        else:
            self._burst(tape, self._plain_turn(tape))

    def main_due_for_reset(self) -> bool:
        return time.monotonic() - self.last_reset >= self.reset_every

    # Bursts: a turn's entries, appended at its end, each line its own write (§2.2, §5).

    def _burst(self, path: Path, entries: list[tuple[str, dict, dict]]) -> None:
        self.bursts += 1
        date = now_iso()  # created during the turn, written at its end: dates lag the file order
        tape = self.tapes[path]
        for n, (kind, payload, meta) in enumerate(entries):
            tape.append(kind, payload, meta, date, self.bursts, n == 0, n == len(entries) - 1)
            if self.line_gap:
                time.sleep(self.rng.uniform(0, self.line_gap))

    def _prompt(self, path: Path, text: str) -> str:
        channel = "$cli|chat_id=local" if path == self.main else "$telegram|chat_id=4242"
        sender = "human" if path == self.main else "10001"
        return f"sender_id={sender}|channel={channel}\n---Date: {datetime.now(UTC):%Y-%m-%dT%H:%M:%S}+00:00---\n{text}"

    def _usage(self) -> dict:
        prompt = self.rng.randint(1800, 4800)
        done = self.rng.randint(30, 90)
        return {
            "completion_tokens": done,
            "prompt_tokens": prompt,
            "total_tokens": prompt + done,
            "prompt_tokens_details": {"cached_tokens": 1536},
        }

    def _loop_start(self, prompt: str) -> list[tuple[str, dict, dict]]:
        model = "openai:gpt-4o-mini"
        start = {"model": model, "prompt": prompt, "allowed_skills": None, "allowed_tools": None}
        return [
            ("event", {"name": "loop.start", "data": start}, {}),
            ("event", {"name": "loop.step.start", "data": {"step": 1, "prompt": prompt}}, {}),
        ]

    def _run(self, run: dict, status: str = "ok") -> tuple[str, dict, dict]:
        data = {"status": status, "usage": self._usage(), "model": "openai:gpt-4o-mini"}
        if status != "ok":
            data = {"status": status, "model": "openai:gpt-4o-mini"}
        return ("event", {"name": "run", "data": data}, run)

    def _step_end(self, step: int, status: str) -> tuple[str, dict, dict]:
        data = {"step": step, "elapsed_ms": self.rng.randint(1, 900), "status": status, "date": now_iso()}
        return ("event", {"name": "loop.step", "data": data}, {})

    def _plain_turn(self, path: Path) -> list[tuple[str, dict, dict]]:
        prompt = self._prompt(path, f"turn {self.bursts + 1}: what changed since the last run?")
        run = {"run_id": run_id()}
        return [
            *self._loop_start(prompt),
            ("system", {"content": SYSTEM_PROMPT}, run),
            ("message", {"role": "user", "content": prompt}, run),
            ("message", {"role": "assistant", "content": f"Nothing new since turn {self.bursts}."}, run),
            self._run(run),
            self._step_end(1, "ok"),
        ]

    def _tool_turn(self, path: Path) -> list[tuple[str, dict, dict]]:
        n = self.bursts + 1
        prompt = self._prompt(path, f"turn {n}: how many lines does src/parser.py have? 中文也可以")
        first, second = {"run_id": run_id()}, {"run_id": run_id()}
        call = {
            "id": f"call_wc_{n:04d}",
            "function": {"arguments": '{"command": "wc -l src/parser.py"}', "name": "bash"},
            "type": "function",
        }
        return [
            *self._loop_start(prompt),
            ("system", {"content": SYSTEM_PROMPT}, first),
            ("message", {"role": "user", "content": prompt}, first),
            ("tool_call", {"calls": [call], "content": "Let me count."}, first),
            ("tool_result", {"results": [f"{40 + n} src/parser.py"]}, first),
            self._run(first),
            self._step_end(1, "continue"),
            ("event", {"name": "loop.step.start", "data": {"step": 2, "prompt": None}}, {}),
            ("system", {"content": SYSTEM_PROMPT}, second),
            ("message", {"role": "assistant", "content": f"src/parser.py has {40 + n} lines."}, second),
            self._run(second),
            self._step_end(2, "ok"),
        ]

    def _error_turn(self, path: Path) -> list[tuple[str, dict, dict]]:
        """A turn that fails at the model call: system, error, run (error), no loop.step (§4)."""
        run = {"run_id": run_id()}
        error = {"kind": "not_found", "message": "Anchor 'phase/missing' was not found."}
        return [("system", {"content": SYSTEM_PROMPT}, run), ("error", error, run), self._run(run, "error")]

    def _command(self, name: str, output: str, raw: str | None = None) -> tuple[str, dict, dict]:
        data = {
            "raw": raw or name,
            "name": name,
            "status": "ok",
            "elapsed_ms": 0,
            "output": output,
            "date": now_iso(),
        }
        return ("event", {"name": "command", "data": data}, {})

    def _spill_turn(self) -> None:
        """A tool output too big for the tape: chunks and manifest in the sidecar, then the turn (§2.1)."""
        n = self.bursts + 1
        handle = uuid.uuid4().hex
        output = "\n".join(str(i) for i in range(1, self.rng.randint(3000, 6000)))
        chunks = [output[i : i + 16384] for i in range(0, len(output), 16384)]
        run = {"run_id": run_id()}
        sidecar: list[tuple[str, dict, dict]] = []
        for c, chunk in enumerate(chunks):
            sidecar.append(("anchor", {"name": f"spill/{handle}/chunk/{c}"}, {}))
            sidecar.append(("tool_result", {"results": [chunk]}, {"spill_handle": handle, "spill_chunk": c}))
        manifest = {
            "handle": handle,
            "chunks": len(chunks),
            "bytes": len(output),
            "chars": len(output),
            "lines": output.count("\n") + 1,
            "tool": "bash",
        }
        sidecar.append(("anchor", {"name": f"spill/{handle}/manifest"}, {}))
        sidecar.append(
            ("event", {"name": "spill.manifest", "data": manifest}, {"spill_handle": handle, **run})
        )
        prompt = self._prompt(self.main, f"turn {n}: run the long test listing")
        call = {
            "id": f"call_seq_{n:04d}",
            "function": {"arguments": '{"command": "seq 1 6000"}', "name": "bash"},
            "type": "function",
        }
        preview = (
            f"[tool output spilled: {len(output):,} bytes in {len(chunks)} chunks; handle: {handle}]\n"
            f"[read with: spill_read(handle='{handle}', cursor=0, count=1, from_end=False)]\n" + output[:2000]
        )
        spill_write = {
            "status": "ok",
            "handle": handle,
            "bytes": len(output),
            "chunks": len(chunks),
            "tool": "bash",
        }
        second = {"run_id": run_id()}
        main = [
            *self._loop_start(prompt),
            ("event", {"name": "spill.write", "data": spill_write}, {**run, "context": False}),
            ("system", {"content": SYSTEM_PROMPT}, run),
            ("message", {"role": "user", "content": prompt}, run),
            ("tool_call", {"calls": [call]}, run),
            ("tool_result", {"results": [preview]}, run),
            self._run(run),
            self._step_end(1, "continue"),
            ("event", {"name": "loop.step.start", "data": {"step": 2, "prompt": None}}, {}),
            ("system", {"content": SYSTEM_PROMPT}, second),
            (
                "message",
                {"role": "assistant", "content": "The listing is complete; it is in the spill."},
                second,
            ),
            self._run(second),
            self._step_end(2, "ok"),
        ]
        # merge_back: the sidecar's entries first, then the tape's (§5).
        self._burst(self.sidecar, sidecar)
        self._burst(self.main, main)
        self.spills += 1

    def _reset(self) -> None:
        """`,tape.reset archive=true` (§6): archives, unlink, then the new tape's first burst."""
        stamp = f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}"
        if stamp == self.last_stamp:
            return  # a second reset within the second would overwrite the first's archive
        self.last_stamp = stamp
        tape, sidecar = self.tapes[self.main], self.tapes[self.sidecar]
        bak = tape.archive(stamp)
        side_bak = sidecar.archive(stamp)
        tape.unlink()
        sidecar.unlink()
        state = {"owner": "human", "archived": str(bak)}
        reason = {"status": "ok", "reason": "tape.reset"}
        context = {"context": False}
        self._burst(
            self.main,
            [
                ("anchor", {"name": "session/start", "state": state}, {}),
                ("event", {"name": "handoff", "data": {"name": "session/start", "state": state}}, {}),
                (
                    "event",
                    {
                        "name": "sidecar.archive",
                        "data": {"sidecar": "spill", **reason, "archive": str(side_bak)},
                    },
                    context,
                ),
                ("event", {"name": "sidecar.reset", "data": {"sidecar": "spill", **reason}}, context),
                self._command("tape.reset", f"Archived: {bak}", "tape.reset archive=true"),
            ],
        )
        self.resets += 1
        self.last_reset = time.monotonic()

    def _crash(self) -> None:
        """The process dies while merging a turn: some lines, then half of the next one (§4 rule 6)."""
        entries = self._tool_turn(self.other)
        cut = self.rng.randint(2, len(entries) - 2)
        self.bursts += 1
        tape = self.tapes[self.other]
        date = now_iso()
        for n, (kind, payload, meta) in enumerate(entries[:cut]):
            tape.append(kind, payload, meta, date, self.bursts, n == 0, False)
        kind, payload, meta = entries[cut]
        tape.write_half(kind, payload, meta, date, self.bursts)
        self.crashed_at = time.monotonic()
        self.wait(self.restart_seconds)  # the process is down
        for t in self.tapes.values():
            t.restart()
        self.restarted_at = time.monotonic()
        self.resume_other = True


def split_lines(data: bytes) -> list[tuple[int, bytes]]:
    """(offset, line with its newline) of each line; a last line without one is kept as it is."""
    out, offset = [], 0
    for raw in data.splitlines(keepends=True):
        out.append((offset, raw))
        offset += len(raw)
    return out


def is_ours(raw: bytes) -> bool:
    entry = bub_entry(raw)
    return entry is not None and isinstance(entry.get("meta"), dict) and entry["meta"].get("origin") == ORIGIN


@dataclass
class DiskLine:
    """A line of a tape on disk, as the walk over what the agent wrote classified it."""

    offset: int
    raw: bytes
    what: str  # sample | agent | tapeview | residue | glued
    line: Line | None = None  # the agent's line, for agent and glued


def walk(gen: Generation, data: bytes, *, archived: bool = False) -> tuple[list[DiskLine], list[str]]:
    """Classify every line of one generation's bytes (the live file, or its .bak), and what is wrong.

    Each line must be one of: the sample's own (before the agent began), the agent's next line
    (in the order written, byte for byte), one of the dashboard's lines (meta.origin tapeview),
    or, at the crash's offset, the residue closed by a newline or glued to the agent's next line.
    A .bak holds the entries re-serialized: the sample's lines are counted, not compared.
    """
    lines, problems, i = [], [], 0
    items = split_lines(data)
    if archived:
        skip = gen.start_lines
        head, items = items[:skip], items[skip:]
    else:
        head = [(o, r) for o, r in items if o < gen.start]
        items = [(o, r) for o, r in items if o >= gen.start]
    lines += [DiskLine(o, r, "sample") for o, r in head]
    crash = gen.crash if not archived else None
    for offset, raw in items:
        expected = gen.lines[i] if i < len(gen.lines) else None
        if expected is not None and raw == expected.data:
            lines.append(DiskLine(offset, raw, "agent", expected))
            i += 1
        elif crash is not None and offset == crash.offset:
            if raw == crash.residue + b"\n":
                lines.append(DiskLine(offset, raw, "residue"))
            elif expected is not None and raw == crash.residue + expected.data:
                lines.append(DiskLine(offset, raw, "glued", expected))
                i += 1
            else:
                problems.append(
                    f"at byte {offset}: the crash residue is followed by something else: {raw[:200]!r}"
                )
        elif is_ours(raw):
            lines.append(DiskLine(offset, raw, "tapeview"))
        else:
            want = expected.data[:120] if expected else b"(nothing more)"
            problems.append(
                f"at byte {offset}: unexpected line {raw[:200]!r}; the agent's next line is {want!r}"
            )
    if i < len(gen.lines):
        problems.append(
            f"{len(gen.lines) - i} of the agent's lines are not on disk, from {gen.lines[i].data[:200]!r}"
        )
    return lines, problems


# --- nanobot --------------------------------------------------------------------------------------


def nanobot_stem(key: str) -> str:
    return base64.urlsafe_b64encode(key.encode()).decode().rstrip("=")


def naive_now() -> str:
    """nanobot's timestamps: naive local time, microseconds only when non-zero."""
    return datetime.now().isoformat()


MARKER = "Continue the active task from the working-memory checkpoint above."


class NanobotAgent(Agent):
    """A nanobot 0.3.5 gateway with one chat (formats/nanobot.md §2.7, §3).

    Every `consolidate_every`-th step compacts the session (history entry, hidden marker, archive
    pointer) and runs Dream on MEMORY.md (one more bullet, written in place).
    """

    pause = (0.1, 0.4)

    def __init__(
        self, data_dir: Path, key: str = "telegram:8123456789", seed: int = 2, consolidate_every: int = 4
    ) -> None:
        super().__init__(seed)
        self.key = key
        self.workspace = data_dir / "workspace"
        wsid = (self.workspace / ".nanobot" / "workspace-id").read_text().strip()
        self.folder = data_dir / "sessions" / wsid
        self.path = self.folder / f"{nanobot_stem(key)}.jsonl"
        self.memory = self.workspace / "memory" / "MEMORY.md"
        self.history = self.workspace / "memory" / "history.jsonl"
        self.consolidate_every = consolidate_every
        # Loaded once: from here on the session in memory is what every save writes (§2.7).
        self.metadata, self.provider_state, self.messages = self._load()
        self.saves = 0
        self.steps = 0
        self.history_written: list[dict] = []
        self.bullets: list[str] = []
        self.memory_written: list[str] = []  # every MEMORY.md text Dream wrote
        # Each Dream edit as (when it read MEMORY.md, when it had written it back, what it read):
        # time.monotonic(), to compare with the dashboard's edits made meanwhile.
        self.dreams: list[tuple[float, float, str]] = []
        self.markers: list[int] = []  # the index of each summary marker

    def _load(self) -> tuple[dict, dict | None, list[dict]]:
        metadata, provider_state, messages = None, None, []
        for raw in self.path.read_text(encoding="utf-8").split("\n"):  # never splitlines (U+2028)
            if not raw.strip():
                continue
            record = json.loads(raw)
            if record.get("_type") == "metadata":
                metadata = record
            elif record.get("_type") == "provider_state":
                provider_state = record
            else:
                messages.append(record)
        assert metadata is not None, f"{self.path} has no metadata line"
        return metadata, provider_state, messages

    def step(self) -> None:
        self.steps += 1
        n = self.steps
        self.messages.append(
            {
                "role": "user",
                "content": f"Live turn {n}: anything new on atlas? 日本語も",
                "timestamp": naive_now(),
            }
        )
        self.save()  # the user's message is persisted early
        self.wait(self.rng.uniform(0.02, 0.12))  # the model works
        started = time.monotonic()
        if n % 2:
            call_id = f"toolu_live{n:04d}{secrets.token_hex(6)}"
            call = {
                "id": call_id,
                "type": "function",
                "function": {"name": "read_file", "arguments": json.dumps({"path": "memory/MEMORY.md"})},
            }
            self.messages.append(
                {"role": "assistant", "content": "", "tool_calls": [call], "timestamp": naive_now()}
            )
            self.messages.append(
                {
                    "role": "tool",
                    "tool_call_id": call_id,
                    "name": "read_file",
                    "content": "# Long-term Memory\n…",
                    "timestamp": naive_now(),
                }
            )
        latency = int((time.monotonic() - started) * 1000) + 40
        self.messages.append(
            {
                "role": "assistant",
                "content": f"Turn {n}: all quiet on atlas.",
                "timestamp": naive_now(),
                "latency_ms": latency,
            }
        )
        self.save()
        if n % self.consolidate_every == 0:
            self.consolidate(n)

    def save(self) -> None:
        """`_save_unlocked` under the folder's FileLock: metadata, provider_state, messages; os.replace."""
        self.metadata["updated_at"] = naive_now()
        records = [self.metadata, *([self.provider_state] if self.provider_state else []), *self.messages]
        data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode()
        with open(self.folder / ".session-files.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                tmp = self.folder / f".{self.path.name}.{secrets.token_hex(8)}.tmp"
                replace_atomically(self.path, data, tmp)
                (self.folder / f"{self.path.stem}.checkpoint.json").unlink(missing_ok=True)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
        self.saves += 1

    def consolidate(self, n: int) -> None:
        """Compaction, then Dream (§2.5, §3.1, §3.2)."""
        summary = f"Live session chunk {n}: Mara checked atlas; nothing new."
        # MemoryArchiver: one history line, then .cursor.
        cursor_file = self.workspace / "memory" / ".cursor"
        last = 0
        for raw in self.history.read_text(encoding="utf-8").split("\n"):
            if raw.strip():
                last = max(last, int(json.loads(raw)["cursor"]))
        cursor = max(int(cursor_file.read_text() or 0), last) + 1
        entry = {
            "cursor": cursor,
            "timestamp": f"{datetime.now():%Y-%m-%d %H:%M}",
            "content": summary,
            "session_key": self.key,
        }
        with open(self.history, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry, ensure_ascii=False) + "\n")
        cursor_file.write_text(str(cursor))
        self.history_written.append(entry)
        # commit_summary_checkpoint: the marker, _last_summary, the pointer, then a save.
        index = len(self.messages)
        self.messages.append(
            {"role": "user", "content": MARKER, "_hidden_history": True, "timestamp": naive_now()}
        )
        self.metadata["metadata"]["_last_summary"] = {"text": summary, "last_active": naive_now()}
        self.metadata["last_archived"] = self.metadata["last_consolidated"] = index
        self.markers.append(index)
        self.save()
        # Dream: edit_file on MEMORY.md (read, replace, Path.write_text), then .dream_cursor.
        bullet = f"- Live note {n}: atlas checked, all quiet (Dream)"
        read_at = time.monotonic()
        text = self.memory.read_text(encoding="utf-8")
        new = text.rstrip("\n") + "\n" + bullet + "\n"
        rewrite_in_place(self.memory, new.encode("utf-8"))
        self.dreams.append((read_at, time.monotonic(), text))
        self.bullets.append(bullet)
        self.memory_written.append(new)
        (self.workspace / "memory" / ".dream_cursor").write_text(str(cursor))

    def problems(self) -> list[str]:
        """What is wrong with the files now, against what this agent wrote."""
        out = []
        metadata, provider_state, messages = self._load()
        if messages != self.messages:
            out.append(
                f"nanobot: the session file holds {len(messages)} messages, the agent {len(self.messages)}"
            )
        if metadata != self.metadata:
            out.append("nanobot: the session's metadata line is not the agent's")
        if provider_state != self.provider_state:
            out.append("nanobot: the provider_state line changed")
        cursors = []
        for raw in self.history.read_text(encoding="utf-8").split("\n"):
            if raw.strip():
                cursors.append(json.loads(raw)["cursor"])  # every line parses
        missing = [e["cursor"] for e in self.history_written if e["cursor"] not in cursors]
        if missing:
            out.append(f"nanobot: history entries {missing} are gone")
        text = self.memory.read_text(encoding="utf-8")
        lost = [b for b in self.bullets if b not in text]
        if lost:
            out.append(f"nanobot: Dream's notes {lost} are not in MEMORY.md")
        return out


# --- yachiyo --------------------------------------------------------------------------------------


def js_now() -> str:
    """`new Date().toISOString()`: milliseconds and Z."""
    now = datetime.now(UTC)
    return f"{now:%Y-%m-%dT%H:%M:%S}.{now.microsecond // 1000:03d}Z"


def js_json(obj: object) -> bytes:
    """`JSON.stringify(obj, null, 2)`: two spaces, raw UTF-8, no trailing newline."""
    return json.dumps(obj, ensure_ascii=False, indent=2).encode()


def js_slice(text: str, units: int) -> str:
    """`text.slice(0, units)` in UTF-16 code units (whole characters here)."""
    out, used = [], 0
    for ch in text:
        used += 2 if ord(ch) > 0xFFFF else 1
        if used > units:
            break
        out.append(ch)
    return "".join(out)


class YachiyoAgent(Agent):
    """A yachiyo gateway running turns in one new session and writing long-term memory (§A.6)."""

    pause = (0.1, 0.4)
    SAFE = "-_.!~*'()"  # encodeURIComponent leaves these alone

    def __init__(self, data_dir: Path, session_id: str = "sess-live/日本語 #1", seed: int = 3) -> None:
        super().__init__(seed)
        from urllib.parse import quote

        self.store = data_dir / "session-store"
        self.memory = data_dir / "long-term-memory" / "memory.json"
        self.session_id = session_id
        self.path = self.store / "sessions" / (quote(session_id, safe=self.SAFE) + ".json")
        now = js_now()
        self.session = {
            "session_id": session_id,
            "title": "New chat",
            "created_at": now,
            "updated_at": now,
            "messages": [],
            "events": [],
            "runs": [],
            "settings": {
                "permission_level": "high",
                "workspace": {"mode": "session", "root_dir": None},
                "voice_auto_reply_enabled": False,
                "voice_auto_reply_mode": "policy",
            },
            "memory": {
                "version": 1,
                "updated_at": now,
                "archived_message_count": 0,
                "recent_window_messages": 12,
                "summary": "",
                "entries": [],
            },
        }
        self.runs = 0
        self.rewrites = 0
        self.memory_entries: dict[str, str] = {}  # id -> content of every entry it wrote or merged

    def _tmp(self, path: Path, random7: bool = False) -> Path:
        suffix = f".tmp-{os.getpid()}-{int(time.time() * 1000)}"
        if random7:
            suffix += "-" + "".join(self.rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(7))
        return path.with_name(path.name + suffix)

    def save_session(self) -> None:
        """saveSession: the session file, then its summary in index.json, each by temp + rename."""
        self.session["updated_at"] = js_now()
        replace_atomically(self.path, js_json(self.session), self._tmp(self.path))
        index_path = self.store / "index.json"
        index = json.loads(index_path.read_bytes())  # read fresh: no cache
        index["sessions"][self.session_id] = self.summary()
        replace_atomically(index_path, js_json(index), self._tmp(index_path))
        self.rewrites += 1

    def summary(self) -> dict:
        s = self.session
        last = s["runs"][-1] if s["runs"] else None
        return {
            "session_id": s["session_id"],
            "title": s["title"],
            "created_at": s["created_at"],
            "updated_at": s["updated_at"],
            "message_count": len(s["messages"]),
            "event_count": len(s["events"]),
            "run_count": len(s["runs"]),
            "permission_level": s["settings"]["permission_level"],
            "last_state": last["state"] if last else None,
            "last_output_preview": js_slice(last["output"], 120) if last else None,
        }

    def event(self, trace: str, step: int, seq: int, name: str, payload: dict) -> None:
        """appendEvent: one more event, and the whole session written again."""
        envelope = {
            "trace_id": trace,
            "session_id": self.session_id,
            "task_id": None,
            "step_index": step,
            "seq": seq,
            "event": name,
            "source": "runtime",
            "latency_budget_ms": 1200,
            "payload": payload,
        }
        self.session["events"].append({"id": str(uuid.uuid4()), "created_at": js_now(), "event": envelope})
        self.save_session()

    def step(self) -> None:
        self.runs += 1
        n = self.runs
        trace, request = str(uuid.uuid4()), f"req-{n}"
        text = f"Live run {n}: remember that build {n} passed on atlas（日本語メモ）"
        meta = {"mode": "rpc", "permission_level": "high", "workspace_root": None}
        self.session["messages"].append(
            {
                "id": str(uuid.uuid4()),
                "role": "user",
                "content": text,
                "created_at": js_now(),
                "trace_id": None,
                "request_id": request,
                "metadata": {**meta, "input_images": [], "input_audio": None},
            }
        )
        if self.session["title"] == "New chat":
            self.session["title"] = js_slice(text.strip(), 40)
        self.save_session()
        seq = iter(range(1, 100))
        plan = {
            "input": text,
            "input_images": 0,
            "max_step": 128,
            "context_messages": len(self.session["messages"]),
            "persona_mode": "hybrid",
            "skills_selected": 0,
            "skills_clipped_by": None,
        }
        self.event(trace, 0, next(seq), "plan", plan)
        self.event(
            trace,
            0,
            next(seq),
            "llm.prompt.assembled",
            {
                "message_count": 2,
                "messages": [
                    {"index": 0, "role": "system", "content": "You are a runtime planner."},
                    {"index": 1, "role": "user", "content": text},
                ],
            },
        )
        step = 1
        if n % 2:  # a run that writes memory through the tool
            content = f"Build {n} passed on atlas"
            keywords = ["build", "atlas", f"run-{n}"]
            args = {"content": content, "keywords": keywords}
            raw = json.dumps(args, ensure_ascii=False, separators=(",", ":"))
            self.event(trace, step, next(seq), "llm.stream.start", {"mode": "decision_stream"})
            self.event(
                trace,
                step,
                next(seq),
                "tool_call.delta",
                {
                    "index": 0,
                    "call_id": "call_1",
                    "name": "memory_write",
                    "args_raw": raw,
                    "args_delta": raw,
                    "name_delta": "memory_write",
                },
            )
            self.event(
                trace,
                step,
                next(seq),
                "tool_call.stable",
                {"index": 0, "call_id": "call_1", "name": "memory_write", "args_raw": raw, "args": args},
            )
            self.event(
                trace,
                step,
                next(seq),
                "tool.call",
                {"call_id": "call_1", "name": "memory_write", "args": args, "dispatch_mode": "early"},
            )
            self.event(trace, step, next(seq), "llm.stream.end", {"mode": "decision_stream"})
            entry_id, stored = self.memory_write(content, keywords, trace, step)
            result = json.dumps(
                {"ok": True, "id": entry_id, "content": content, "keywords": stored},
                ensure_ascii=False,
                separators=(",", ":"),
            )
            self.event(
                trace,
                step,
                next(seq),
                "tool.result",
                {"call_id": "call_1", "name": "memory_write", "result": result},
            )
            step += 1
        output = f"Noted: build {n} passed."
        self.event(trace, step, next(seq), "llm.stream.start", {"mode": "decision_stream"})
        self.event(trace, step, next(seq), "llm.stream.delta", {"delta": "Noted: "})
        self.event(trace, step, next(seq), "llm.stream.delta", {"delta": f"build {n} passed."})
        self.event(trace, step, next(seq), "llm.stream.end", {"mode": "decision_stream"})
        self.event(
            trace,
            step,
            next(seq),
            "llm.final",
            {
                "decision": {"type": "final", "preview": output},
                "streamed": True,
                "stream_meta": {"tool_parse_errors": 0, "parse_errors": []},
            },
        )
        self.event(
            trace, step, next(seq), "done", {"output": output, "state": "DONE", "metrics": {"final_ms": 180}}
        )
        now = js_now()
        self.session["messages"].append(
            {
                "id": str(uuid.uuid4()),
                "role": "assistant",
                "content": output,
                "created_at": now,
                "trace_id": trace,
                "request_id": request,
                "metadata": {"state": "DONE", **meta},
            }
        )
        self.session["runs"].append(
            {
                "id": str(uuid.uuid4()),
                "created_at": now,
                "request_id": request,
                "trace_id": trace,
                "input": text,
                "output": output,
                "state": "DONE",
                "mode": "rpc",
                "permission_level": "high",
                "workspace_root": None,
                "metadata": {"input_images_count": 0},
            }
        )
        self.save_session()

    def memory_write(self, content: str, keywords: list[str], trace: str, step: int) -> tuple[str, list[str]]:
        """LongTermMemoryStore.addEntry: read fresh, add or merge, temp + rename (§A.2)."""
        store = json.loads(self.memory.read_bytes())
        now = js_now()
        clean = list(dict.fromkeys(k.strip().lower() for k in keywords if k.strip()))
        same = next((e for e in store["entries"] if e["content"].lower() == content.lower()), None)
        if same is not None:
            same["keywords"] = list(dict.fromkeys([*same["keywords"], *clean]))
            same["updated_at"] = now
            same["source_session_id"], same["source_trace_id"] = self.session_id, trace
            same["metadata"] = {**same.get("metadata", {}), "step_index": step, "call_id": "call_1"}
            entry = same
        else:
            entry = {
                "id": f"mem-{uuid.uuid4()}",
                "content": content,
                "keywords": clean,
                "source_session_id": self.session_id,
                "source_trace_id": trace,
                "metadata": {"step_index": step, "call_id": "call_1"},
                "created_at": now,
                "updated_at": now,
            }
            store["entries"].append(entry)
        store["updated_at"] = now
        replace_atomically(self.memory, js_json(store), self._tmp(self.memory, random7=True))
        self.memory_entries[entry["id"]] = entry["content"]
        return entry["id"], entry["keywords"]

    def problems(self) -> list[str]:
        out = []
        session = json.loads(self.path.read_bytes())
        if session != self.session:
            out.append(
                f"yachiyo: the session file is not the agent's last write ({len(session['events'])} events on disk, {len(self.session['events'])} written)"
            )
        index = json.loads((self.store / "index.json").read_bytes())
        if index["sessions"].get(self.session_id) != self.summary():
            out.append("yachiyo: index.json's summary of the session is not the agent's")
        store = json.loads(self.memory.read_bytes())
        on_disk = {e["id"]: e["content"] for e in store["entries"]}
        lost = {k: v for k, v in self.memory_entries.items() if on_disk.get(k) != v}
        if lost:
            out.append(f"yachiyo: memory entries lost: {lost}")
        leftovers = list(self.store.rglob("*.tmp-*")) + list(self.memory.parent.glob("*.tmp-*"))
        if leftovers:
            out.append(f"yachiyo: temp files left: {leftovers}")
        return out


# --- araliya --------------------------------------------------------------------------------------

SEPARATOR = " \u2014 "  # space, EM DASH, space


def rust_now() -> str:
    return f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ}"


def uuid7() -> str:
    ms = time.time_ns() // 1_000_000
    value = (
        (ms & ((1 << 48) - 1)) << 80
        | 0x7 << 76
        | random.getrandbits(12) << 64
        | 0b10 << 62
        | random.getrandbits(62)
    )
    return str(uuid.UUID(int=value))


def parse_transcript(text: str) -> list[tuple[str, str, str]]:
    """araliya's parse_transcript (formats/araliya.md §B.4): (role, timestamp, content) entries."""
    entries: list[tuple[str, str, list[str]]] = []
    for line in text.split("\n"):
        line = line.removesuffix("\r")
        if line.startswith("### "):
            header = line[4:]
            role, sep, stamp = header.partition(SEPARATOR)
            entries.append((role.strip(), stamp.strip(), []) if sep else (header, "", []))
        elif entries:
            entries[-1][2].append(line)
    return [(role, stamp, "\n".join(body).strip()) for role, stamp, body in entries]


def serialize_transcript(entries: list[tuple[str, str, str]]) -> str:
    return "".join(f"### {role}{SEPARATOR}{stamp}\n\n{content}\n\n" for role, stamp, content in entries)


def rust_json(obj: object) -> bytes:
    """serde_json::to_string_pretty: two spaces, raw UTF-8, no trailing newline."""
    return json.dumps(obj, ensure_ascii=False, indent=2).encode()


class AraliyaAgent(Agent):
    """araliya-bot chatting in a new session and an existing one, non-atomically (§B.5)."""

    pause = (0.1, 0.4)
    TRANSCRIPT_CAP = 500

    def __init__(self, identity_dir: Path, existing: str, seed: int = 4) -> None:
        super().__init__(seed)
        self.memory = identity_dir / "memory"
        self.sessions_file = self.memory / "sessions.json"
        self.existing = existing
        self.created: str | None = None
        self.transcripts: dict[str, list[tuple[str, str, str]]] = {}  # what each last rewrite wrote
        self.kv: dict[str, dict] = {}  # session -> the kv.json it last wrote
        self.kv_set_values: dict[str, dict[str, str]] = {}
        self.steps = 0
        self.rewrites = 0

    def _folder(self, sid: str) -> Path:
        return self.memory / "sessions" / sid

    def step(self) -> None:
        self.steps += 1
        if self.created is None:
            self.created = self.create_session()
            return
        sid = self.created if self.steps % 2 else self.existing
        self.load_session(sid, "chat")
        n = self.steps
        self.transcript_append(sid, "user", f"question {n}: 这是第{n}个问题 — live")
        self.wait(self.rng.uniform(0.02, 0.1))
        self.transcript_append(sid, "assistant", f"answer {n}\n\nsecond paragraph of answer {n}")
        if n % 3 == 0:
            self.kv_set(sid, "working_memory", f"# Working memory\n\n- live step {n}\n- 中文 ok\n")
        if n % 4 == 0:
            self.kv_set(sid, f"note.live.{n:03d}", f"第{n}条笔记 / live note #{n}")

    def _read_sessions(self) -> dict:
        return json.loads(self.sessions_file.read_bytes())

    def _write_sessions(self, doc: dict) -> None:
        items = list(doc["sessions"].items())
        self.rng.shuffle(items)  # a HashMap: the key order changes on every write
        rewrite_in_place(self.sessions_file, rust_json({"sessions": dict(items)}))
        self.rewrites += 1

    def create_session(self) -> str:
        sid = uuid7()
        folder = self._folder(sid)
        folder.mkdir(parents=True)
        rewrite_in_place(folder / "kv.json", rust_json({"cap": 200, "entries": []}), gap=0)
        rewrite_in_place(folder / "transcript.md", b"", gap=0)
        doc = self._read_sessions()
        doc["sessions"][sid] = {
            "session_id": sid,
            "created_at": rust_now(),
            "store_types": ["basic_session"],
            "last_agent": "chat",
        }
        self._write_sessions(doc)
        self.kv[sid] = {"cap": 200, "entries": []}
        self.transcripts[sid] = []
        return sid

    def load_session(self, sid: str, agent: str) -> None:
        """load_session(id, Some(agent)): an unlocked read-modify-write of sessions.json."""
        doc = self._read_sessions()
        if doc["sessions"][sid].get("last_agent") != agent:
            doc["sessions"][sid]["last_agent"] = agent
            self._write_sessions(doc)

    def transcript_append(self, sid: str, role: str, content: str) -> None:
        path = self._folder(sid) / "transcript.md"
        entries = parse_transcript(path.read_text(encoding="utf-8"))
        entries.append((role, rust_now(), content))
        entries = entries[-self.TRANSCRIPT_CAP :]
        rewrite_in_place(path, serialize_transcript(entries).encode())
        self.transcripts[sid] = entries
        self.rewrites += 1

    def kv_set(self, sid: str, key: str, value: str) -> None:
        path = self._folder(sid) / "kv.json"
        kv = json.loads(path.read_bytes())
        entries = [e for e in kv["entries"] if e["key"] != key]
        entries.append({"key": key, "value": value, "ts": rust_now()})
        while len(entries) > kv["cap"]:
            entries.pop(0)
        kv = {"cap": kv["cap"], "entries": entries}
        rewrite_in_place(path, rust_json(kv))
        self.kv[sid] = kv
        self.kv_set_values.setdefault(sid, {})[key] = value
        self.rewrites += 1

    def problems(self) -> list[str]:
        out = []
        sessions = self._read_sessions()["sessions"]
        for sid in {self.existing, *(s for s in [self.created] if s)}:
            if sid not in sessions:
                out.append(f"araliya: session {sid} is not in sessions.json")
        for sid, entries in self.transcripts.items():
            text = (self._folder(sid) / "transcript.md").read_text(encoding="utf-8")
            if parse_transcript(text) != entries or text != serialize_transcript(entries):
                out.append(f"araliya: transcript of {sid} is not the agent's last write")
        for sid, kv in self.kv.items():
            on_disk = json.loads((self._folder(sid) / "kv.json").read_bytes())
            if on_disk != kv:
                out.append(f"araliya: kv.json of {sid} is not the agent's last write")
        return out
