"""An HTTP MCP server that refuses the connection says why: the status, and what to change."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from lovia import Agent, MCPError, Runner
from lovia.plugins.mcp import MCP, MCPServerStreamableHTTP
from lovia.testing import ScriptedProvider, text


@pytest.fixture
def refusing() -> Iterator[str]:
    """A gateway on 127.0.0.1 that answers 401 to every request (no token was sent)."""

    class Gateway(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.send_response(401)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", "12")
            self.end_headers()
            self.wfile.write(b"unauthorized")

        do_GET = do_DELETE = do_POST

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Gateway)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/mcp"
    finally:
        httpd.shutdown()
        httpd.server_close()


async def connect_error(url: str) -> MCPError:
    agent = Agent(
        "a",
        model=ScriptedProvider([text("never")]),
        plugins=[MCP(MCPServerStreamableHTTP(url=url, connect_timeout=20))],
    )
    with pytest.raises(MCPError) as info:
        await Runner.run(agent, "hi")
    return info.value


async def test_a_401_names_the_status_and_the_header_to_set(refusing: str) -> None:
    error = await connect_error(refusing)
    assert "HTTP 401" in error.message
    assert "Authorization" in (error.hint or "")


async def test_a_wrong_path_on_a_real_server_names_the_status_and_the_path(http_url: str) -> None:
    error = await connect_error(http_url.replace("/mcp", "/not-mcp"))
    assert "HTTP 404" in error.message
    assert "/mcp" in (error.hint or "")
