"""Counting tokens with a real BPE tokenizer whose encodings ship inside its package (bpe-openai).

bpe-openai embeds cl100k_base and o200k_base, so counting works on a machine without network
access (tests/tapes/test_budget.py counts with every socket refused); tiktoken would download
its encoding at first use.
"""

from __future__ import annotations

import warnings
from functools import cache
from typing import Any

# bpe-openai refuses a text of 1M characters or over 200k tokens in one call: count in pieces
# that cannot reach either (a character is at most 4 bytes, so at most 4 tokens).
PIECE = 40_000


@cache
def _encoding(name: str) -> Any:
    # Deferred: importing bpe-openai loads its rank tables (~1.5 s, ~100 MB), which a process
    # needs only once it estimates a context; every later count reuses them.
    with warnings.catch_warnings():
        # It opens its tables with importlib.resources.open_binary, deprecated since Python 3.11.
        warnings.simplefilter("ignore", DeprecationWarning)
        import bpe_openai

        return bpe_openai.get_encoding(name)


def count(text: str, encoding: str = "o200k_base") -> int:
    """The tokens of `text` in an encoding (a piece boundary may split a word: ±1 per piece)."""
    enc = _encoding(encoding)
    return sum(len(enc.encode_ordinary(text[i : i + PIECE])) for i in range(0, len(text), PIECE))
