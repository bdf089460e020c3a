"""The settings of an MCP server as a live connection reads them: its name and tool filters,
the approval and resume defaults, the timeouts and size caps, and its transport. The
servers (``_servers``) add the opening; the connection (``_connection``) reads only this."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

from ...errors import UserError
from ...tools.base import ApprovalPredicate, OnResume, ToolResultRenderer

__all__ = ["DEFAULT_CALL_TIMEOUT", "DEFAULT_MAX_RESULT_BYTES", "ServerSettings"]

DEFAULT_CALL_TIMEOUT = 120.0
DEFAULT_MAX_RESULT_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True, kw_only=True)
class ServerSettings:
    """The frozen settings of one MCP server (``MCPServer`` documents each field)."""

    name: str | None = None
    include_tools: list[str] | None = None
    exclude_tools: list[str] | None = None
    needs_approval: bool | ApprovalPredicate | None = None
    on_resume: OnResume | None = None
    idempotent: bool = False
    retries: int | None = None
    timeout: float | None = None
    max_output_chars: int | None = None
    result_renderer: ToolResultRenderer | None = None
    auto_reconnect: bool = True
    close_after_run: bool = True
    defer: bool = False
    connect_timeout: float | None = 30.0
    call_timeout: float | None = DEFAULT_CALL_TIMEOUT
    max_result_bytes: int | None = DEFAULT_MAX_RESULT_BYTES

    def __post_init__(self) -> None:
        for label, value, what in (
            ("connect_timeout", self.connect_timeout, "the handshake takes"),
            ("call_timeout", self.call_timeout, "a call takes"),
            ("max_result_bytes", self.max_result_bytes, None),
        ):
            if value is not None and (isinstance(value, bool) or not value > 0):
                raise UserError(
                    f"{label} must be positive, got {value!r}",
                    hint=f"pass seconds, or None to wait as long as {what}"
                    if what
                    else "pass a number of bytes, or None to read answers of any size",
                )
        for label, names in (
            ("include_tools", self.include_tools),
            ("exclude_tools", self.exclude_tools),
        ):
            if isinstance(names, str):
                raise UserError(
                    f"{label} must be a list of tool names, not a string",
                    hint=f"write {label}=[{names!r}]",
                )

    def transport(self) -> Callable[[], AbstractAsyncContextManager[Any]]:
        """A factory of the SDK transport context (``(read, write, ...)`` streams)."""
        raise NotImplementedError  # pragma: no cover - each transport overrides it

    def describe(self) -> str:
        """How errors name this server."""
        return repr(self.name) if self.name else type(self).__name__
