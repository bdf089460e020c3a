"""A real HTTP server on 127.0.0.1 for the web tool tests, and a way to run a tool the way a
model does (through an Agent and the scripted provider) and read what it got back."""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from lovia import Agent, Runner, ToolResultEntry
from lovia.testing import ScriptedProvider, batch, text
from lovia.tools import Tool


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


# a route answers (status, headers, body); a body that is a callable writes it itself
Route = Callable[[Request], tuple[int, dict[str, str], Any]]


@dataclass
class Site:
    base: str = ""
    routes: dict[str, Route] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)

    def url(self, path: str) -> str:
        return self.base + path

    def page(
        self, path: str, body: str | bytes, ctype: str = "text/html", status: int = 200
    ) -> None:
        data = body.encode() if isinstance(body, str) else body
        self.routes[path] = lambda _req: (status, {"Content-Type": ctype}, data)

    def hits(self, path: str) -> int:
        return sum(1 for r in self.requests if r.path.split("?")[0] == path)


def _handler(site: Site) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def handle(self) -> None:
            try:
                super().handle()
            except (BrokenPipeError, ConnectionResetError):  # the reader hung up (a capped read)
                pass

        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            req = Request(
                self.command, self.path, dict(self.headers.items()), self.rfile.read(length)
            )
            site.requests.append(req)
            route = site.routes.get(self.path.split("?")[0])
            status, headers, body = route(req) if route else (404, {}, b"no such page")
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            if callable(body):
                self.send_header("Connection", "close")
                self.end_headers()
                try:
                    body(self.wfile)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                self.close_connection = True
                return
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = _answer
        do_POST = _answer

    return Handler


@pytest.fixture
def site() -> Iterator[Site]:
    state = Site()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.base = f"http://127.0.0.1:{server.server_address[1]}"
    yield state
    server.shutdown()
    server.server_close()


def drip(chunks: int, pause: float) -> Callable[[Any], None]:
    """A body that sends one byte every ``pause`` seconds."""

    def write(out: Any) -> None:
        for _ in range(chunks):
            out.write(b"x")
            out.flush()
            time.sleep(pause)

    return write


async def model_sees(tool: Tool, *calls: dict[str, Any]) -> list[tuple[str, bool]]:
    """Run ``tool`` as a model would, once per argument dict (one batch), and return each
    (output, is_error) the model got back, in call order."""
    script = [batch(*((tool.name, args, f"c{i}") for i, args in enumerate(calls))), text("ok")]
    agent = Agent(name="reader", model=ScriptedProvider(script), tools=[tool])
    result = await Runner.run(agent, "go")
    found = {e.call_id: e for e in result.entries if isinstance(e, ToolResultEntry)}
    return [(found[f"c{i}"].output, found[f"c{i}"].is_error) for i in range(len(calls))]
