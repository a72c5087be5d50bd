"""Turns as OpenTelemetry spans of the GenAI conventions, with ids that the same entries always give again.

A turn is a trace: an `invoke_agent` span whose children are a `chat` span per model call and an
`execute_tool` span per tool call. Ids are hashes of the tape (its host, source and place), its
generation (a tape made again is another), the turn's number and the span's place in the turn:
an export repeated, by the command or by the indexer, gives a collector the same spans to dedup.
"""

from __future__ import annotations

import hashlib
import json
from base64 import b64decode
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from tapeview.sources.model import json_text
from tapeview.tapes.turns import ModelCall, ToolCall, Turn, split_model

CONTENT_LIMIT = 32 * 1024  # characters of one message, argument or result sent with the content
SCOPE = InstrumentationScope("tapeview")
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Session:
    """The tape a trace comes from, as the spans name it."""

    host: str
    source: str
    rel: str
    kind: str  # the agent family: gen_ai.agent.name
    name: str  # the agent's own id of the session: gen_ai.conversation.id
    label: str
    key: str
    generation: str  # tells a tape made again (a Bub reset, a nanobot /new) from the one before
    fallback: datetime | None = None  # the time of a turn whose entries carry none


def spans(session: Session, turns: Iterable[Turn], content: bool = False) -> list[ReadableSpan]:
    """The spans of these turns; with `content`, the messages, tool arguments and results as well."""
    resource = Resource(
        {"service.name": "tapeview", "host.name": session.host, "tapeview.source": session.source}
    )
    out: list[ReadableSpan] = []
    for turn in turns:
        out += _Trace(session, turn, resource, content).spans()
    return out


def otlp_json(spans: Sequence[ReadableSpan]) -> bytes:
    """One OTLP/JSON line (an ExportTraceServiceRequest, ids in hex as OTLP/JSON has them)."""
    data = MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    for rs in data.get("resourceSpans", []):
        for ss in rs.get("scopeSpans", []):
            for span in ss.get("spans", []):
                for name in ("traceId", "spanId", "parentSpanId"):
                    if name in span:
                        span[name] = b64decode(span[name]).hex()
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def _id(size: int, *parts: object) -> int:
    text = "\0".join(str(p) for p in parts)
    return int.from_bytes(hashlib.blake2b(text.encode(errors="replace"), digest_size=size).digest()) or 1


def _nanos(when: datetime | None) -> int:
    if when is None:
        return 0
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return (when - EPOCH) // timedelta(microseconds=1) * 1000


class _Trace:
    def __init__(self, session: Session, turn: Turn, resource: Resource, content: bool) -> None:
        self.s, self.turn, self.resource, self.content = session, turn, resource, content
        s = session
        self.trace_id = _id(16, s.host, s.source, s.rel, s.generation, "turn", turn.number)
        self.root = self._context("invoke_agent")
        start = turn.start or turn.end or s.fallback
        self.start, self.end = start, turn.end or start

    def _context(self, *place: object) -> SpanContext:
        return SpanContext(
            self.trace_id, _id(8, self.trace_id, *place), is_remote=False, trace_flags=TraceFlags(1)
        )

    def _span(self, name: str, context: SpanContext, parent: SpanContext | None, **rest: Any) -> ReadableSpan:
        start = rest.pop("start") or self.start
        end = rest.pop("end") or start
        return ReadableSpan(
            name,
            context=context,
            parent=parent,
            resource=self.resource,
            kind=rest.pop("kind", SpanKind.INTERNAL),
            start_time=_nanos(start),
            end_time=max(_nanos(end), _nanos(start)),
            instrumentation_scope=SCOPE,
            **rest,
        )

    def _common(self, operation: str, openinference: str) -> dict[str, Any]:
        return {
            "gen_ai.operation.name": operation,
            "gen_ai.agent.name": self.s.kind,
            "gen_ai.conversation.id": self.s.name,
            "session.id": self.s.name,  # OpenInference's name for it: Phoenix groups a session's traces by it
            "openinference.span.kind": openinference,
            "tapeview.tape.key": self.s.key,
            "tapeview.turn.number": self.turn.number,
        }

    def spans(self) -> list[ReadableSpan]:
        return [
            self._agent(),
            *(self._chat(i, c) for i, c in enumerate(self.turn.calls)),
            *map(self._tool, self.turn.tools),
        ]

    def _agent(self) -> ReadableSpan:
        turn = self.turn
        attrs = self._common("invoke_agent", "AGENT")
        attrs |= {
            "tapeview.tape.label": self.s.label,
            "tapeview.source": self.s.source,
            "tapeview.turn.first_pos": turn.first_pos,
            "tapeview.turn.last_pos": turn.last_pos,
            "tapeview.turn.complete": turn.complete,
        }
        if turn.phase:
            attrs["tapeview.phase"] = turn.phase
        attrs |= _model(turn.model)
        used = [c for c in turn.calls if c.input_tokens is not None]
        if used:
            attrs["gen_ai.usage.input_tokens"] = sum(c.input_tokens or 0 for c in used)
            attrs["gen_ai.usage.output_tokens"] = sum(c.output_tokens or 0 for c in used)
        if self.content:
            attrs["gen_ai.input.messages"] = _json([_text("user", turn.input)] if turn.input else [])
            attrs["gen_ai.output.messages"] = _json([_text("assistant", turn.output)] if turn.output else [])
            attrs["input.value"], attrs["output.value"] = _cut(turn.input), _cut(turn.output)
        events = [
            Event(
                "tapeview.anchor",
                {
                    "tapeview.anchor.name": m.name,
                    "tapeview.anchor.pos": m.pos,
                    "tapeview.anchor.phase": m.phase,
                },
                _nanos(m.date or self.start),
            )
            for m in turn.marks
        ]
        events += [Event("exception", {"exception.message": e[:500]}, _nanos(self.end)) for e in turn.errors]
        status = Status(StatusCode.ERROR, turn.errors[0][:500]) if turn.errors else Status(StatusCode.UNSET)
        return self._span(
            f"invoke_agent {self.s.kind}",
            self.root,
            None,
            start=self.start,
            end=self.end,
            attributes=attrs,
            events=events,
            status=status,
        )

    def _chat(self, index: int, call: ModelCall) -> ReadableSpan:
        attrs = self._common("chat", "LLM") | _model(call.model)
        attrs["tapeview.entry.pos"] = call.pos
        if call.input_tokens is not None:
            attrs["gen_ai.usage.input_tokens"] = call.input_tokens
            attrs["gen_ai.usage.output_tokens"] = call.output_tokens or 0
        if call.cached_tokens:
            attrs["gen_ai.usage.cache_read.input_tokens"] = call.cached_tokens
        if self.content:
            attrs["gen_ai.input.messages"] = _json(call.inputs)
            attrs["gen_ai.output.messages"] = _json(call.outputs)
        status = Status(StatusCode.ERROR, call.error) if call.error else Status(StatusCode.UNSET)
        if call.error:
            attrs["error.type"] = "model_error"
        model = split_model(call.model)[1]
        return self._span(
            f"chat {model}" if model else "chat",
            self._context("chat", call.pos - self.turn.first_pos, index),
            self.root,
            kind=SpanKind.CLIENT,
            start=call.start,
            end=call.end,
            attributes=attrs,
            status=status,
        )

    def _tool(self, call: ToolCall) -> ReadableSpan:
        attrs = self._common("execute_tool", "TOOL")
        attrs |= {
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.type": "function",
            "tapeview.entry.pos": call.pos,
        }
        if call.id is not None:
            attrs["gen_ai.tool.call.id"] = str(call.id)
        if self.content:
            attrs["gen_ai.tool.call.arguments"] = _cut(_plain(call.arguments))
            if call.answered:
                attrs["gen_ai.tool.call.result"] = _cut(_plain(call.result))
        if call.error:
            attrs["error.type"] = "tool_error"
        status = (
            Status(StatusCode.ERROR, "the tool reported an error") if call.error else Status(StatusCode.UNSET)
        )
        return self._span(
            f"execute_tool {call.name}",
            self._context("tool", call.pos - self.turn.first_pos, call.index),
            self.root,
            start=call.start,
            end=call.end,
            attributes=attrs,
            status=status,
        )


def _model(model: str) -> dict[str, str]:
    provider, name = split_model(model)
    attrs = {"gen_ai.request.model": name} if name else {}
    if provider:
        attrs["gen_ai.provider.name"] = attrs["gen_ai.system"] = provider
    return attrs


def _text(role: str, text: str) -> dict:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def _plain(value: Any) -> str:
    return value if isinstance(value, str) else json_text(value)


def _cut(text: str) -> str:
    if len(text) <= CONTENT_LIMIT:
        return text
    return f"{text[:CONTENT_LIMIT]}… ({len(text) - CONTENT_LIMIT:,} more characters)"


def _json(messages: list[dict]) -> str:
    """Messages as the GenAI conventions' JSON, each text, argument and result cut at CONTENT_LIMIT."""

    def bounded(value: Any) -> Any:
        if isinstance(value, str):
            return _cut(value)
        if isinstance(value, dict):
            return {k: bounded(v) for k, v in value.items()}
        if isinstance(value, list):
            return [bounded(v) for v in value]
        return value

    try:
        return json.dumps(bounded(messages), ensure_ascii=False, default=str)
    except (RecursionError, ValueError):
        return "[]"
