"""A demo yachiyo data dir: session store and long-term memory in the gateway's JSON (formats/yachiyo.md)."""

from __future__ import annotations

import json
import random
import re
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

FLAGS = {
    "streaming_enabled": True, "tool_async_mode": "parallel", "tool_early_dispatch": True,
    "max_parallel_tools": 3, "tool_error_max_retries": 5,
}  # fmt: skip
STREAM = {"mode": "decision_stream"}
PARSED = {"tool_parse_errors": 0, "parse_errors": []}
SYSTEM = [
    "You are a runtime planner that can either return a final answer or call tools. If tools are needed, "
    "you may emit one or more tool calls and wait for results in the next turn. Long-term memory "
    "operations must go through tools (memory_write / memory_search). If a tool returns an error, use the "
    "error details to re-plan and retry with an alternative approach. Maximum tool-error retries per run: 5. "
    "Keep answers concise.",
    "Persona Profile: yachiyo\n\nAddress user as: 主人\n\nPersona Core:\n\n# SOUL.md\n\nYou are Yachiyo, a "
    "cheerful desktop companion who pairs on code with the user. You explain before you change anything.\n\n"
    "User Preference:\n\n# USER.md\n\nFrontend developer (Vue 3 + TypeScript), monorepo with pnpm.\n\n"
    "Active persona mode: hybrid",
    "<available_skills>\n</available_skills>",
    "Desktop capture tools are available for this turn. When the user asks about current desktop, screen, "
    "UI, dialog, window, button, error, or any visible on-screen state, you MUST first call an appropriate "
    "desktop.capture.* tool before answering.",
]
BOOTSTRAP = "Bootstrap long-term memory context for this new session."
SOP = (
    "Long-term memory SOP (Markdown). Follow this policy when calling memory tools.\n\n# Memory SOP\n\n"
    "## Write\n- Use `memory_write` for durable preferences and project conventions only.\n"
    "- Never store secrets.\n\n## Search\n- Use `memory_search` before answering about past decisions."
)
# (days ago, source session, content, keywords) of entries written in sessions deleted since.
OLD_MEMORY = [
    (20, "sess-onboarding-01", "Project uses pnpm workspaces, not npm", "pnpm tooling monorepo"),
    (20, "sess-onboarding-01", "Gateway lives in packages/gateway; tests run with vitest", "gateway vitest"),
    (20, "sess-onboarding-01", "CI is GitHub Actions on ubuntu-latest, Node 20", "ci github-actions node"),
    (19, "sess-onboarding-01", "User prefers a short summary first, details after", "style summary format"),
    (11, "sess-refactor-plan", "前端重构：组件命名统一用 PascalCase 多单词，例如 UserProfileCard",
     "前端 重构 组件 命名"),
    (11, "sess-refactor-plan", "旧代码的全局状态在 src/store/legacy.js（Vuex 3），按模块逐个迁移",
     "前端 重构 状态管理"),
    (7, "sess-ci-triage", "Websocket reconnect test timed out twice in CI in October", "ci flaky websocket"),
    (5, "sess-standup", "User's timezone is Asia/Tokyo; standup at 10:00 JST", "timezone standup jst"),
    (5, "sess-standup", "レビューは日本語でも英語でも OK、コメントは英語で", "レビュー review"),
    (4, None, "Do not store API keys or tokens in long-term memory", "security secrets policy"),
]  # fmt: skip


def _search(query: str, limit: int = 5) -> tuple[str, dict]:
    return ("memory_search", {"query": query, "limit": limit})


def _write(content: str, *keywords: str) -> tuple[str, dict]:
    return ("memory_write", {"content": content, "keywords": list(keywords)})


# Per session: (id, permission level, days ago, runs); a run is (user text, minutes after the previous run,
# tool steps (each a list of calls), the answer as streamed chunks).
SESSIONS: list[tuple[str, str, float, list]] = [
    ("sess-ci-flaky-ws", "high", 2.2, [
        ("CI keeps failing on the websocket reconnect test in packages/gateway — any idea why?", 0,
         [[_search("ci flaky websocket test")]],
         ["Same flake as the one in my notes: the reconnect test waits on **real timers**.\n\n",
          "Fix it with fake timers:\n\n```ts\nbeforeEach(() => vi.useFakeTimers())\n",
          "afterEach(() => vi.useRealTimers())\n\nawait vi.advanceTimersByTimeAsync(5_000)\n```\n\n",
          "Then the backoff (1 s → 2 s → 4 s) runs instantly and deterministically. 🎯"]),
        ("That fixed it 🎉 Please remember that gateway tests need fake timers.", 26,
         [[_write("Gateway websocket tests must use vi.useFakeTimers(); real timers make the reconnect test "
                  "flaky in CI", "CI", "vitest", "websocket", "Fake-Timers")]],
         ["Saved ✅ I'll suggest fake timers whenever a gateway test touches reconnects."]),
        ("Also: remember we use pnpm, not npm", 3,
         [[_write("project uses pnpm workspaces, not npm", "pnpm", "CI")]],
         ["Already known — I merged the new keyword into the existing note."]),
    ]),
    ("proj/前端重构 #2", "high", 1.1, [
        ("帮我回忆一下前端重构的约定：组件命名和状态管理怎么定的？", 0,
         [[_search("前端 重构 组件 状态管理")]],
         ["根据长期记忆：\n\n", "- **组件命名**：PascalCase 多单词，例如 `UserProfileCard`\n",
          "- **状态管理**：旧的 Vuex 3 在 `src/store/legacy.js`，按模块逐个迁移\n\n",
          "还没定新的状态管理方案，要现在定吗？"]),
        ("记住：新组件一律用 <script setup lang=\"ts\">，状态管理统一用 Pinia。", 4,
         [[_write("新组件一律使用 <script setup lang=\"ts\">", "前端", "组件", "Vue"),
           _write("状态管理统一迁移到 Pinia，不再新增 Vuex 模块", "前端", "状态管理", "Pinia")]],
         ["好的，两条都记下了 📝"]),
        ("给我一个 Pinia store 的最小示例", 2, [],
         ["```ts\nimport { defineStore } from 'pinia'\n\n",
          "export const useCartStore = defineStore('cart', {\n",
          "  state: () => ({ items: [] as string[] }),\n  actions: {\n",
          "    add(id: string) { this.items.push(id) },\n  },\n})\n```\n\n",
          "组件里 `const cart = useCartStore()` 即可。"]),
    ]),
    ("sess-review-low", "low", 0.09, [
        ("Run the gateway test suite and tell me what fails", 0,
         [[("shell.exec", {"command": "pnpm --filter gateway test"})]],
         ["I can't run commands here: this session's permission level is **low**.\n\n",
          "Raise it in the session settings, or run `pnpm --filter gateway test` and paste the output."]),
    ]),
]  # fmt: skip


def _z(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def _u16(text: str, n: int) -> str:
    """JS `slice(0, n)`: n UTF-16 code units (a split pair is dropped, not written as a lone surrogate)."""
    return text.encode("utf-16-le")[: 2 * n].decode("utf-16-le", "ignore")


def _compact(obj: object) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _tokens(text: str) -> set[str]:
    return set(re.findall(r"[\w-]+", text.lower()))


class _Gateway:
    """One gateway process: its counters, its memory store and the sessions it writes."""

    def __init__(self, rng: random.Random, root: Path) -> None:
        self.rng, self.root, self.requests, self.calls = rng, root, 0, 0
        self.memory: list[dict[str, Any]] = []
        self.memory_updated = ""

    def uid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def remember(
        self, content: str, keywords: list, sid: str | None, trace: str | None, meta: dict, t: str
    ) -> dict:
        """LongTermMemoryStore.addEntry: trim, lower-case keywords, merge a case-insensitive duplicate."""
        content = content.strip()[:800]
        keys = list(dict.fromkeys(k.strip().lower() for k in keywords if k.strip()))
        self.memory_updated = t
        for e in self.memory:
            if e["content"].lower() == content.lower():
                e["keywords"] = list(dict.fromkeys(e["keywords"] + keys))
                e.update({"source_session_id": sid or e["source_session_id"], "updated_at": t})
                e.update(source_trace_id=trace or e["source_trace_id"], metadata=e["metadata"] | meta)
                return e
        entry = {"id": f"mem-{self.uid()}", "content": content, "keywords": keys, "source_session_id": sid,
                 "source_trace_id": trace, "metadata": meta, "created_at": t, "updated_at": t}  # fmt: skip
        self.memory.append(entry)
        return entry

    def search(self, query: str, limit: int) -> dict:
        """searchEntries: score = shared tokens, best then newest first, cut at 1200 characters."""
        wanted = _tokens(query)

        def score(e: dict) -> int:
            return len(wanted & _tokens(e["content"]).union(*map(_tokens, e["keywords"])))

        hits = sorted(
            (e for e in self.memory if score(e)), key=lambda e: (score(e), e["updated_at"]), reverse=True
        )
        keep = ("id", "content", "keywords", "updated_at")
        return {
            "ok": True,
            "total": len(hits),
            "items": [{k: e[k] for k in keep} for e in _budget(hits, limit, 1200)],
        }


def _budget(entries: list[dict], limit: int, max_chars: int) -> list[dict]:
    items, used = [], 0
    for e in entries[:limit]:
        if used + len(e["content"]) > max_chars:
            break  # the store stops at the budget, it does not skip
        items.append(e)
        used += len(e["content"])
    return items


class _Session:
    def __init__(self, gw: _Gateway, sid: str, level: str, start: datetime) -> None:
        self.gw, self.sid, self.level, self.clock = gw, sid, level, start
        self.created, self.title = _z(start), "New chat"
        self.ws = str(gw.root / "session-workspaces" / sid)
        self.messages: list[dict] = []
        self.events: list[dict] = []
        self.runs: list[dict] = []
        self.trace, self.seq = "", 0

    def tick(self, lo: int = 1, hi: int = 4) -> datetime:
        self.clock += timedelta(milliseconds=self.gw.rng.randint(lo, hi))
        return self.clock

    def emit(self, step: int, name: str, payload: dict, lo: int = 1, hi: int = 4) -> datetime:
        self.seq, t = self.seq + 1, self.tick(lo, hi)
        event = {"trace_id": self.trace, "session_id": self.sid, "task_id": None, "step_index": step,
                 "seq": self.seq, "event": name, "source": "runtime", "latency_budget_ms": 1200,
                 "payload": payload}  # fmt: skip
        self.events.append({"id": self.gw.uid(), "created_at": _z(t), "event": event})
        return t

    def prompt(self, text: str) -> list[dict]:
        msgs = [("system", s) for s in SYSTEM]
        if not self.runs:
            msgs.append(("system", SOP))
            boot = _budget(sorted(self.gw.memory, key=lambda e: e["updated_at"], reverse=True), 10, 2400)
            lines = [
                f"{i}. {e['content']} [keywords: {', '.join(e['keywords'])}]" for i, e in enumerate(boot, 1)
            ]
            if lines:
                msgs.append(("system", "\n".join([BOOTSTRAP, *lines])))
        msgs += [(m["role"], m["content"]) for m in self.messages[:-1]] + [("user", text)]
        return [{"index": i, "role": r, "content": c} for i, (r, c) in enumerate(msgs)]

    def execute(self, name: str, args: dict, step: int, call_id: str) -> tuple[str, dict]:
        """The tool's result string, plus the error fields of a failed call."""
        if self.level == "low":
            denied = f"command not allowed for permission level low: {args['command'].split()[0]}"
            what = denied if name == "shell.exec" else f"tool not allowed for permission level low: {name}"
            retry = {"retryable": True, "retry_count": 1, "retry_limit": 5}
            failure = {"ok": False, "code": "PERMISSION_DENIED", "error": what, "details": None} | retry
            return _compact(failure), {"code": "PERMISSION_DENIED", "error": True} | retry
        if name == "memory_search":
            return _compact(self.gw.search(args["query"], args.get("limit", 10))), {}
        meta = {"step_index": step, "call_id": call_id}
        e = self.gw.remember(args["content"], args["keywords"], self.sid, self.trace, meta, _z(self.clock))
        return _compact({"ok": True, "id": e["id"], "content": e["content"], "keywords": e["keywords"]}), {}

    def run(self, text: str, minutes: float, steps: list[list[tuple[str, dict]]], chunks: list[str]) -> None:
        gw = self.gw
        self.clock += timedelta(minutes=minutes, milliseconds=gw.rng.randint(0, 999))
        gw.requests += 1
        request, self.trace, self.seq = f"req-{gw.requests}", gw.uid(), 0
        meta = {"mode": "rpc", "permission_level": self.level, "workspace_root": self.ws}
        user = {"input_images": [], "input_audio": None}
        self.messages.append({"id": gw.uid(), "role": "user", "content": text, "created_at": _z(self.clock),
                              "trace_id": None, "request_id": request, "metadata": meta | user})  # fmt: skip
        self.title = _u16(text.strip(), 40) if self.title == "New chat" else self.title
        started, marks = self.tick(2, 9), {}
        self.emit(0, "plan", {"input": text, "input_images": 0, "max_step": 128,
                              "context_messages": max(1, len(self.messages) - 1), "persona_mode": "hybrid",
                              "skills_selected": 0, "skills_clipped_by": None,
                              "runtime_flags": FLAGS})  # fmt: skip
        prompt = self.prompt(text)
        self.emit(0, "llm.prompt.assembled", {"message_count": len(prompt), "messages": prompt}, 3, 40)
        for step, calls in enumerate(steps, 1):
            self.tool_step(step, calls, marks)
        final, output = len(steps) + 1, "".join(chunks)
        self.emit(final, "llm.stream.start", STREAM, 300, 900)
        for chunk in chunks:
            marks.setdefault("token", self.emit(final, "llm.stream.delta", {"delta": chunk}, 40, 420))
        self.emit(final, "llm.stream.end", STREAM)
        decision = {"type": "final", "preview": output[:160]}
        end = self.emit(final, "llm.final", {"decision": decision, "streamed": True, "stream_meta": PARSED})
        ms = {k: int((t - started).total_seconds() * 1000) for k, t in marks.items()}
        self.emit(final, "done", {"output": output, "state": "DONE", "metrics": {
            "run_started_ms": int(started.timestamp() * 1000), "first_token_ms": ms["token"],
            "first_tool_stable_ms": ms.get("stable"), "first_tool_result_ms": ms.get("result"),
            "final_ms": int((end - started).total_seconds() * 1000), "out_of_order_events": 0,
            "tool_dedup_hit": 0, "tool_parse_error": 0}})  # fmt: skip
        self.messages.append({"id": gw.uid(), "role": "assistant", "content": output,
                              "created_at": _z(self.tick()), "trace_id": self.trace, "request_id": request,
                              "metadata": {"state": "DONE"} | meta})  # fmt: skip
        self.runs.append({"id": gw.uid(), "created_at": _z(self.tick(1, 3)), "request_id": request,
                          "trace_id": self.trace, "input": text, "output": output, "state": "DONE"}
                         | meta | {"metadata": {"input_images_count": 0}})  # fmt: skip

    def tool_step(self, step: int, calls: list[tuple[str, dict]], marks: dict) -> None:
        """One decision that calls tools: streamed call deltas, early dispatch, then the results."""
        self.emit(step, "llm.stream.start", STREAM, 300, 900)
        ids = []
        for i, (name, args) in enumerate(calls):
            self.gw.calls += 1
            ids.append(f"call_{self.gw.calls}")
            raw, base = _compact(args), {"index": i, "call_id": ids[-1], "name": name}
            self.emit(
                step,
                "tool_call.delta",
                base | {"args_raw": raw, "args_delta": raw, "name_delta": name},
                200,
                1400,
            )
            marks.setdefault(
                "stable", self.emit(step, "tool_call.stable", base | {"args_raw": raw, "args": args})
            )
            self.emit(
                step, "tool.call", {"call_id": ids[-1], "name": name, "args": args, "dispatch_mode": "early"}
            )
            self.emit(step, "tool.call.early_dispatched", {"call_id": ids[-1], "name": name})
        self.emit(step, "llm.stream.end", STREAM, 20, 120)
        decision = {"type": "tool", "tools": [{"name": n, "args": a} for n, a in calls]}
        self.emit(step, "llm.final", {"decision": decision, "streamed": True, "stream_meta": PARSED})
        self.emit(step, "tool.dispatch.mode", {"mode": "serial", "total_calls": len(calls), "chunk_width": 1})
        for call_id, (name, args) in zip(ids, calls, strict=True):
            result, error = self.execute(name, args, step, call_id)
            body = {"call_id": call_id, "name": name, "result": result} | error
            marks.setdefault("result", self.emit(step, "tool.result", body, 8, 260))
            if error:
                what, code, retry = (
                    json.loads(result)["error"],
                    error["code"],
                    {"retry_count": 1, "retry_limit": 5},
                )
                failed = {"call_id": call_id, "error": what, "name": name, "code": code, "will_retry": True}
                self.emit(step, "tool.error", failed | retry)
                self.emit(step, "tool.retry.scheduled", retry | {"last_error": what, "last_code": code})

    def document(self) -> dict:
        settings = {"permission_level": self.level, "workspace": {"mode": "session", "root_dir": self.ws},
                    "voice_auto_reply_enabled": False, "voice_auto_reply_mode": "policy"}  # fmt: skip
        memory = {"version": 1, "updated_at": self.created, "archived_message_count": 0,
                  "recent_window_messages": 12, "summary": "", "entries": []}  # fmt: skip
        return {"session_id": self.sid, "title": self.title, "created_at": self.created,
                "updated_at": self.runs[-1]["created_at"], "messages": self.messages, "events": self.events,
                "runs": self.runs, "settings": settings, "memory": memory}  # fmt: skip

    def summary(self) -> dict:
        return {"session_id": self.sid, "title": self.title, "created_at": self.created,
                "updated_at": self.runs[-1]["created_at"], "message_count": len(self.messages),
                "event_count": len(self.events), "run_count": len(self.runs), "permission_level": self.level,
                "last_state": "DONE", "last_output_preview": _u16(self.runs[-1]["output"], 120)}  # fmt: skip


def write(root: Path, now: datetime) -> list[Path]:
    """Write `session-store/` and `long-term-memory/` under the data dir `root`; deterministic for `now`."""
    now = (now if now.tzinfo else now.replace(tzinfo=UTC)).astimezone(UTC)
    gw = _Gateway(random.Random("tapeview-demo/yachiyo"), root)
    # The store keeps insertion order: give the older entries rising times.
    stamps = sorted(now - timedelta(days=d, minutes=gw.rng.randint(0, 600)) for d, *_ in OLD_MEMORY)
    for t, (_, sid, content, keywords) in zip(stamps, OLD_MEMORY, strict=True):
        t += timedelta(milliseconds=gw.rng.randint(0, 999))
        gw.calls += 1
        trace = gw.uid() if sid else None
        meta = {"step_index": 1, "call_id": f"call_{gw.calls}"} if sid else {"step_index": None}
        gw.remember(content, keywords.split(), sid, trace, meta, _z(t))
    sessions = []
    for sid, level, days, runs in SESSIONS:
        session = _Session(gw, sid, level, now - timedelta(days=days, milliseconds=gw.rng.randint(0, 99_999)))
        for run in runs:
            session.run(*run)
        sessions.append(session)

    written: list[Path] = []

    def save(path: Path, doc: dict) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        # JSON.stringify(doc, null, 2): two spaces, raw UTF-8, no newline at the end
        path.write_text(json.dumps(doc, ensure_ascii=False, indent=2), encoding="utf-8")
        written.append(path)

    store = root / "session-store"
    save(store / "index.json", {"version": 1, "sessions": {s.sid: s.summary() for s in sessions}})
    for s in sessions:
        save(store / "sessions" / (quote(s.sid, safe="-_.!~*'()") + ".json"), s.document())
    memory = {"version": 1, "updated_at": gw.memory_updated, "entries": gw.memory}
    save(root / "long-term-memory" / "memory.json", memory)
    return written
