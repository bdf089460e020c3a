"""MCP server configurations: frozen settings that open live ``MCPConnection``s."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from ...errors import UserError
from ._connection import MCPConnection
from ._settings import ServerSettings
from ._stdio import StdioTransport

__all__ = ["MCPServer", "MCPServerLike", "MCPServerStdio", "MCPServerStreamableHTTP"]

_INSTALL_HINT = "install the MCP extra: pip install 'lovia[mcp]'"


def _require_mcp() -> None:
    try:
        import mcp  # noqa: F401
    except ImportError as exc:
        raise UserError("MCP support needs the 'mcp' package", hint=_INSTALL_HINT) from exc
    try:  # the SDK 2.3's types package; 0.9.119 also ran on 1.18+, this lovia does not
        import mcp_types  # noqa: F401
    except ImportError as exc:
        raise UserError(
            "MCP support needs the MCP Python SDK 2.3 or a later 2.x; an older 'mcp' is installed",
            hint="upgrade it: pip install -U 'lovia[mcp]'",
        ) from exc


class MCPServerLike(Protocol):
    """What ``MCP(...)`` accepts: a server config (a fresh connection per run) or a live
    ``MCPConnection`` (kept alive by its owner)."""

    @property
    def close_after_run(self) -> bool: ...

    @property
    def defer(self) -> bool: ...

    async def open(self) -> MCPConnection: ...


@dataclass(frozen=True, kw_only=True)
class MCPServer(ServerSettings):
    """Settings shared by every MCP transport (use ``MCPServerStdio`` or
    ``MCPServerStreamableHTTP``).

    ``name`` prefixes the server's tools (``name="fs"``: ``fs__read_file``).
    ``include_tools`` / ``exclude_tools`` pick tools by their MCP names. ``needs_approval``
    gates every tool of the server (``True``, ``False`` or a predicate); left at ``None``, a
    tool the server marks destructive (``destructiveHint``) needs approval and the others do
    not. ``on_resume`` says what a resumed run does with a call a crash left in doubt; left at
    ``None``, read-only and idempotent tools run again and destructive, non-idempotent ones
    stop the resume. ``retries``, ``timeout`` and ``max_output_chars`` apply to each tool as
    on any ``Tool``. ``result_renderer(MCPToolResult, ctx)`` replaces the default conversion
    of results. ``auto_reconnect`` reopens a connection that died during a call and calls
    again, unless the tool is destructive and not idempotent. ``defer=True`` keeps the tools
    out of the tool list, behind ``search_mcp_tools`` / ``call_mcp_tool``.
    ``idempotent=True`` says the server honours the idempotency key every call carries in
    its ``_meta`` (``lovia/idempotency_key``): a call in doubt after a crash or a dropped
    connection is then sent again with the same key instead of being refused.
    ``connect_timeout`` bounds the handshake. ``call_timeout`` bounds the wait for each
    answer (a call given up may still have taken effect; ``None`` waits as long as it takes).
    ``max_result_bytes`` caps one message read from the server: a longer answer is cut.
    """

    async def open(self) -> MCPConnection:
        """Connect now; the caller owns the connection and closes it."""
        _require_mcp()
        conn = MCPConnection(self, close_after_run=self.close_after_run)
        try:
            await conn.connect()
        except BaseException:
            await conn.close()
            raise
        return conn

    @asynccontextmanager
    async def session(self) -> AsyncIterator[MCPConnection]:
        """A connection kept alive for the ``async with`` block, shared by the runs in it."""
        _require_mcp()
        conn = MCPConnection(self, close_after_run=False)
        try:
            await conn.connect()
            yield conn
        finally:
            await conn.close()


@dataclass(frozen=True, kw_only=True)
class MCPServerStdio(MCPServer):
    """A server started as a subprocess, speaking MCP on its stdin and stdout.

    ``env`` adds variables to the small default environment the SDK gives the process (PATH,
    HOME and the like, not your whole environment). ``cwd`` is its working directory.
    """

    command: str
    args: list[str] | None = None
    env: dict[str, str] | None = None
    cwd: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.command:
            raise UserError("MCPServerStdio needs a command", hint="e.g. command='uvx'")
        if isinstance(self.args, str):
            raise UserError(
                "args must be a list of strings", hint=f"write args={self.args.split()!r}"
            )

    def describe(self) -> str:
        return repr(self.name) if self.name else repr(" ".join([self.command, *(self.args or [])]))

    def transport(self) -> Callable[[], AbstractAsyncContextManager[Any]]:
        _require_mcp()
        if sys.platform == "win32":  # pragma: no cover - lovia's own transport is POSIX
            from mcp import StdioServerParameters, stdio_client

            params = StdioServerParameters(
                command=self.command,
                args=list(self.args or []),
                env=self.env,
                cwd=self.cwd,
                encoding_error_handler="replace",
            )
            return lambda: stdio_client(params)
        return StdioTransport(
            self.command,
            list(self.args or []),
            self.env,
            self.cwd,
            self.describe(),
            self.max_result_bytes,
        )


@dataclass(frozen=True, kw_only=True)
class MCPServerStreamableHTTP(MCPServer):
    """A server reached over streamable HTTP at ``url`` (``headers`` go with every
    request)."""

    url: str
    headers: dict[str, str] | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.url.startswith(("http://", "https://")):
            raise UserError(
                f"MCP server url must start with http:// or https://, got {self.url!r}",
                hint="e.g. url='http://127.0.0.1:8000/mcp'",
            )

    def describe(self) -> str:
        return repr(self.name) if self.name else repr(self.url)

    def transport(self) -> Callable[[], AbstractAsyncContextManager[Any]]:
        _require_mcp()
        return _HTTPTransport(self.url, dict(self.headers or {}), self.max_result_bytes)


class _HTTPTransport:
    """Opens the SDK's streamable-HTTP transport; ``http_statuses`` keeps the error statuses
    the server answered (the SDK reports them all as "Server returned an error response").
    A JSON answer, or one event of an event stream, longer than ``max_bytes`` is an error,
    found while it streams in (never read whole)."""

    def __init__(self, url: str, headers: dict[str, str], max_bytes: int | None) -> None:
        self.url = url
        self.headers = headers
        self.max_bytes = max_bytes
        self.http_statuses: list[int] = []

    @asynccontextmanager
    async def __call__(self) -> AsyncIterator[Any]:
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        async def note(response: Any) -> None:
            if response.status_code >= 400:
                self.http_statuses.append(response.status_code)
            kind = response.headers.get("content-type", "").lower()
            if self.max_bytes is not None and kind.startswith("application/json"):
                from ._http import CappedBody

                response.stream = CappedBody(response.stream, self.max_bytes)

        async with create_mcp_http_client(headers=self.headers) as client:
            client.event_hooks.setdefault("response", []).append(note)
            async with streamable_http_client(
                self.url, http_client=client, max_sse_event_size=self.max_bytes
            ) as streams:
                yield streams
