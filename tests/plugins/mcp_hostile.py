"""A misbehaving MCP server for the plugin tests, speaking JSON-RPC by hand (no SDK), so it
can break the protocol on purpose.

    python mcp_hostile.py stdio
    python mcp_hostile.py http PORT      (streamable HTTP on 127.0.0.1:PORT/mcp)

It lists one tool per misbehaviour; calling the tool triggers it: an answer with a lone
surrogate escape, with bytes that are not UTF-8, nested 10,000 deep, cut in the middle, with
the wrong id, a huge answer (``size`` bytes of text), no answer at all, only keep-alives (HTTP),
a flood of notifications before the answer, a tool that vanished, the server exiting. ``ok``
answers normally. Environment: ``HOSTILE_PIDFILE`` (its pid is written there),
``HOSTILE_BANNER=1`` (lines that are not MCP before the handshake), ``HOSTILE_HANDSHAKE_BYTES=1``
(bytes that are not UTF-8 inside the handshake's answer), ``HOSTILE_LOG`` (each call's tool
name is appended there).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TOOLS = [
    "ok",
    "surrogate",
    "bad_bytes",
    "deep",
    "truncated",
    "wrong_id",
    "huge",
    "huge_sse",
    "silent",
    "keepalive",
    "flood",
    "vanished",
    "die",
    "charge_and_hang",
]
DESTRUCTIVE = {"charge_and_hang"}


def tool_list() -> list[dict[str, Any]]:
    listed = []
    for name in TOOLS:
        entry: dict[str, Any] = {
            "name": name,
            "description": f"misbehaves: {name}",
            "inputSchema": {"type": "object", "properties": {"size": {"type": "integer"}}},
        }
        if name in DESTRUCTIVE:
            entry["annotations"] = {"destructiveHint": True, "idempotentHint": False}
        listed.append(entry)
    return listed


def result(rid: Any, text: str) -> bytes:
    body = {"content": [{"type": "text", "text": text}], "isError": False}
    return json.dumps({"jsonrpc": "2.0", "id": rid, "result": body}).encode()


def answer(message: dict[str, Any]) -> Iterator[bytes | Callable[[], None]]:
    """The lines the server writes for one request (a callable: an action between lines)."""
    rid, method = message.get("id"), message.get("method")
    if method == "initialize":
        version = message["params"]["protocolVersion"]
        name = "hostile"
        line = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "result": {
                    "protocolVersion": version,
                    "capabilities": {"tools": {"listChanged": True}},
                    "serverInfo": {"name": name, "version": "1"},
                },
            }
        ).encode()
        if os.environ.get("HOSTILE_HANDSHAKE_BYTES"):
            line = line.replace(b'"hostile"', b'"host\xffile"')
        yield line
        return
    if method == "ping":
        yield json.dumps({"jsonrpc": "2.0", "id": rid, "result": {}}).encode()
        return
    if method == "tools/list":
        yield json.dumps({"jsonrpc": "2.0", "id": rid, "result": {"tools": tool_list()}}).encode()
        return
    if method != "tools/call":
        return
    name = message["params"]["name"]
    args = message["params"].get("arguments") or {}
    log = os.environ.get("HOSTILE_LOG")
    if log:
        with open(log, "a") as f:
            f.write(name + "\n")
    yield from misbehave(rid, name, args)


BROKEN = {  # what follows '{"jsonrpc":"2.0","id":ID,"result":' in each broken answer
    # valid JSON, not valid Unicode: a string cut inside an emoji
    "surrogate": b'{"content":[{"type":"text","text":"cut \\ud83d here"}],"isError":false}}',
    "bad_bytes": b'{"content":[{"type":"text","text":"caf\xe9 \xff!"}],"isError":false}}',
    "deep": b"[" * 10_000 + b"]" * 10_000 + b"}",
    "truncated": b'{"content":[{"type":"te',
}


def misbehave(rid: Any, name: str, args: dict[str, Any]) -> Iterator[bytes | Callable[[], None]]:
    if name in BROKEN:
        yield b'{"jsonrpc":"2.0","id":' + json.dumps(rid).encode() + b',"result":' + BROKEN[name]
    elif name == "ok":
        yield result(rid, "fine")
    elif name == "wrong_id":
        yield result(rid + 1000 if isinstance(rid, int) else "nobody", "for someone else")
    elif name in ("huge", "huge_sse"):
        yield result(rid, "x" * int(args.get("size", 10_000_000)))
    elif name in ("silent", "keepalive", "charge_and_hang"):
        yield lambda: time.sleep(3600)
    elif name == "flood":
        note = {
            "jsonrpc": "2.0",
            "method": "notifications/message",
            "params": {"level": "info", "data": "y" * 10_000},
        }
        line = json.dumps(note).encode()
        for _ in range(int(args.get("size", 2_000))):
            yield line
        yield result(rid, "after the flood")
    elif name == "vanished":  # as if the tool was removed after the list was read
        changed = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
        yield json.dumps(changed).encode()
        error = {"code": -32602, "message": f"Unknown tool: {name}"}
        yield json.dumps({"jsonrpc": "2.0", "id": rid, "error": error}).encode()
    elif name == "die":
        yield lambda: os._exit(3)


def serve_stdio() -> None:
    out = sys.stdout.buffer
    if os.environ.get("HOSTILE_BANNER"):
        out.write(b"Welcome to the hostile server v1\nlistening on stdio\n")
        out.flush()
    lock = threading.Lock()

    def handle(message: dict[str, Any]) -> None:
        for item in answer(message):
            if callable(item):
                item()
                continue
            with lock:
                out.write(item + b"\n")
                out.flush()

    for raw in sys.stdin.buffer:
        if not raw.strip():
            continue
        message = json.loads(raw)
        if "id" in message and "method" in message:
            # each request in a thread of its own, so a hanging one leaves the others served;
            # not daemons: like many servers, it finishes its calls before it exits
            threading.Thread(target=handle, args=(message,)).start()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # the body ends when the connection closes

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:  # no stream of server messages
        self.send_response(405)
        self.end_headers()

    def do_DELETE(self) -> None:
        self.send_response(200)
        self.end_headers()

    def do_POST(self) -> None:
        message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if "id" not in message or "method" not in message:
            self.send_response(202)
            self.end_headers()
            return
        name = (message.get("params") or {}).get("name")
        if message["method"] == "tools/call" and name in ("keepalive", "huge_sse", "flood"):
            self.send_sse(message, name)
            return
        items = list(answer(message))
        lines = [i for i in items if not callable(i)]
        for item in items:
            if callable(item) and not lines:
                item()  # silent / die: before any answer
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(lines[-1] if lines else b"")

    def send_sse(self, message: dict[str, Any], name: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        try:
            if name == "keepalive":
                while True:  # comments only, forever
                    self.wfile.write(b": keep-alive\n\n")
                    self.wfile.flush()
                    time.sleep(0.2)
            for item in answer(message):
                if not callable(item):
                    self.wfile.write(b"event: message\ndata: " + item + b"\n\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass


def main() -> None:
    pidfile = os.environ.get("HOSTILE_PIDFILE")
    if pidfile:
        with open(pidfile, "w") as f:
            f.write(str(os.getpid()))
    if sys.argv[1] == "stdio":
        serve_stdio()
    else:
        server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[2])), Handler)
        server.daemon_threads = True
        server.serve_forever()


if __name__ == "__main__":
    main()
