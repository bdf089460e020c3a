"""What a call learns when its answer does not come as it should: the error the model reads
(naming the server, what it did, and that the call may have taken effect), or a result cut at
the size cap."""

from __future__ import annotations

from typing import Any

from ...errors import MCPError
from ._content import MCPToolResult
from ._guard import Verdict
from ._live import describe_error
from ._wire import CUT_KEY

__all__ = ["call_error", "cut_result"]

_REQUEST_TIMEOUT = -32001  # the SDK's code for a request past its deadline
_PARSE_ERROR = -32700  # the SDK's code for an answer it could not parse (over HTTP)
_IN_DOUBT = "it may or may not have taken effect"


def call_error(
    label: str, name: str | None, exc: BaseException, verdict: Verdict | None, timeout: float | None
) -> MCPError:
    """The error for a call (``name``; ``None`` when listing tools) that failed with ``exc``."""
    what = f"the call to {name!r}" if name else "the tool list"
    code = getattr(getattr(exc, "error", None), "code", None)
    if verdict is not None and verdict.problem is not None:
        return MCPError(
            f"MCP server {label} {verdict.problem}, while {what} waited for its answer; "
            + (_IN_DOUBT if name else "the tools were not listed"),
            hint="the server broke the MCP protocol: check its logs"
            + (", and whether the call took effect before calling it again" if name else ""),
            tool_name=name,
            in_doubt=name is not None,
        )
    if code == _REQUEST_TIMEOUT:
        waited = f" within {timeout:g} s" if timeout is not None else ""
        return MCPError(
            f"MCP server {label} did not answer {what}{waited}; "
            + (
                "the call was given up, but it may still have taken effect"
                if name
                else "the tools were not listed"
            ),
            hint=("check whether it took effect before calling it again; " if name else "")
            + "raise the server's call_timeout if it is slow (None waits as long as it takes)",
            tool_name=name,
            in_doubt=name is not None,
        )
    if code == _PARSE_ERROR:
        return MCPError(
            f"MCP server {label} sent an answer to {what} that cannot be read "
            f"({getattr(exc, 'message', exc)}); " + (_IN_DOUBT if name else "no tools listed"),
            hint="the answer may be over max_result_bytes (raise it, or ask for less), "
            "or the server broke the MCP protocol: check its logs",
            tool_name=name,
            in_doubt=name is not None,
        )
    if name is None:
        return MCPError(
            f"MCP server {label} could not list its tools: {describe_error(exc)}",
            hint="check the server's logs",
        )
    return MCPError(
        f"MCP server {label} refused the call to {name!r}: {describe_error(exc)}",
        hint="check the tool's name and arguments against the server's tool list",
        tool_name=name,
    )


def cut_result(result: dict[str, Any]) -> MCPToolResult:
    """The blocks of an answer cut at the size cap (the last one cut short), and a note that
    says how much was read."""
    from mcp_types import ContentBlock, TextContent
    from pydantic import TypeAdapter, ValidationError

    adapter: TypeAdapter[Any] = TypeAdapter(ContentBlock)
    blocks: list[Any] = []
    for raw in result.get("content") or []:
        try:
            blocks.append(adapter.validate_python(raw, by_name=False))
        except ValidationError:
            continue  # a block cut before its fields: the note below says the rest is missing
    sizes = (result.get("_meta") or {}).get(CUT_KEY) or {}
    read, total = sizes.get("read", 0), sizes.get("total", 0)
    note = (
        f"[the server's answer was cut: it was {_size(total)}, more than max_result_bytes "
        f"({_size(read)}); what fit is above]"
    )
    return MCPToolResult(content=[*blocks, TextContent(text=note)])


def _size(n: int) -> str:
    if n >= 1 << 20:
        return f"{n / (1 << 20):.1f} MiB"
    return f"{n / 1024:.1f} KiB" if n >= 1024 else f"{n} bytes"
