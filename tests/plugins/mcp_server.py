"""A real MCP server for the plugin tests, on the official SDK.

    python mcp_server.py stdio
    python mcp_server.py http PORT       (streamable HTTP on 127.0.0.1:PORT/mcp)

Its tools cover what the plugin must handle: plain and structured results, an image, a
tool-reported error, tool annotations, a dotted name, a slow call, a server that dies
mid-call and a tool list that changes. ``LOG_CALLS=path`` appends each call's tool name to
that file (to count calls that reached the server).
"""

from __future__ import annotations

import asyncio
import base64
import os
import signal
import sys
import time

from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

# a 1x1 transparent PNG
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)

server = MCPServer("lovia-test-server")
state = {"count": 0}


def logged(name: str) -> None:
    path = os.environ.get("LOG_CALLS")
    if path:
        with open(path, "a") as f:
            f.write(name + "\n")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def echo(text: str) -> str:
    """Repeat the text back."""
    logged("echo")
    return text


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    logged("add")
    return a + b


@server.tool(structured_output=False)
def snapshot(caption: str = "a pixel") -> list[object]:
    """Return a caption and a tiny PNG."""
    logged("snapshot")
    return [caption, Image(data=PNG, format="png")]


@server.tool()
def fail(reason: str) -> str:
    """Always fails with the given reason."""
    logged("fail")
    raise ToolError(reason)


@server.tool(
    annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False)
)
def delete_file(path: str) -> str:
    """Delete a file (pretend)."""
    logged("delete_file")
    return f"deleted {path}"


@server.tool(
    annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True)
)
def set_flag(name: str) -> str:
    """Set a flag (pretend); doing it twice is the same as once."""
    logged("set_flag")
    return f"{name} set"


@server.tool(name="files.read", annotations=ToolAnnotations(read_only_hint=True))
def files_read(path: str) -> str:
    """A tool whose name has a dot."""
    logged("files.read")
    return f"contents of {path}"


@server.tool()
def pid() -> str:
    """The server's process id."""
    logged("pid")
    return str(os.getpid())


@server.tool()
def header(name: str, ctx: Context) -> str:  # type: ignore[type-arg]
    """The value of an HTTP request header ("" over stdio or when absent)."""
    logged("header")
    return (ctx.headers or {}).get(name.lower(), "")


@server.tool()
def count() -> str:
    """Count calls to this tool in this server process."""
    logged("count")
    state["count"] += 1
    return str(state["count"])


@server.tool()
async def slow(seconds: float) -> str:
    """Sleep, then answer."""
    logged("slow")
    await asyncio.sleep(seconds)
    return "slept"


@server.tool()
def die() -> str:
    """The server process exits in the middle of this call."""
    logged("die")
    sys.stdout.flush()
    os._exit(3)


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def die_once(marker: str) -> str:
    """The first call (no file at ``marker`` yet) kills the server; later calls answer."""
    logged("die_once")
    if not os.path.exists(marker):
        with open(marker, "w") as f:
            f.write(str(os.getpid()))
        os._exit(3)
    return f"survived in {os.getpid()}"


@server.tool(annotations=ToolAnnotations(destructive_hint=True, idempotent_hint=False))
def charge_and_die(cents: int) -> str:
    """A destructive tool during which the server dies."""
    logged("charge_and_die")
    os._exit(3)


@server.tool(annotations=ToolAnnotations(destructive_hint=True, idempotent_hint=False))
def refund(cents: int) -> str:
    """A destructive tool whose every call the server reports as failed."""
    logged("refund")
    raise ToolError(f"refund of {cents} declined")


def _kill_client_once(marker: str) -> str:
    if not os.path.exists(marker):
        with open(marker, "w") as f:
            f.write("started")
        os.kill(os.getppid(), signal.SIGKILL)  # the agent's process dies with the call in flight
        time.sleep(30)
    return "ok"


@server.tool(annotations=ToolAnnotations(destructive_hint=True, idempotent_hint=False))
def pay_and_crash_client(marker: str) -> str:
    """Destructive: the first call kills the client (this server's parent) mid-call."""
    logged("pay_and_crash_client")
    return _kill_client_once(marker)


@server.tool(annotations=ToolAnnotations(destructive_hint=True, idempotent_hint=False))
def pay_with_key(marker: str, ctx: Context) -> str:  # type: ignore[type-arg]
    """Destructive: logs the idempotency key the request's _meta carries, then, the first
    time, kills the client mid-call."""
    meta = ctx.request_context.meta or {}
    logged(f"pay_with_key {meta.get('lovia/idempotency_key', '')}")
    return _kill_client_once(marker)


@server.tool(annotations=ToolAnnotations(destructive_hint=True, idempotent_hint=False))
async def pay_with_key_and_wait(marker: str, ctx: Context) -> str:  # type: ignore[type-arg]
    """Destructive: logs the idempotency key the request's _meta carries, then, the first
    time, waits a minute (over HTTP the test kills the client meanwhile)."""
    meta = ctx.request_context.meta or {}
    logged(f"pay_with_key {meta.get('lovia/idempotency_key', '')}")
    if _first_time(marker):
        await asyncio.sleep(60)
    return "ok"


def _first_time(marker: str) -> bool:
    """True once per ``marker`` file (made here)."""
    if os.path.exists(marker):
        return False
    with open(marker, "w") as f:
        f.write("started")
    return True


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def read_and_crash_client(marker: str) -> str:
    """Read-only: the first call kills the client (this server's parent) mid-call."""
    logged("read_and_crash_client")
    return _kill_client_once(marker)


def secret() -> str:
    """A tool the server offers only after ``unlock``."""
    logged("secret")
    return "the secret is 42"


@server.tool()
async def unlock(ctx: Context) -> str:  # type: ignore[type-arg]
    """Add the ``secret`` tool and announce the new tool list (tools/list_changed)."""
    logged("unlock")
    server.add_tool(secret)
    await ctx.session.send_tool_list_changed()
    return "unlocked"


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if mode == "stdio":
        server.run("stdio")
    elif mode == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main()
