"""MCP: the tools of Model Context Protocol servers as ordinary lovia tools.

::

    from lovia.plugins.mcp import MCP, MCPServerStdio, MCPServerStreamableHTTP

    agent = Agent(..., plugins=[MCP(MCPServerStdio(name="web", command="uvx",
                                                   args=["mcp-server-fetch"]))])

Built on the official ``mcp`` SDK (``pip install 'lovia[mcp]'``), imported only when a server
is opened, so importing this module never needs it. Server configs are frozen settings;
opening one gives a live ``MCPConnection``. The ``MCP`` plugin opens a connection per run
(and closes it when the run ends) or reuses one kept alive with ``server.session()``.

Each MCP tool becomes a ``Tool``: its input schema is the tool's parameters, its result's
text the tool's result (images as ``ImagePart``s), an ``isError`` result an error the model
sees, and a transport failure an ``MCPError``. The server's tool annotations set the resume
policy and the approval default: a tool marked destructive needs approval, and one marked
destructive and not idempotent is never repeated silently after a crash or a reconnect.
"""

from __future__ import annotations

from ...errors import MCPError
from ._connection import MCPConnection
from ._content import MCPToolResult, normalize_schema, render_mcp_content
from ._plugin import MCP
from ._servers import MCPServer, MCPServerLike, MCPServerStdio, MCPServerStreamableHTTP

__all__ = [
    "MCP",
    "MCPConnection",
    "MCPError",
    "MCPServer",
    "MCPServerLike",
    "MCPServerStdio",
    "MCPServerStreamableHTTP",
    "MCPToolResult",
    "normalize_schema",
    "render_mcp_content",
]
