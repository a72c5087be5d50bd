"""An estimate of a context's tokens: the context the agent's own rules build from some entries,
counted with a BPE tokenizer, at most CAP_CHARS characters of it (tapes.budget)."""

from __future__ import annotations

import bisect
from functools import cached_property

from tapeview.sources import Entry, reader
from tapeview.sources.model import ContextMessage, content_text

from . import tokenizer

CAP_CHARS = 2_000_000
MESSAGE_OVERHEAD = 3  # tokens a chat message costs besides its text (OpenAI's counting guide)


class Estimate:
    """Tokens of the context the agent's own rules build from some entries, and of each prefix of it."""

    def __init__(self, kind: str, entries: list[Entry], encoding: str) -> None:
        self.kind, self.entries, self.encoding = kind, entries, encoding
        self.capped = False

    @cached_property
    def _counts(self) -> tuple[list[int], list[int], list[tuple[int, int]]]:
        messages = reader(self.kind).context_messages(self.entries)
        left = CAP_CHARS
        counted: list[tuple[int, int]] = []
        for m in reversed(messages):  # the newest first: a cap drops the oldest text
            text = _text(m)
            if len(text) > left:
                text, self.capped = text[:left], True
            left -= len(text)
            counted.append((m.source_pos, tokenizer.count(text, self.encoding) + MESSAGE_OVERHEAD))
        counted.sort(key=lambda c: c[0])
        positions = [pos for pos, _ in counted]
        sums = [0]
        for _, tokens in counted:
            sums.append(sums[-1] + tokens)
        # A system prompt is sent with every call: the latest one counts, once (Bub's `system` entries).
        prompts = [
            (e.pos, e.payload.get("content"))
            for e in self.entries
            if e.kind == "system" and isinstance(e.payload, dict)
        ]
        systems = [
            (pos, tokenizer.count(text[:CAP_CHARS], self.encoding))
            for pos, text in prompts[-1:]
            if isinstance(text, str)
        ]
        return positions, sums, systems

    def before(self, pos: int) -> int:
        """The tokens of the context built from the entries before `pos`."""
        positions, sums, systems = self._counts
        system = [tokens for at, tokens in systems if at < pos]
        return sums[bisect.bisect_left(positions, pos)] + (system[-1] if system else 0)

    @property
    def total(self) -> int:
        return self.before(2**62)


def _text(m: ContextMessage) -> str:
    calls = [c.get("function") for c in m.tool_calls or [] if isinstance(c, dict)]
    parts = [f"{f.get('name') or ''}{f.get('arguments') or ''}" for f in calls if isinstance(f, dict)]
    return "\n".join([content_text(m.content), *parts])
