"""A real HTTP server on 127.0.0.1 that plays scripted answers and records every request.

Each POST takes the next ``Reply``: an error status with a JSON body, or a 200 event stream
sent in HTTP/1.1 chunks (one chunk per SSE event, flushed, the way the services stream).
A reply can cut the connection after some events, or hold it open until the client leaves
(``disconnected`` is set when the client closes its side).
"""

from __future__ import annotations

import json
import socket
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted answer."""

    status: int = 200
    body: Any = None  # JSON body of an error answer
    events: list[str] = field(default_factory=list)  # SSE events, already formatted
    cut_after: int | None = None  # drop the connection after this many events (no final chunk)
    end_early_after: int | None = None  # end the body cleanly after this many events
    hold_open: bool = False  # after the events, wait for the client to disconnect
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class ProtocolServer:
    """Serves scripted replies on a free port; ``url`` is its base URL."""

    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.requests: list[Request] = []
        self.disconnected = threading.Event()
        self.closing = threading.Event()
        self.holding = threading.Event()  # a hold_open reply has sent its events
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> ProtocolServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self.closing.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)

    def add(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)

    def take(self, request: Request) -> Reply | None:
        with self._lock:
            self.requests.append(request)
            return self.replies.pop(0) if self.replies else None


def _handler_for(server: ProtocolServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            request = Request(
                path=self.path,
                headers={k.lower(): v for k, v in self.headers.items()},
                body=json.loads(raw or b"{}"),
            )
            reply = server.take(request)
            if reply is None:
                server.errors.append(f"unscripted request to {self.path}")
                reply = Reply(500, {"error": {"message": "the test script ran dry"}})
            try:
                if reply.status != 200:
                    _send_error(self, reply)
                else:
                    _send_stream(server, self, reply)
            except (BrokenPipeError, ConnectionResetError):
                server.disconnected.set()

    return Handler


def _send_error(h: BaseHTTPRequestHandler, reply: Reply) -> None:
    data = json.dumps(reply.body).encode()
    h.send_response(reply.status)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(data)))
    for k, v in reply.headers.items():
        h.send_header(k, v)
    h.end_headers()
    h.wfile.write(data)


def _send_stream(server: ProtocolServer, h: BaseHTTPRequestHandler, reply: Reply) -> None:
    h.send_response(200)
    h.send_header("Content-Type", "text/event-stream")
    h.send_header("Cache-Control", "no-cache")
    h.send_header("Transfer-Encoding", "chunked")
    h.end_headers()
    for n, event in enumerate(reply.events):
        if reply.cut_after is not None and n == reply.cut_after:
            h.connection.shutdown(socket.SHUT_RDWR)
            h.close_connection = True
            return
        if reply.end_early_after is not None and n == reply.end_early_after:
            break
        data = event.encode()
        h.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        h.wfile.flush()
    if reply.hold_open:
        _wait_for_disconnect(server, h)
        return
    h.wfile.write(b"0\r\n\r\n")
    h.wfile.flush()


def _wait_for_disconnect(server: ProtocolServer, h: BaseHTTPRequestHandler) -> None:
    h.close_connection = True
    h.connection.settimeout(0.05)
    server.holding.set()
    while not server.closing.is_set():
        try:
            if h.connection.recv(1024) == b"":
                server.disconnected.set()  # the client closed its side
                return
        except TimeoutError:
            continue
        except OSError:
            server.disconnected.set()
            return


# -- wire formats -------------------------------------------------------------------------


def sse(data: Any, event: str | None = None) -> str:
    """One SSE event (``data`` as JSON unless it is already a string)."""
    payload = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n"


def openai_chunk(
    delta: dict[str, Any] | None = None,
    *,
    finish: str | None = None,
    usage: dict[str, Any] | None = None,
    model: str = "test-model",
) -> str:
    """A ``chat.completion.chunk``; with ``usage`` and no delta it is the final usage chunk."""
    choices = (
        []
        if delta is None and finish is None
        else [{"index": 0, "delta": delta or {}, "finish_reason": finish, "logprobs": None}]
    )
    return sse(
        {
            "id": "chatcmpl-test",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": model,
            "system_fingerprint": "fp_test",
            "choices": choices,
            "usage": usage,
        }
    )


def openai_usage(prompt: int, completion: int, cached: int = 0) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }


def openai_text_stream(text: str, *, prompt: int = 10, completion: int = 5) -> list[str]:
    """Text split into small chunks, a stop, a usage chunk and ``[DONE]``."""
    parts = [text[i : i + 4] for i in range(0, len(text), 4)]
    return [
        openai_chunk({"role": "assistant", "content": ""}),
        *(openai_chunk({"content": p}) for p in parts),
        openai_chunk({}, finish="stop"),
        openai_chunk(usage=openai_usage(prompt, completion)),
        sse("[DONE]"),
    ]


def openai_error(status: int, message: str, type_: str, code: str | None = None) -> Reply:
    return Reply(
        status, {"error": {"message": message, "type": type_, "param": None, "code": code}}
    )


def anthropic_event(name: str, data: dict[str, Any]) -> str:
    return sse({"type": name, **data}, event=name)


def anthropic_start(input_tokens: int = 10, cache_read: int = 0, cache_write: int = 0) -> str:
    return anthropic_event(
        "message_start",
        {
            "message": {
                "id": "msg_test",
                "type": "message",
                "role": "assistant",
                "model": "claude-test",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": input_tokens,
                    "output_tokens": 1,
                    "cache_read_input_tokens": cache_read,
                    "cache_creation_input_tokens": cache_write,
                },
            }
        },
    )


def anthropic_end(stop_reason: str, output_tokens: int) -> list[str]:
    return [
        anthropic_event(
            "message_delta",
            {
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": output_tokens},
            },
        ),
        anthropic_event("message_stop", {}),
    ]


def anthropic_text_block(index: int, text: str) -> list[str]:
    parts = [text[i : i + 4] for i in range(0, len(text), 4)]
    return [
        anthropic_event(
            "content_block_start", {"index": index, "content_block": {"type": "text", "text": ""}}
        ),
        anthropic_event("ping", {}),
        *(
            anthropic_event(
                "content_block_delta", {"index": index, "delta": {"type": "text_delta", "text": p}}
            )
            for p in parts
        ),
        anthropic_event("content_block_stop", {"index": index}),
    ]


def anthropic_tool_block(index: int, call_id: str, name: str, arguments: list[str]) -> list[str]:
    return [
        anthropic_event(
            "content_block_start",
            {
                "index": index,
                "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}},
            },
        ),
        *(
            anthropic_event(
                "content_block_delta",
                {"index": index, "delta": {"type": "input_json_delta", "partial_json": a}},
            )
            for a in arguments
        ),
        anthropic_event("content_block_stop", {"index": index}),
    ]


def anthropic_text_stream(
    text: str, *, input_tokens: int = 10, output_tokens: int = 5, stop_reason: str = "end_turn"
) -> list[str]:
    """A whole answer of one text block."""
    return [
        anthropic_start(input_tokens),
        *anthropic_text_block(0, text),
        *anthropic_end(stop_reason, output_tokens),
    ]


def anthropic_tool_stream(
    call_id: str,
    name: str,
    arguments: str | list[str],
    *,
    input_tokens: int = 10,
    output_tokens: int = 5,
) -> list[str]:
    """A whole answer of one tool call (``arguments`` as one piece or the pieces it streams in)."""
    pieces = [arguments] if isinstance(arguments, str) else arguments
    return [
        anthropic_start(input_tokens),
        *anthropic_tool_block(0, call_id, name, pieces),
        *anthropic_end("tool_use", output_tokens),
    ]


def anthropic_error(status: int, type_: str, message: str) -> Reply:
    return Reply(
        status,
        {"type": "error", "error": {"type": type_, "message": message}},
        headers={"request-id": "req_test"},
    )
