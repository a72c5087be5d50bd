"""An estimate of a context's tokens: the context the agent's own rules build from some entries,
counted with a BPE tokenizer, at most CAP_CHARS characters of it (tapes.budget); what is not
counted so (text past the cap, a line too big to parse, entries left unread) is priced by its size."""

from __future__ import annotations

import bisect
import re
from functools import cached_property
from pathlib import Path

import numpy as np

from tapeview.sources import Entry, json_head, reader
from tapeview.sources.bub_lines import DISPLAY_PARSE_LIMIT
from tapeview.sources.model import DISPLAY_PREVIEW_BYTES, ContextMessage, content_text, json_text
from tapeview.sources.raw_bytes import open_file

from . import copy_reader, timeline, tokenizer
from . import rows as index_rows
from .context import SENT_KINDS
from .models import Tape
from .rows import Row, Rows

CAP_CHARS = 2_000_000
MESSAGE_OVERHEAD = 3  # tokens a chat message costs besides its text (OpenAI's counting guide)
# Text not tokenized is priced at the rate of a sample of it that was (a message's counted part, a big
# line's head, else every text counted), a tenth below it: a sample denser than the rest (longer numbers
# further on, say) must not make the estimate pass the context it stands for. Without a sample, a
# token every CHARS_PER_TOKEN characters or bytes (OpenAI's rule of thumb for English).
SAMPLE_SHARE = 0.9
CHARS_PER_TOKEN = 4
# The bytes of a Bub line that carry little of its text (`{"id": 7, "kind": ..., "meta": {}, "date": ...}`,
# a payload's keys, a call's id): a line never read is priced without them. On the sample tapes, a
# line priced so (at CHARS_PER_TOKEN) comes to more than its exact count for 3 lines in 194, by a few
# tokens each, and all of them to half of it.
LINE_ENVELOPE = 250
# A line written with json.dumps' default escapes (ensure_ascii: nanobot before v0.1.4.post1, say)
# spells a character outside ASCII `\u4e2d`, six bytes for the three of its UTF-8: lines never read
# are priced less the share of their bytes the escapes take past their characters in a sample of
# them, the newest, SAMPLE_BYTES at most, counted in the bytes without decoding them.
SAMPLE_BYTES = 256 * 1024
SAMPLE_ROWS = 256


class Estimate:
    """Tokens of the context the agent's own rules build from some entries, and of each prefix of it."""

    def __init__(
        self, kind: str, entries: list[Entry], encoding: str, unread: list[tuple[int, int]] | None = None
    ) -> None:
        """`entries` may hold lines too big to parse (their head only); `unread`: (pos, bytes of
        text) of the context's entries not read at all (their lines less LINE_ENVELOPE), at that pos."""
        self.kind, self.entries, self.encoding = kind, entries, encoding
        self.unread = unread or []
        self.capped = bool(self.unread)

    @cached_property
    def _counts(self) -> tuple[list[int], list[int], list[tuple[int, int]]]:
        messages = reader(self.kind).context_messages([e for e in self.entries if not e.truncated])
        left, rate = CAP_CHARS, [0, 0]  # the tokens and bytes counted: the rate of what is not
        counted: list[tuple[int, int]] = []
        for m in reversed(messages):  # the newest first: past the cap, the oldest text is priced by size
            text = _text(m)
            cut = text[:left]
            tokens = tokenizer.count(cut, self.encoding)
            rate = [rate[0] + tokens, rate[1] + len(cut.encode())]
            if len(text) > len(cut):
                self.capped = True
                tokens += _by_rate(len(text) - len(cut), tokens, len(cut))
            left -= len(cut)
            counted.append((m.source_pos, tokens + MESSAGE_OVERHEAD))
        for e in self.entries:
            # A line too big to parse is still sent (Bub reads it whole): its head's rate, over its bytes.
            if e.truncated and e.readable and e.context and e.kind in SENT_KINDS:
                self.capped, head = True, e.preview[:left]
                left -= len(head)
                # Counted as sent (escapes read), per byte of the line as written; at most a token
                # every CHARS_PER_TOKEN bytes, so a dense head cannot price the line past its size.
                tokens = tokenizer.count(json_head.unescape(head), self.encoding)
                rate = [rate[0] + tokens, rate[1] + len(head.encode())]
                priced = min(_by_rate(e.length, tokens, len(head.encode())), e.length // CHARS_PER_TOKEN)
                counted.append((e.pos, priced + MESSAGE_OVERHEAD))
        # Entries never read are priced at the lower of the two rates: nothing of theirs was sampled.
        counted += [(pos, min(_by_rate(size, *rate), size // CHARS_PER_TOKEN)) for pos, size in self.unread]
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


def read_context(
    tape: Tape, start: int, index: Rows | None, max_rows: int, max_bytes: int
) -> tuple[list[Entry], list[tuple[int, int]]]:
    """An Estimate's entries and `unread`: the newest entries after `start`, at most `max_rows` and
    `max_bytes` of them read (of a line too big to parse, its head only); the context's older ones
    not read, as (pos, bytes of text: escapes counted as their characters, SAMPLE_BYTES), those
    past `max_rows` summed from the index's lengths."""
    rows = (index or index_rows.of(tape)).after(start)
    newest = rows.tail(max_rows + 1)[::-1]
    kept, unread, size, sample = [], [], 0, []
    for row in newest[:max_rows]:
        size += DISPLAY_PREVIEW_BYTES if row.length > DISPLAY_PARSE_LIMIT else row.length
        if size <= max_bytes:
            kept.append(row)
        elif row.readable and row.context and row.kind in SENT_KINDS:
            unread.append((row.pos, max(0, row.length - LINE_ENVELOPE)))
            sample.append(row)
    if len(newest) > max_rows:
        older = rows.before(newest[max_rows - 1].pos).where(readable=True, context=True, kinds=SENT_KINDS)
        text = (
            np.maximum(c.columns["length"][i].astype(np.int64) - LINE_ENVELOPE, 0) for c, i in older.chunks()
        )
        unread.append((start + 1, sum(int(t.sum()) for t in text)))
        sample += older.tail(SAMPLE_ROWS)[::-1]
    share = _escaped_share(tape, sample) if unread else 0.0
    unread = [(pos, int(size * (1 - share))) for pos, size in unread]
    return sorted(timeline.read_rows(tape, kept), key=lambda e: e.pos), unread


def _escaped_share(tape: Tape, rows: list[Row]) -> float:
    """The share of these lines' text (less LINE_ENVELOPE each) that their escapes take past the
    characters they stand for, in at most SAMPLE_BYTES of them read in this order."""
    lines, text, left = [], 0, SAMPLE_BYTES
    # Another host's file: its copy in the database. Opened once: a few hundred short lines.
    with copy_reader.reading(tape.host), open_file(Path(tape.path)) as f:
        for row in rows:
            if left <= 0:
                break
            f.seek(row.offset)
            lines.append(f.read(min(row.length, left)))
            left -= len(lines[-1])
            text += max(0, len(lines[-1]) - LINE_ENVELOPE)
    return min(_escaped_bytes(b"\n".join(lines)) / text, 1.0) if text else 0.0


def _escaped_bytes(raw: bytes) -> int:
    """The bytes `\\uXXXX` escapes take in raw JSON past the UTF-8 of their characters: 3 of 6 for
    most (`\\u4e2d`), 4 below U+0800 (`\\u00e9`), 4 of each half of a pair (`\\ud83d\\ude00`).
    Counted, not decoded (the sample is big); `\\\\u` is a backslash written before a `u`."""
    escapes = raw.count(b"\\u") - raw.count(b"\\\\u")
    return 3 * escapes + len(_SHORTER.findall(raw)) if escapes else 0


# An escape whose character takes a byte less than 3 of UTF-8 (under U+0800: 2), or half a pair (4 for two).
_SHORTER = re.compile(rb"\\u(?:0[0-7]|d[89a-f])")


def _by_rate(size: int, tokens: int, sample: int) -> int:
    """The tokens of `size` characters (or bytes) at the rate of a sample of them counted with the
    tokenizer (`tokens` of `sample`); without one, at CHARS_PER_TOKEN."""
    return int(size * tokens * SAMPLE_SHARE / sample) if sample and tokens else size // CHARS_PER_TOKEN


def _text(m: ContextMessage) -> str:
    calls = [c.get("function") for c in m.tool_calls or [] if isinstance(c, dict)]
    parts = [f"{f.get('name') or ''}{_arguments(f.get('arguments'))}" for f in calls if isinstance(f, dict)]
    return "\n".join([content_text(m.content), *parts])


def _arguments(value: object) -> str:
    # Not repr(): a readable line may nest a thousand levels deep, past what repr follows.
    return value if isinstance(value, str) else json_text(value) if value else ""
