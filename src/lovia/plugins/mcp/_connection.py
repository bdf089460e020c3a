"""A live connection to one MCP server, and the lovia tools bound to it.

The SDK's transports and ``ClientSession`` are anyio context managers that must be entered
and left by one task. A connection therefore lives in a task of its own (``LiveSession``): the run
that opened it, another run reusing it, or a different task closing it never trip over anyio's
task affinity, and concurrent calls share the session (the SDK matches answers to requests).
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import logging
import re
from typing import Any

from ...errors import MCPError, ToolError, UserError
from ...run_context import RunContext
from ...tools.base import OnResume, Tool
from ._content import MCPToolResult, normalize_schema, render_mcp_content, result_value
from ._failures import call_error, cut_result
from ._live import LiveSession, describe_error, lost_connection
from ._settings import ServerSettings

__all__ = ["MCPConnection"]

log = logging.getLogger("lovia.mcp")

_BAD_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")


def _tool_name(prefix: str | None, raw: str) -> str:
    """The lovia tool name for an MCP tool: ``prefix__raw``, with characters tool names may not
    hold replaced by ``_``, shortened (with a hash) past 64 characters."""
    name = _BAD_NAME_CHARS.sub("_", f"{prefix}__{raw}" if prefix else raw)
    if len(name) > 64:
        digest = hashlib.sha1(name.encode()).hexdigest()[:8]
        name = f"{name[:55]}_{digest}"
    return name


def _hint(annotations: Any, name: str) -> bool | None:
    if annotations is None:
        return None
    value = getattr(annotations, name, None)
    if value is None:  # mcp 1.x spells the hints in camelCase
        camel = re.sub(r"_([a-z])", lambda m: m.group(1).upper(), name)
        value = getattr(annotations, camel, None)
    return value if isinstance(value, bool) else None


def _destructive(annotations: Any) -> bool:
    """The server says the tool may destroy something (and does not say it only reads)."""
    return _hint(annotations, "destructive_hint") is True and not _hint(
        annotations, "read_only_hint"
    )


IDEMPOTENCY_META = "lovia/idempotency_key"
"""The ``_meta`` key a tool call's request carries ``ctx.idempotency_key`` under."""


def _key_of(ctx: Any) -> str | None:
    """The running call's idempotency key; ``None`` for a tool called outside a run."""
    try:
        key: str = ctx.idempotency_key
    except (UserError, AttributeError):
        return None
    return key


def _resume_policy(annotations: Any) -> OnResume:
    """What a resumed run does with an in-doubt call: run again unless the tool says it is
    destructive and not idempotent."""
    if _hint(annotations, "read_only_hint") or _hint(annotations, "idempotent_hint"):
        return "rerun"
    return "fail" if _destructive(annotations) else "rerun"


class MCPConnection:
    """A live connection to one MCP server and the lovia tools made from its tools.

    ``await server.open()`` (what the ``MCP`` plugin does per run) or ``async with
    server.session() as conn`` (kept alive across runs) makes one. ``tools()`` lists the
    tools; ``call_tool(name, arguments)`` calls one by its MCP name; ``refresh_tools()``
    lists them again; ``close()`` ends the connection (and a stdio server's process).
    """

    def __init__(self, server: ServerSettings, *, close_after_run: bool) -> None:
        self.server = server
        self.close_after_run = close_after_run
        self._label = server.describe()
        self._live: LiveSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = asyncio.Lock()
        self._generation = 0
        self._tools: list[Tool] | None = None
        self._tools_changed = False  # the server announced a new tool list since the last one
        self._closed = False

    @property
    def prefix(self) -> str | None:
        return self.server.name

    @property
    def defer(self) -> bool:
        return self.server.defer

    @property
    def closed(self) -> bool:
        return self._closed

    async def open(self) -> MCPConnection:
        """A live connection opens to itself (so it can stand where a server config does)."""
        self._check_usable()
        return self

    async def __aenter__(self) -> MCPConnection:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def tools(self) -> list[Tool]:
        """The lovia tools of this server (after ``include_tools`` / ``exclude_tools``)."""
        self._check_usable()
        return list(self._tools or [])

    async def refresh_tools(self) -> list[Tool]:
        """List the server's tools again (after it announced a change)."""
        self._check_usable()
        self._tools_changed = False  # a change announced while listing marks it again
        try:
            self._tools = await self._load_tools()
        except _LostDuringCall as lost:  # the server went away since the last call
            if not self.server.auto_reconnect:
                raise MCPError(
                    f"MCP server {self._label} went away; its tools cannot be listed",
                    hint="restart the server, or set auto_reconnect=True",
                ) from lost
            await self._reconnect(lost.generation)
            self._tools = await self._load_tools()
        return list(self._tools)

    async def current_tools(self) -> list[Tool]:
        """The tools, listed again first when the server announced a change
        (``notifications/tools/list_changed``) since they were last listed. Each run that
        uses the connection starts with this list."""
        self._check_usable()
        if self._tools_changed:
            return await self.refresh_tools()
        return self.tools()

    def _mark_tools_changed(self) -> None:
        self._tools_changed = True

    async def close(self) -> None:
        """End the session; a stdio server's process is stopped. Calling it again is fine."""
        self._closed = True
        live, self._live = self._live, None
        if live is not None:
            await live.stop()

    async def connect(self) -> None:
        """Start the session and list the tools (``MCPServer.open`` calls this)."""
        self._loop = asyncio.get_running_loop()
        await self._reconnect(self._generation)
        try:
            self._tools = await self._load_tools()
        except _LostDuringCall as lost:
            raise MCPError(
                f"MCP server {self._label} went away right after its handshake",
                hint="the server stops while listing its tools; check its logs",
            ) from lost.__cause__

    # --- calls ----------------------------------------------------------------------------

    async def call_tool(
        self, name: str, arguments: dict[str, Any], *, idempotency_key: str | None = None
    ) -> MCPToolResult:
        """Call the server's tool ``name`` (its MCP name, without the prefix). A call whose
        connection died is not sent again (the connection is reopened for the next one).
        ``idempotency_key`` goes in the request's ``_meta`` as ``lovia/idempotency_key``."""
        result: MCPToolResult = await self._call_with_recovery(
            name, arguments, False, idempotency_key
        )
        return result

    async def _call_once(
        self, name: str, arguments: dict[str, Any], key: str | None = None
    ) -> MCPToolResult:
        self._check_usable()
        generation, live = self._generation, self._live_now()
        assert live.session is not None
        try:
            if key is None:
                result = await live.session.call_tool(name, arguments)
            else:
                meta: Any = {IDEMPOTENCY_META: key}
                result = await live.session.call_tool(name, arguments, meta=meta)
        except Exception as exc:
            if lost_connection(exc):
                raise _LostDuringCall(generation) from exc
            verdict = live.guard.take(exc)
            if verdict is not None and verdict.cut is not None:
                return cut_result(verdict.cut)
            timeout = self.server.call_timeout
            raise call_error(self._label, name, exc, verdict, timeout) from exc
        return MCPToolResult(
            content=list(getattr(result, "content", None) or []),
            is_error=bool(getattr(result, "is_error", False)),
            structured_content=getattr(result, "structured_content", None),
        )

    async def _call_with_recovery(
        self, name: str, args: dict[str, Any], safe: bool, key: str | None = None
    ) -> MCPToolResult:
        """Call once; if the connection died, reopen it and call again only when the call
        never left, or the tool is safe to run twice (``safe``)."""
        try:
            return await self._call_once(name, args, key)
        except _LostDuringCall as lost:
            cause = lost.__cause__ or lost
            if not self.server.auto_reconnect:
                raise MCPError(
                    f"MCP server {self._label} went away during {name!r}: {describe_error(cause)}",
                    hint=(
                        "the call may or may not have taken effect; "
                        if lost.sent
                        else "the call was not sent; "
                    )
                    + "restart the server, or set auto_reconnect=True to reconnect automatically",
                    tool_name=name,
                    in_doubt=lost.sent,
                ) from cause
            try:
                await self._reconnect(lost.generation)
            except MCPError as exc:
                raise MCPError(
                    f"MCP server {self._label} went away during {name!r} and reconnecting "
                    f"failed: {exc.message}",
                    hint=exc.hint,
                    tool_name=name,
                ) from exc
            if lost.sent and not safe:
                raise MCPError(
                    f"MCP server {self._label} went away during {name!r}; it may or may not "
                    "have taken effect, and the tool must not run twice (it is marked "
                    "destructive, or its on_resume says so), so it was not called again",
                    hint="check whether it took effect before calling it again "
                    "(the connection is open again)",
                    tool_name=name,
                    in_doubt=True,
                ) from cause
            log.info("mcp.retry: %s reconnected; calling %r again", self._label, name)
            try:
                return await self._call_once(name, args, key)
            except _LostDuringCall as again:
                raise MCPError(
                    f"MCP server {self._label} went away again during {name!r}",
                    hint="the server stops while handling this call; check its logs",
                    tool_name=name,
                ) from again.__cause__

    # --- internals ------------------------------------------------------------------------

    def _check_usable(self) -> None:
        if self._closed:
            raise MCPError(
                f"the connection to MCP server {self._label} is closed",
                hint="open it again with 'async with server.session()', or pass the server "
                "config to MCP(...) so each run opens its own",
            )
        if self._loop is not None and self._loop is not asyncio.get_running_loop():
            raise MCPError(
                f"the connection to MCP server {self._label} belongs to another event loop",
                hint="open a kept-alive connection inside the same asyncio.run(...) as the "
                "runs that use it, or let each run open its own",
            )

    def _live_now(self) -> LiveSession:
        live = self._live
        if live is None or live.session is None:
            raise _LostDuringCall(self._generation, sent=False)
        return live

    async def _reconnect(self, seen_generation: int) -> None:
        """Replace the session, unless another call already did since ``seen_generation``."""
        async with self._lock:
            if self._closed or self._generation != seen_generation:
                return
            old, self._live = self._live, None
            if old is not None:
                await old.stop()
            live = LiveSession(
                self.server.transport(),
                self._label,
                self._mark_tools_changed,
                self.server.call_timeout,
            )
            await live.start(self.server.connect_timeout)
            self._live = live
            self._generation += 1

    async def _list_tools(self) -> list[Any]:
        from mcp.types import PaginatedRequestParams

        generation, live = self._generation, self._live_now()
        assert live.session is not None
        found: list[Any] = []
        params: PaginatedRequestParams | None = None
        while True:
            try:
                page = await live.session.list_tools(params=params)
            except Exception as exc:
                if lost_connection(exc):
                    raise _LostDuringCall(generation) from exc
                verdict = live.guard.take(exc)
                raise call_error(self._label, None, exc, verdict, self.server.call_timeout) from exc
            found.extend(page.tools)
            cursor = getattr(page, "next_cursor", None)
            if not cursor:
                return found
            params = PaginatedRequestParams(cursor=cursor)

    async def _load_tools(self) -> list[Tool]:
        server = self.server
        tools: list[Tool] = []
        seen: dict[str, str] = {}
        for entry in await self._list_tools():
            raw = str(entry.name)
            if server.include_tools is not None and raw not in server.include_tools:
                continue
            if server.exclude_tools is not None and raw in server.exclude_tools:
                continue
            name = _tool_name(server.name, raw)
            if name in seen:
                raise MCPError(
                    f"MCP server {self._label} has tools {seen[name]!r} and {raw!r}, which "
                    f"both become the tool name {name!r}",
                    hint="leave one out with exclude_tools=[...]",
                )
            seen[name] = raw
            tools.append(self._make_tool(name, raw, entry))
        return tools

    def _make_tool(self, name: str, raw: str, entry: Any) -> Tool:
        server = self.server
        annotations = getattr(entry, "annotations", None)
        on_resume: OnResume = (
            server.on_resume
            if server.on_resume is not None
            else "rerun"
            if server.idempotent
            else _resume_policy(annotations)
        )
        needs_approval = (
            server.needs_approval
            if server.needs_approval is not None
            else _destructive(annotations)
        )
        schema = getattr(entry, "input_schema", None) or getattr(entry, "inputSchema", None)
        safe = on_resume == "rerun"
        # A tool that must not run twice is retried only when the server answered that the
        # call failed; the generic retry (any exception, a timeout) could repeat its effect.
        return Tool(
            name=name,
            description=str(getattr(entry, "description", None) or ""),
            parameters=normalize_schema(schema),
            invoke=self._invoker(raw, safe, 0 if safe else server.retries or 0),
            needs_approval=needs_approval,
            retries=server.retries if safe else 0,
            timeout=server.timeout,
            max_output_chars=server.max_output_chars,
            on_resume=on_resume,
            idempotent=server.idempotent,
        )

    def _invoker(self, raw: str, safe_to_repeat: bool, error_retries: int) -> Any:
        renderer = self.server.result_renderer

        async def invoke(args: dict[str, Any], ctx: RunContext[Any]) -> Any:
            key = _key_of(ctx)
            result = await self._call_with_recovery(raw, args, safe_to_repeat, key)
            for attempt in range(error_retries):
                if not result.is_error:
                    break
                await asyncio.sleep(min(5.0, 0.1 * 2**attempt))
                result = await self._call_with_recovery(raw, args, safe_to_repeat, key)
            if renderer is not None:
                rendered = renderer(result, ctx)
                return await rendered if inspect.isawaitable(rendered) else rendered
            if result.is_error:
                text = render_mcp_content(result.content, structured=result.structured_content)
                raise ToolError(text or f"MCP tool {raw!r} failed", tool_name=raw)
            return result_value(result)

        return invoke


class _LostDuringCall(Exception):
    """The transport died under a call made on session ``generation``; ``sent`` says whether
    the request may have reached the server."""

    def __init__(self, generation: int, *, sent: bool = True) -> None:
        super().__init__("the MCP connection was lost")
        self.generation = generation
        self.sent = sent
