"""The search tests' shared tape: one big enough for the search pass to take in several batches."""

from __future__ import annotations

import json

import pytest

from tapeview.search import catchup, engine
from tapeview.tapes import discovery
from tapeview.tapes.models import Tape

N = 2600  # more than the indexer's small increment (feed.SMALL) and than two of the pass's batches here


@pytest.fixture
def big(served, monkeypatch) -> Tape:
    """A Bub tape of N messages, entry n saying `w<n>` and, every one of them, `common`."""
    monkeypatch.setattr(catchup, "BATCH", 1000)
    lines = [
        json.dumps(
            {
                "id": n,
                "kind": "message",
                "payload": {"role": "user", "content": f"entry w{n} common"},
                "meta": {},
                "date": f"2026-01-{1 + n % 28:02d}T10:00:00+00:00",
            }
        )
        for n in range(1, N + 1)
    ]
    (served["samples"] / "big.jsonl").write_text("\n".join(lines) + "\n")
    discovery.sync()
    return Tape.objects.get(source="samples", name="big")


def hits_of(q: str, tape: Tape) -> list[int]:
    return sorted(h.pos for h in engine.search(q, tape_key=tape.key, limit=100))
