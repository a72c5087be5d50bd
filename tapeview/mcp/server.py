"""The MCP server (the SDK's low-level `Server`): its tools and resources, each call checked and audited."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from typing import Any

import mcp_types as types
from asgiref.sync import sync_to_async
from django.conf import settings
from django.http import HttpRequest
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from ninja.errors import AuthorizationError
from ninja.errors import ValidationError as NinjaValidationError
from pydantic import BaseModel, ValidationError

from tapeview.accounts import audit
from tapeview.accounts.auth import Caller
from tapeview.api import api

from . import tools
from .tools import BY_NAME, TOOLS, Tool, ToolFailed, result

log = logging.getLogger(__name__)

# What the audit row keeps of an argument: a long text (a memory's content, a summary) by its head.
KEPT_CHARS = 200
ANSWERED, REFUSED = (
    "answered",
    "refused",
)  # a call's outcome in the audit log (its writes have their own rows)
WRITES_OFF = "writes are off on this server: its operator turns them on with TAPEVIEW_MCP_WRITES=1"
INSTRUCTIONS = (
    "Tapeview: the tapes (session logs) and memory of AI agents. list_sessions finds a tape's id, read_tape "
    "pages its entries, search finds entries and memory, read_memory gives a store's text and version."
)
JSON = "application/json"
RESOURCE = re.compile(r"^tapeview://(tape|memory)/([A-Za-z0-9_-]{1,32})$")
TEMPLATES = [
    types.ResourceTemplate(
        name="tape",
        uri_template="tapeview://tape/{id}",
        description="A tape: its counts, last anchor, attachments (get_session's answer)",
        mime_type="application/json",
    ),
    types.ResourceTemplate(
        name="memory",
        uri_template="tapeview://memory/{id}",
        description="A memory store: its content and version (read_memory's answer)",
        mime_type="application/json",
    ),
]

# Who asks: the Django request of this call, its `auth` the caller (a 401 as ToolFailed where there is none).
Authorize = Callable[[ServerRequestContext[Any, Any]], HttpRequest]


def build(authorize: Authorize) -> Server:
    async def list_tools(ctx: ServerRequestContext, params: types.PaginatedRequestParams | None) -> Any:
        return types.ListToolsResult(tools=[_listed(tool) for tool in TOOLS if _offered(tool)])

    async def call_tool(ctx: ServerRequestContext, params: types.CallToolRequestParams) -> Any:
        return await sync_to_async(_call)(authorize, ctx, params.name, params.arguments or {})

    async def list_templates(ctx: ServerRequestContext, params: types.PaginatedRequestParams | None) -> Any:
        return types.ListResourceTemplatesResult(resource_templates=TEMPLATES)

    async def list_resources(ctx: ServerRequestContext, params: types.PaginatedRequestParams | None) -> Any:
        return await sync_to_async(_resources)(authorize, ctx)

    async def read_resource(ctx: ServerRequestContext, params: types.ReadResourceRequestParams) -> Any:
        return await sync_to_async(_read)(authorize, ctx, str(params.uri))

    return Server(
        "tapeview",
        version=api.version,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
    )


def _offered(tool: Tool) -> bool:
    return not tool.write or settings.TAPEVIEW_MCP_WRITES


def _listed(tool: Tool) -> types.Tool:
    return types.Tool(
        name=tool.name,
        description=tool.description,
        input_schema=tool.arguments.model_json_schema(),
        annotations=types.ToolAnnotations(read_only_hint=not tool.write, destructive_hint=False),
    )


def _call(
    authorize: Authorize, ctx: ServerRequestContext, name: str, arguments: dict
) -> types.CallToolResult:
    try:
        request = authorize(ctx)
    except ToolFailed as exc:
        return _tool_error(exc.status, exc.body)
    tool = BY_NAME.get(name)
    if tool is None or not _offered(tool):
        why = WRITES_OFF if tool is not None else f"no tool {name!r}: tools/list names them"
        status, body = 404 if tool is None else 403, {"detail": why}
        _audit(request, name, "", arguments, status, body)
        return _tool_error(status, body)
    args: BaseModel | None = None
    try:
        args = tool.arguments.model_validate(arguments)
        status, body = _run(tool, args, request)
    except ValidationError as exc:
        status, body = _answer(request, NinjaValidationError(exc.errors(include_url=False)))
    _audit(request, name, tool.subject(args) if args else "", arguments, status, body)
    if status >= 400:
        return _tool_error(status, body)
    return types.CallToolResult(content=[_text(body)], structured_content=body)


def _run(tool: Tool, args: BaseModel, request: HttpRequest) -> tuple[int, Any]:
    try:
        if tool.write and not _caller(request).can_write:
            raise AuthorizationError(message="this needs a token with write scope")
        return result(tool, args, request, tool.run(request, args))
    except ToolFailed as exc:
        return exc.status, exc.body
    except Exception as exc:  # mapped as the REST API maps it, or raised on as a crash
        return _answer(request, exc)


def _answer(request: HttpRequest, exc: Exception) -> tuple[int, Any]:
    """The REST API's answer to `exc` (tapeview/api.py maps each error once); a crash is raised on."""
    response = api.on_exception(request, exc)
    if response.status_code == 500:
        raise exc
    return response.status_code, json.loads(response.content)


def _resources(authorize: Authorize, ctx: ServerRequestContext) -> types.ListResourcesResult:
    """The newest tapes and the memory stores, a first page of each (the templates reach the rest)."""
    try:
        request = authorize(ctx)
    except ToolFailed as exc:
        raise MCPError(code=types.INVALID_REQUEST, message=str(exc)) from None
    return types.ListResourcesResult(
        resources=[
            types.Resource(name=name, uri=uri, mime_type=JSON) for name, uri in tools.resources(request)
        ]
    )


def _read(authorize: Authorize, ctx: ServerRequestContext, uri: str) -> types.ReadResourceResult:
    try:
        request = authorize(ctx)
    except ToolFailed as exc:
        raise MCPError(code=types.INVALID_REQUEST, message=str(exc)) from None
    found = RESOURCE.match(uri)
    if found is None:
        raise MCPError(
            code=types.INVALID_PARAMS, message=f"no resource {uri}: tapeview://tape/{{id}} or memory"
        )
    name = "get_session" if found.group(1) == "tape" else "read_memory"
    key = "tape_id" if name == "get_session" else "store_id"
    tool = BY_NAME[name]
    args = tool.arguments.model_validate({key: found.group(2)})
    status, body = _run(tool, args, request)
    _audit(request, f"resource {found.group(1)}", tool.subject(args), {"uri": uri}, status, body)
    if status >= 400:
        raise MCPError(
            code=types.INVALID_PARAMS, message=f"{status}: {body.get('detail')}", data={"uri": uri}
        )
    return types.ReadResourceResult(
        contents=[types.TextResourceContents(uri=uri, mime_type="application/json", text=json.dumps(body))]
    )


def _caller(request: HttpRequest) -> Caller:
    return request.auth  # type: ignore[attr-defined]


def _audit(request: HttpRequest, name: str, about: str, arguments: dict, status: int, body: Any) -> None:
    """One audit row per call, reads too: what an agent asked of the tapes and memory, and the status.

    The row names what the call was about (`about`: tape:<id>, store:<id>) in its target, not as its
    subject: a store's or tape's page lists the writes of its subject, and reads would crowd them out.
    """
    detail = {"arguments": _kept(arguments), "status": status}
    why = ""
    if status >= 400:
        text = body.get("detail") if isinstance(body, dict) else body
        why = f"{status}: {text if isinstance(text, str) else json.dumps(text)}"
    name = _kept(name)
    audit.record(
        _caller(request).actor,
        f"mcp {name}"[:40],
        subject="",
        target=f"MCP {name} {about}".rstrip(),
        detail=detail,
        outcome=REFUSED if status >= 400 else ANSWERED,
        why=why,
    )


def _kept(value: Any) -> Any:
    if isinstance(value, str):
        # As the client sent it, but storable: PostgreSQL takes no NUL and no lone surrogate.
        value = value.replace("\x00", "\ufffd").encode("utf-8", "replace").decode()
        return value if len(value) <= KEPT_CHARS else value[:KEPT_CHARS] + "…"
    if isinstance(value, dict):
        return {_kept(str(k)): _kept(v) for k, v in list(value.items())[:50]}
    if isinstance(value, list):
        return [_kept(v) for v in value[:50]]
    return value if isinstance(value, int | float | bool) or value is None else str(value)[:KEPT_CHARS]


def _text(body: Any) -> types.TextContent:
    return types.TextContent(type="text", text=json.dumps(body, ensure_ascii=False))


def _tool_error(status: int, body: Any) -> types.CallToolResult:
    shown = {"status": status, **body} if isinstance(body, dict) else {"status": status, "detail": body}
    return types.CallToolResult(content=[_text(shown)], structured_content=shown, is_error=True)
