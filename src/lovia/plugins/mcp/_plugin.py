"""The ``MCP`` plugin: MCP servers' tools as an agent's tools, for each run."""

from __future__ import annotations

import difflib
import inspect
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from pydantic import Field

from ...errors import ToolError, UserError
from ...run_context import RunContext
from ...tools import Tool, run_tool, tool
from ..base import PluginInstance
from ._connection import MCPConnection
from ._servers import MCPServerLike

__all__ = ["MCP"]

log = logging.getLogger("lovia.mcp")


class MCP:
    """Give an agent the tools of one or more MCP servers.

    ::

        agent = Agent(..., plugins=[MCP(MCPServerStdio(command="uvx", args=["mcp-server-fetch"]))])

    A server config is connected when a run starts and closed when it ends; a live connection
    (``async with server.session() as conn: ... MCP(conn)``) is reused and left open. A
    server with ``defer=True`` adds no tools of its own: the agent gets ``search_mcp_tools``
    and ``call_mcp_tool`` (one pair for all deferred servers) and an instruction naming the
    deferred tools.
    """

    name: str

    def __init__(self, *servers: MCPServerLike, name: str = "mcp") -> None:
        if not servers:
            raise UserError("MCP(...) needs at least one server", hint="MCP(MCPServerStdio(...))")
        self.servers = tuple(servers)
        self.name = name

    async def setup(self, ctx: RunContext[Any]) -> PluginInstance:
        exposed: list[Tool] = []
        deferred: dict[str, Tool] = {}
        deferred_by_server: list[tuple[str | None, list[str]]] = []
        closers: list[Callable[[], Awaitable[None]]] = []

        async def aclose() -> None:
            for close in reversed(closers):
                try:
                    await close()
                except Exception as exc:  # teardown goes on for the other servers
                    log.warning("mcp.close: %s", exc)

        try:
            for server in self.servers:
                conn = await server.open()
                if server.close_after_run:
                    closers.append(conn.close)
                tools = await _tools_of(conn)
                if not server.defer:
                    exposed.extend(tools)
                    continue
                names = []
                for t in tools:
                    if t.name in deferred:
                        raise UserError(
                            f"deferred MCP tool name clash: {t.name!r} is offered by two "
                            "deferred servers",
                            hint="give one server a name=... to prefix its tools",
                        )
                    deferred[t.name] = t
                    names.append(t.name)
                deferred_by_server.append((getattr(conn, "prefix", None), names))
            clash = sorted(deferred.keys() & {t.name for t in exposed})
            if clash:
                raise UserError(
                    f"deferred MCP tool name clash with exposed tools: {', '.join(clash)}",
                    hint="give one server a name=... to prefix its tools",
                )
        except BaseException:
            await aclose()  # the run never gets the instance: close what opened so far
            raise
        instructions = None
        if deferred:
            exposed += [_search_tool(deferred), _call_tool(deferred)]
            instructions = _deferred_instructions(deferred_by_server)
        return PluginInstance(tools=exposed, instructions=instructions, aclose=aclose)


async def _tools_of(conn: Any) -> list[Tool]:
    """The tools a run gets from an opened server: an ``MCPConnection`` lists them again
    first when the server announced a change; any other connection an ``MCPServerLike``
    opens (a test double, an adapter) gives them by its ``tools()``, as 0.9.119 asked."""
    if isinstance(conn, MCPConnection):
        return await conn.current_tools()
    listed = conn.tools()
    if inspect.isawaitable(listed):
        listed = await listed
    return list(listed)


def _deferred_instructions(by_server: list[tuple[str | None, list[str]]]) -> str:
    lines = [
        "## Deferred MCP tools",
        "These MCP tools exist but are not in your tool list. To use one, look it up with "
        "search_mcp_tools (keywords or its exact name) to get its parameters, then call it "
        "with call_mcp_tool. Search before deciding a capability is missing.",
    ]
    for prefix, names in by_server:
        # sorted, so the prompt (and the provider's prompt cache) is stable across runs
        lines.append(f"- {prefix or 'unnamed server'} ({len(names)}): {', '.join(sorted(names))}")
    return "\n".join(lines)


def _search_tool(catalog: dict[str, Tool]) -> Tool:
    @tool(name="search_mcp_tools")
    def search_mcp_tools(
        query: Annotated[str, Field(min_length=1, description="Keywords or an exact tool name.")],
        max_results: Annotated[int, Field(ge=1, le=20, description="How many to return.")] = 5,
    ) -> str:
        """Find deferred MCP tools by keyword and return their name, description and
        parameters schema. Look a tool up here before calling it with call_mcp_tool."""
        words = query.lower().split()
        scored: list[tuple[int, str]] = []
        for name, target in catalog.items():
            lname, ldesc = name.lower(), target.description.lower()
            score = sum(
                (3 if w == lname else 2 if w in lname else 0) + (1 if w in ldesc else 0)
                for w in words
            )
            if score:
                scored.append((-score, name))
        if not scored:
            return (
                f"No deferred MCP tool matched {query!r} ({len(catalog)} exist; their names are "
                "in your instructions). Try other keywords."
            )
        scored.sort()
        shown = [catalog[name] for _, name in scored[:max_results]]
        text = json.dumps(
            [
                {"name": t.name, "description": t.description, "parameters": t.parameters}
                for t in shown
            ],
            ensure_ascii=False,
        )
        if len(scored) > len(shown):
            text += f"\n({len(scored) - len(shown)} more matched; refine the query.)"
        return text

    return search_mcp_tools


def _call_tool(catalog: dict[str, Tool]) -> Tool:
    def target_of(args: dict[str, Any]) -> tuple[Tool | None, dict[str, Any]]:
        raw = args.get("arguments")
        return catalog.get(str(args.get("tool", ""))), dict(raw) if isinstance(raw, dict) else {}

    def needs_approval(args: dict[str, Any], ctx: RunContext[Any]) -> Any:
        target, inner = target_of(args)
        return False if target is None else target.requires_approval(inner, ctx)

    async def on_resume(call: Any, ctx: RunContext[Any]) -> Any:
        try:
            args = json.loads(getattr(call, "arguments", "") or "{}")
        except json.JSONDecodeError:
            return "rerun"  # the call fails its argument check again: nothing ran
        target, _ = target_of(args if isinstance(args, dict) else {})
        if target is None or not callable(target.on_resume):
            return "rerun" if target is None else target.on_resume
        decided = target.on_resume(call, ctx)
        return await decided if inspect.isawaitable(decided) else decided

    # retries=0: the call delegates to the target's own retries (never a destructive repeat)
    @tool(name="call_mcp_tool", needs_approval=needs_approval, on_resume=on_resume, retries=0)
    async def call_mcp_tool(
        ctx: RunContext[Any],
        tool: Annotated[str, "The exact name search_mcp_tools returned."],
        arguments: Annotated[
            dict[str, Any] | None, Field(description="Arguments matching the tool's schema.")
        ] = None,
    ) -> Any:
        """Call a deferred MCP tool by its exact name, with arguments matching the parameters
        schema search_mcp_tools returned."""
        target = catalog.get(tool)
        if target is None:
            near = difflib.get_close_matches(tool, list(catalog), n=3, cutoff=0.4)
            raise ToolError(
                f"unknown deferred MCP tool {tool!r}",
                hint=f"did you mean {', '.join(near)}?" if near else "use search_mcp_tools",
                tool_name="call_mcp_tool",
            )
        return await run_tool(target, dict(arguments or {}), ctx)

    return call_mcp_tool
