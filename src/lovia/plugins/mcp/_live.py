"""One MCP session owned by a task of its own, and how transport failures are told apart.

The SDK's transports and ``ClientSession`` are anyio context managers that must be entered
and left by one task. ``LiveSession`` enters them in a dedicated task and waits there until it is
stopped, so whichever task opened, uses or closes the connection, anyio's task affinity holds.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

from ...errors import MCPError
from ._guard import Guard

if TYPE_CHECKING:
    from mcp import ClientSession

log = logging.getLogger("lovia.mcp")

Transport = Callable[[], AbstractAsyncContextManager[Any]]
_CONNECTION_CLOSED = -32000  # the SDK's JSON-RPC code for "the transport went away"
_TOOLS_CHANGED = "notifications/tools/list_changed"


def leaf_errors(exc: BaseException) -> list[BaseException]:
    """The real errors inside (possibly nested) exception groups."""
    inner = getattr(exc, "exceptions", None)
    if isinstance(inner, (list, tuple)) and inner:
        return [leaf for sub in inner for leaf in leaf_errors(sub)]
    return [exc]


def describe_error(exc: BaseException) -> str:
    return "; ".join(
        f"{type(e).__name__}: {e}" if str(e) else type(e).__name__ for e in leaf_errors(exc)
    )


def lost_connection(exc: BaseException) -> bool:
    """The transport died (the server exited, the socket dropped), as opposed to the server
    answering with an error."""
    import anyio

    for leaf in leaf_errors(exc):
        if isinstance(leaf, (ConnectionError, EOFError, anyio.BrokenResourceError)):
            return True
        if isinstance(leaf, (anyio.ClosedResourceError, anyio.EndOfStream)):
            return True
        code = getattr(getattr(leaf, "error", None), "code", None)
        if code == _CONNECTION_CLOSED and "closed" in str(leaf).lower():
            return True
        if any(c.__name__ == "TransportError" for c in type(leaf).__mro__):
            return True  # httpx's family: connect, read, write, protocol and timeout errors
    return False


class LiveSession:
    """One session, owned by its own task from open to close."""

    def __init__(
        self,
        transport: Transport,
        label: str,
        on_tools_changed: Callable[[], None] | None = None,
        call_timeout: float | None = None,
    ) -> None:
        self._transport = transport
        self._label = label
        self._on_tools_changed = on_tools_changed
        self._call_timeout = call_timeout
        self.guard = Guard(label)
        self.session: ClientSession | None = None
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._serving = False  # the handshake is done; until then only cancelling stops it

    async def start(self, timeout: float | None) -> None:
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._main(ready), name=f"lovia-mcp {self._label}")
        try:
            await asyncio.wait_for(asyncio.shield(ready), timeout)
        except asyncio.TimeoutError as exc:
            await self._abandon(ready)
            noticed = getattr(self._transport, "noticed", None)
            if noticed:  # it wrote, but not MCP: say what, rather than guess why
                said = f"; what it wrote instead began: {', '.join(noticed)}"
                hint = (
                    "check that the command starts an MCP server speaking on its stdout "
                    "(logs belong on stderr)"
                )
            else:
                said = ""
                hint = (
                    "check that the command starts an MCP server (not a shell or a CLI), "
                    "or raise connect_timeout"
                )
            raise MCPError(
                f"MCP server {self._label} did not finish its handshake in {timeout:g} s{said}",
                hint=hint,
            ) from exc
        except BaseException:
            await self._abandon(ready)
            raise

    async def _abandon(self, ready: asyncio.Future[None]) -> None:
        await self.stop()
        if ready.done() and not ready.cancelled():
            ready.exception()  # retrieved: nobody else will read it

    async def _main(self, ready: asyncio.Future[None]) -> None:
        from mcp import ClientSession

        try:
            async with self._transport() as streams:
                read, write = self.guard.wrap(streams[0], streams[1])
                async with ClientSession(
                    read,
                    write,
                    read_timeout_seconds=self._call_timeout,
                    message_handler=self._on_message,
                ) as session:
                    await session.initialize()
                    self.session = session
                    self._serving = True
                    ready.set_result(None)
                    await self._stop.wait()
        except asyncio.CancelledError:
            ready.cancel()  # no-op once the handshake is done; nobody awaits it otherwise
            raise
        except BaseException as exc:
            if not ready.done():
                statuses = getattr(self._transport, "http_statuses", None)
                noticed = getattr(self._transport, "noticed", None)
                ready.set_exception(open_error(self._label, exc, statuses, noticed))
            else:
                log.debug("mcp.close: %s ended with %s", self._label, describe_error(exc))
        finally:
            self.session = None

    async def _on_message(self, message: Any) -> None:
        """The SDK's message handler: a server's ``tools/list_changed`` marks the tool list
        stale (it is listed again before the next run uses it); everything else is ignored."""
        notification = getattr(message, "root", message)  # mcp 1.x wraps notifications
        if getattr(notification, "method", None) == _TOOLS_CHANGED:
            log.info("mcp.tools_changed: %s announced a new tool list", self._label)
            if self._on_tools_changed is not None:
                self._on_tools_changed()

    async def stop(self) -> None:
        self._stop.set()
        task = self._task
        if task is None or task.done():
            return
        if not self._serving:
            task.cancel()
        done, _ = await asyncio.wait([task], timeout=10)
        if not done:  # the transport would not wind down: cut it off
            task.cancel()
            await asyncio.wait([task])


def open_error(
    label: str,
    exc: BaseException,
    http_statuses: list[int] | None = None,
    noticed: list[str] | None = None,
) -> MCPError:
    if isinstance(exc, MCPError):
        return exc
    status = http_statuses[-1] if http_statuses else None
    said = describe_error(exc)
    if status in (401, 403):
        hint = (
            "the server refused the request's credentials: pass them with "
            "headers={'Authorization': 'Bearer ...'} (or the header the server expects)"
        )
    elif status in (404, 405):
        hint = "check the URL's path: it must be the server's streamable-HTTP endpoint (often /mcp)"
    elif isinstance(exc, FileNotFoundError) or any(
        isinstance(e, OSError) for e in leaf_errors(exc)
    ):
        hint = "check the command and its arguments (is the program installed and on PATH?)"
    else:
        hint = "check that the server is running, reachable and speaks MCP"
    if status is not None:
        said = f"HTTP {status}: {said}"
    if noticed:  # it wrote something that was not MCP before it failed: show it
        said += f"; it wrote, instead of MCP: {', '.join(noticed)}"
        hint = (
            "check that the command starts an MCP server speaking on its stdout "
            "(logs belong on stderr)"
        )
    err = MCPError(f"could not connect to MCP server {label}: {said}", hint=hint)
    err.__cause__ = exc
    return err
