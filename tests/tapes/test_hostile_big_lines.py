"""A Bub line too long to read whole is read from its head whichever separators json.dumps wrote
(Bub's default ", " or compact ","); one whose head makes no entry says why, on the page and in the API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tapeview.sources.model import SCAN_PARSE_LIMIT
from tapeview.tapes import discovery

from .test_budget import key, line

pytestmark = pytest.mark.django_db

BIG = "A" * SCAN_PARSE_LIMIT


def write(folder: Path, name: str, lines: list[bytes]) -> str:
    (folder / f"{name}.jsonl").write_bytes(b"".join(raw + b"\n" for raw in lines))
    discovery.sync()
    return key(name)


def small(n: int, kind: str, payload: dict) -> bytes:
    return json.dumps(line(n, kind, payload)).encode()


@pytest.mark.parametrize("separators", [(", ", ": "), (",", ":")], ids=["default", "compact"])
def test_a_big_line_is_an_entry_of_its_kind_whatever_its_separators(
    operator_client, served, separators: tuple[str, str]
) -> None:
    big = json.dumps(line(2, "message", {"role": "user", "content": BIG}), separators=separators).encode()
    k = write(served["samples"], "bigline", [small(1, "anchor", {"name": "start", "state": {}}), big])
    entry = operator_client.get(f"/api/tapes/{k}/entries/2").json()
    assert (entry["kind"], entry["id"], entry["readable"], entry["truncated"]) == ("message", 2, True, True)
    tape = operator_client.get(f"/api/tapes/{k}").json()
    assert tape["unreadable"] == 0


@pytest.mark.parametrize(
    ("head", "why"),
    [
        (b'{"kind": "message", "id": 2, "payload": "', "that does not begin with an entry's id and kind"),
        (b'{"id": 99999999999999999999, "kind": "message", "payload": "', "whose id is past 64 bits"),
    ],
    ids=["kind_first", "id_past_64_bits"],
)
def test_a_big_line_that_is_no_entry_says_why(operator_client, served, head: bytes, why: str) -> None:
    big = head + BIG.encode() + b'"}'
    k = write(served["samples"], "bigbad", [small(1, "anchor", {"name": "start", "state": {}}), big])
    entry = operator_client.get(f"/api/tapes/{k}/entries/2").json()
    assert entry["kind"] == "unreadable"
    assert entry["problem"] == f"a line of {len(big) + 1:,} bytes, too long to read whole, {why}"
    page = operator_client.get(f"/tapes/{k}/").content.decode()
    assert why.replace("'", "&#x27;") in page
