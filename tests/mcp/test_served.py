"""The MCP server of a real `tapeview serve`, driven by the MCP SDK's own client (2026-07-28, one POST a request).

One server for the module, over copies of real Bub tapes and a nanobot memory store, with write tools
on (TAPEVIEW_MCP_WRITES=1); `tapeview mcp --stdio` beside it, over the same database, without them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import requests
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.servers import environment, own_database, tapeview_serve

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
READS = {"list_sessions", "get_session", "read_tape", "search", "context_after", "phases", "budget"}
READS |= {"read_memory", "memory_history", "blame"}
WRITES = {"handoff", "edit_memory", "add_review"}
MAKE_TOKENS = (
    "import json; from tapeview.accounts import tokens; "
    "made = {w: tokens.create(w, s)[1] for w, s in (('read', 'read'), ('write', 'write'), ('gone', 'read'))}; "
    "tokens.revoke(tokens.find('gone')); print(json.dumps(made))"
)


def tapeview(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "tapeview", *args], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


class Served:
    def __init__(self, url: str, env: dict[str, str], tokens: dict[str, str], root: Path) -> None:
        self.url, self.env, self.tokens, self.root = url, env, tokens, root

    def rest(self, path: str, **params: Any) -> Any:
        answer = requests.get(f"{self.url}/api{path}", params=params, headers=self.bearer("read"), timeout=30)
        assert answer.status_code == 200, answer.text
        return answer.json()

    def bearer(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[who]}"}

    def audit(self) -> list[dict]:
        out = tapeview(
            self.env,
            "shell",
            "-c",
            "import json; from tapeview.accounts.models import AuditEvent as A; "
            "print(json.dumps(list(A.objects.order_by('id').values('actor', 'action', 'subject', 'target', 'outcome', 'why'))))",
        )
        return json.loads(out.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("mcp")
    shutil.copytree(FIXTURES / "bub" / "tapes_dir", root / "bub")
    # The copies keep the checkout's times: an agent that wrote minutes ago is mid-turn, not stopped, and
    # its handoff is refused even when confirmed. These agents stopped an hour ago.
    hour_ago = time.time() - 3600
    for tape in (root / "bub").rglob("*"):
        os.utime(tape, (hour_ago, hour_ago))
    nanobot = root / "nanobot"
    shutil.copytree(FIXTURES / "nanobot_memory" / "current", nanobot)
    sources = f"bub=bub:{root / 'bub'},nano=nanobot:{nanobot}"
    env = environment(root / "home", sources, TAPEVIEW_MCP_WRITES="1", TAPEVIEW_QUIET_SECONDS="0.2")
    with own_database(env, "tapeview_mcp") as env:
        tapeview(env, "migrate", "-v", "0")
        tapeview(env, "index")
        made = json.loads(tapeview(env, "shell", "-c", MAKE_TOKENS).strip().splitlines()[-1])
        with tapeview_serve(env, root / "home", first=False) as (url, _link, _at):
            yield Served(url, env, made, root)


@asynccontextmanager
async def connected(served: Served, who: str | None, mode: str = "auto"):
    headers = served.bearer(who) if who else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(f"{served.url}/mcp", http_client=http), mode=mode) as client,
    ):
        yield client


def call(served: Served, name: str, arguments: dict, who: str = "read") -> tuple[bool, Any]:
    async def go() -> Any:
        async with connected(served, who) as client:
            return await client.call_tool(name, arguments)

    found = anyio.run(go)
    assert found.structured_content == json.loads(found.content[0].text)
    return bool(found.is_error), found.structured_content


def ok(served: Served, name: str, arguments: dict, who: str = "read") -> Any:
    failed, body = call(served, name, arguments, who)
    assert not failed, body
    return body


def a_tape(served: Served) -> dict:
    """The longest Bub tape, with anchors."""
    tapes = served.rest("/tapes", kind="bub", sort="-entries")["items"]
    return next(t for t in tapes if t["anchors"])


def a_store(served: Served) -> dict:
    return next(s for s in served.rest("/memory")["items"] if s["long_term"])


def test_discovery_finds_the_modern_protocol_and_every_tool(served: Served) -> None:
    async def go() -> tuple[str, set[str], list[str]]:
        async with connected(served, "read") as client:
            tools = await client.list_tools()
            templates = await client.list_resource_templates()
            return (
                client.protocol_version,
                {t.name for t in tools.tools},
                [t.uri_template for t in templates.resource_templates],
            )

    version, names, templates = anyio.run(go)
    assert version == "2026-07-28"
    assert names == READS | WRITES
    assert templates == ["tapeview://tape/{id}", "tapeview://memory/{id}"]


def test_a_client_of_the_initialize_handshake_is_served_too(served: Served) -> None:
    async def go() -> tuple[str, set[str]]:
        async with connected(served, "read", mode="legacy") as client:
            return client.protocol_version, {t.name for t in (await client.list_tools()).tools}

    version, names = anyio.run(go)
    assert version == "2025-11-25"
    assert names == READS | WRITES


@pytest.mark.parametrize("who", ["gone", None])
def test_a_revoked_token_or_none_is_refused_with_401(served: Served, who: str | None) -> None:
    answer = requests.post(
        f"{served.url}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
        headers={
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2026-07-28",
            **(served.bearer(who) if who else {}),
        },
        timeout=30,
    )
    assert answer.status_code == 401
    assert answer.headers["WWW-Authenticate"] == "Bearer"
    assert "Bearer" in answer.json()["detail"]

    async def go() -> None:
        async with connected(served, who) as client:
            await client.list_tools()

    with pytest.raises(BaseExceptionGroup) as raised:  # the SDK client's task groups wrap its MCPError
        anyio.run(go)
    assert raised.group_contains(MCPError)


def test_list_sessions_equals_the_rest_list(served: Served) -> None:
    args = {"kind": "bub", "sort": "-entries", "limit": 2}
    assert ok(served, "list_sessions", args) == served.rest("/tapes", **args)


def test_get_session_and_budget_equal_rest(served: Served) -> None:
    tape = a_tape(served)
    assert ok(served, "get_session", {"tape_id": tape["id"]}) == served.rest(f"/tapes/{tape['id']}")
    assert ok(served, "budget", {"tape_id": tape["id"]}) == served.rest(f"/tapes/{tape['id']}/budget")


def test_read_tape_pages_as_the_entries_endpoint(served: Served) -> None:
    tape = a_tape(served)
    first = ok(served, "read_tape", {"tape_id": tape["id"], "limit": 5})
    assert first == served.rest(f"/tapes/{tape['id']}/entries", limit=5)
    assert len(first["items"]) == 5 and first["next_cursor"]
    second = ok(served, "read_tape", {"tape_id": tape["id"], "limit": 5, "cursor": first["next_cursor"]})
    assert second["items"][0]["pos"] > first["items"][-1]["pos"]


def test_read_tape_from_an_anchor_starts_at_it(served: Served) -> None:
    tape = a_tape(served)
    anchor = served.rest(f"/tapes/{tape['id']}/anchors")["items"][-1]
    page = ok(served, "read_tape", {"tape_id": tape["id"], "anchor": anchor["name"], "limit": 3})
    assert page["items"][0]["pos"] == anchor["pos"]
    assert page == served.rest(f"/tapes/{tape['id']}/entries", after=anchor["pos"] - 1, limit=3)


def test_search_of_tapes_and_memory_equals_rest(served: Served) -> None:
    tape_hits = ok(served, "search", {"q": "the", "limit": 3})
    assert tape_hits == served.rest("/search", q="the", limit=3)
    assert tape_hits["items"]
    memory_hits = ok(served, "search", {"q": "the", "of": "memory", "limit": 3})
    assert memory_hits == served.rest("/memory/search", q="the", limit=3)


def test_context_after_pages_the_rest_context(served: Served) -> None:
    tape = a_tape(served)
    whole = served.rest(f"/tapes/{tape['id']}/context")
    page = ok(served, "context_after", {"tape_id": tape["id"], "limit": 2})
    assert page["anchor"] == whole["anchor"]
    assert page["messages"] == whole["messages"][: len(page["messages"])]
    assert page["messages"]


def test_phases_equal_rest(served: Served) -> None:
    tape = a_tape(served)
    assert ok(served, "phases", {"tape_id": tape["id"], "limit": 3}) == served.rest(
        f"/tapes/{tape['id']}/phases", limit=3
    )


def test_memory_tools_equal_rest(served: Served) -> None:
    store = a_store(served)
    sid = store["id"]
    assert ok(served, "read_memory", {"store_id": sid}) == served.rest(f"/memory/{sid}")
    history = ok(served, "memory_history", {"store_id": sid})
    assert history == served.rest(f"/memory/{sid}/versions")
    assert ok(served, "blame", {"store_id": sid}) == served.rest(f"/memory/{sid}/blame")
    version = history["items"][-1]["version"]
    past = ok(served, "read_memory", {"store_id": sid, "version": version})
    assert past["version"] == version and isinstance(past["content"], str)


def test_resources_read_a_tape_and_a_store(served: Served) -> None:
    tape, store = a_tape(served), a_store(served)

    async def go() -> tuple[str, str]:
        async with connected(served, "read") as client:
            t = await client.read_resource(f"tapeview://tape/{tape['id']}")
            m = await client.read_resource(f"tapeview://memory/{store['id']}")
            return t.contents[0].text, m.contents[0].text

    tape_text, store_text = anyio.run(go)
    assert json.loads(tape_text) == served.rest(f"/tapes/{tape['id']}")
    assert json.loads(store_text)["version"] == served.rest(f"/memory/{store['id']}")["version"]


def test_resources_list_the_newest_tapes_and_the_stores(served: Served) -> None:
    async def go() -> list[str]:
        async with connected(served, "read") as client:
            return [str(r.uri) for r in (await client.list_resources()).resources]

    uris = anyio.run(go)
    tapes = [f"tapeview://tape/{t['id']}" for t in served.rest("/tapes")["items"]]
    stores = [f"tapeview://memory/{s['id']}" for s in served.rest("/memory")["items"]]
    assert uris == tapes + stores


def test_an_unknown_resource_is_a_protocol_error(served: Served) -> None:
    async def go() -> None:
        async with connected(served, "read") as client:
            await client.read_resource("tapeview://tape/nosuch")

    with pytest.raises(BaseExceptionGroup) as raised:  # the SDK client's task groups wrap its MCPError
        anyio.run(go)
    assert raised.group_contains(MCPError, match="404: no such tape")


@pytest.mark.parametrize(
    ("name", "arguments", "status", "words"),
    [
        ("read_tape", {"tape_id": "nosuch"}, 404, "no such tape"),
        ("read_tape", {"tape_id": "x", "limit": 10_000}, 422, "less than or equal to 500"),
        ("list_sessions", {"sort": "sideways"}, 422, "sort"),
        ("list_sessions", {"colour": "red"}, 422, "colour"),
        ("search", {"q": "the", "of": "memory", "role": "user"}, 400, "of=memory takes no role"),
        ("read_tape", {"tape_id": "x", "cursor": "AAAA"}, 404, ""),
        ("nosuch_tool", {}, 404, "no tool"),
        ("no\x00such", {"q": "\x00"}, 404, "no tool"),
        ("list_sessions", {"q": "a\x00b", "\x00": "x"}, 422, "string_pattern_mismatch"),
    ],
)
def test_a_bad_argument_is_a_tool_error(
    served: Served, name: str, arguments: dict, status: int, words: str
) -> None:
    failed, body = call(served, name, arguments)
    assert failed
    assert body["status"] == status
    assert words in json.dumps(body)


def test_a_lone_surrogate_is_a_tool_error_too(served: Served) -> None:
    # The SDK's client cannot send one (it encodes UTF-8); a hand-made request can.
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    params = {"name": "list_sessions", "arguments": {"q": "\ud800", "\ud800": 1}, "_meta": meta}
    body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params})
    answer = requests.post(
        f"{served.url}/mcp",
        data=body,
        headers={
            **served.bearer("read"),
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "tools/call",
            "Mcp-Name": "list_sessions",
        },
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    result = answer.json()["result"]
    assert result["isError"] and result["structuredContent"]["status"] == 422


def test_a_read_token_is_refused_a_write_tool(served: Served) -> None:
    tape = a_tape(served)
    failed, body = call(served, "add_review", {"tape_id": tape["id"], "pos": 1, "score": 4}, who="read")
    assert failed and body == {"status": 403, "detail": "this needs a token with write scope"}


def test_add_review_and_handoff_write_as_the_api(served: Served) -> None:
    tape = a_tape(served)
    review = ok(served, "add_review", {"tape_id": tape["id"], "pos": 1, "score": 4, "comment": "ok"}, "write")
    assert review["score"] == 4 and review["author"] == "token:write"
    listed = served.rest("/reviews", tape=tape["id"])["items"]
    assert review in listed
    live = next(
        t for t in served.rest("/tapes", kind="bub")["items"] if served.rest(f"/tapes/{t['id']}")["handoff"]
    )
    last_id = served.rest(f"/tapes/{live['id']}/entries", limit=500)["items"][-1]["id"]
    written = ok(
        served,
        "handoff",
        {"tape_id": live["id"], "name": "mcp/check", "after": last_id, "confirm_stopped": True},
        "write",
    )
    assert written["ids"] == [last_id + 1, last_id + 2]
    assert written["entries"][0]["name"] == "mcp/check"


def test_a_stale_edit_is_a_tool_error_with_the_diff_and_changes_nothing(served: Served) -> None:
    memory = served.root / "nanobot" / "workspace" / "memory" / "MEMORY.md"
    before = memory.read_bytes()
    stores = [served.rest(f"/memory/{s['id']}") for s in served.rest("/memory", kind="nanobot")["items"]]
    store = next(s for s in stores if s["long_term_text"] == before.decode())
    stale = {"store_id": store["id"], "content": "- replaced\n", "base_version": "stale"}
    failed, body = call(served, "edit_memory", stale, who="write")
    assert failed and body["status"] == 409
    assert body["current_version"] == store["version"]
    assert "-" in body["diff"] and "+- replaced" in body["diff"]
    assert memory.read_bytes() == before
    fresh = {**stale, "base_version": store["version"], "content": before.decode() + "- added by MCP\n"}
    edited = ok(served, "edit_memory", fresh, "write")
    assert edited["version"] != store["version"]
    assert memory.read_text().endswith("- added by MCP\n")
    # The write's own row, as the REST API's, is the store's; the call's row names the store in its target.
    rows = served.audit()
    writes = [r for r in rows if r["subject"] == f"store:{store['id']}"]
    assert [r["actor"] for r in writes] == ["token:write"]
    assert writes[0]["outcome"] == "written" and not writes[0]["action"].startswith("mcp ")
    calls = [r for r in rows if r["action"] == "mcp edit_memory"]
    assert [r["outcome"] for r in calls] == ["refused", "answered"]
    assert calls[-1]["target"] == f"MCP edit_memory store:{store['id']}"


def test_every_call_has_its_audit_row(served: Served) -> None:
    tape = a_tape(served)
    ok(served, "budget", {"tape_id": tape["id"]})
    call(served, "read_tape", {"tape_id": "nosuch"})
    rows = served.audit()[-2:]
    assert rows[0] == {
        "actor": "token:read",
        "action": "mcp budget",
        "subject": "",
        "target": f"MCP budget tape:{tape['id']}",
        "outcome": "answered",
        "why": "",
    }
    assert rows[1]["action"] == "mcp read_tape" and rows[1]["outcome"] == "refused"
    assert rows[1]["why"].startswith("404: ")


def test_stdio_serves_the_same_tools_without_writes(served: Served) -> None:
    tape = a_tape(served)
    env = {k: v for k, v in served.env.items() if k != "TAPEVIEW_MCP_WRITES"}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "tapeview", "mcp", "--stdio"],
        env={**env, "TAPEVIEW_TOKEN": served.tokens["write"]},
    )

    async def go() -> tuple[set[str], Any, Any]:
        async with Client(params) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            budget = await client.call_tool("budget", {"tape_id": tape["id"]})
            refused = await client.call_tool("add_review", {"tape_id": tape["id"], "pos": 1, "score": 2})
            return names, budget, refused

    names, budget, refused = anyio.run(go)
    assert names == READS
    assert budget.structured_content == served.rest(f"/tapes/{tape['id']}/budget")
    assert refused.is_error and refused.structured_content["status"] == 403
    assert "TAPEVIEW_MCP_WRITES=1" in refused.structured_content["detail"]


def test_stdio_refuses_to_start_without_a_live_token(served: Served) -> None:
    env = {k: v for k, v in served.env.items() if k != "TAPEVIEW_TOKEN"}
    done = subprocess.run(
        [sys.executable, "-m", "tapeview", "mcp", "--stdio", "--token", served.tokens["gone"]],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "not a live API token" in done.stderr


def test_bad_tokens_are_locked_out_as_the_api_does_and_a_live_one_is_not(served: Served) -> None:
    # Last in the module: the lockout holds for the address's bad tokens until the cool-off ends.
    def post(token: str) -> requests.Response:
        return requests.post(
            f"{served.url}/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
            headers={"Authorization": f"Bearer {token}", "MCP-Protocol-Version": "2026-07-28"},
            timeout=30,
        )

    # Ten failures lock it (TAPEVIEW_SIGNIN_FAILURES); the revoked token's tests above counted too.
    answers = [post(f"tv_wrong{n}").status_code for n in range(10)]
    assert set(answers) <= {401, 429} and answers[0] == 401
    locked = post("tv_wrong_again")
    assert locked.status_code == 429
    assert int(locked.headers["Retry-After"]) > 0
    assert "too many failed sign-ins" in locked.json()["detail"]
    assert ok(served, "list_sessions", {"limit": 1})["items"]
