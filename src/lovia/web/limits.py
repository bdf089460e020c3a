"""``BodyLimit``: refuse request bodies over a size with 413, before anything reads them, and
bodies that do not arrive in time with 408 (a client that sends half a body and waits would
otherwise hold its connection, and the server's memory, for as long as it likes)."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

__all__ = ["BodyLimit"]

Scope = dict[str, Any]
UPLOAD_PATH = "/api/workspace/upload"
UPLOAD_OVERHEAD = 64 * 1024  # the multipart framing around the file
Message = dict[str, Any]


class BodyLimit:
    """ASGI middleware: a body longer than ``max_bytes`` gets 413 (by its Content-Length
    when declared, otherwise counted as it arrives); a body not complete within
    ``timeout`` seconds gets 408. The body is read here, then replayed to the app."""

    def __init__(self, app: Any, *, max_bytes: int, timeout: float = 30.0) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.timeout = timeout

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.max_bytes
        too_large = ("body_too_large", f"request body over {limit} bytes", "send less")
        if str(scope.get("path", "")).endswith(UPLOAD_PATH):  # one file: its own limit
            from .api_workspace import upload_limit

            cap = upload_limit()
            limit = max(limit, cap + UPLOAD_OVERHEAD)
            # the upload's own refusal, file_too_large, as the route itself answers it
            too_large = ("file_too_large", f"the file is over {cap} bytes", "upload a smaller file")
        headers = dict(scope.get("headers") or ())
        declared = headers.get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > limit):
            await _refuse(send, 413, too_large[1], too_large[2], code=too_large[0])
            return
        if (
            declared in (None, b"0")
            and b"transfer-encoding" not in headers
            and scope.get("http_version") in ("1.0", "1.1")
        ):  # HTTP/1 has a body only by these headers: none to wait for (most GETs)
            await self.app(scope, receive, send)
            return
        # Read the whole body here (at most max_bytes + 1), because an error raised while the
        # app reads it would reach the client as a 400 parse error.
        buffered: list[Message] = []
        seen = 0
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                message: Message = await asyncio.wait_for(
                    receive(), timeout=max(0.0, deadline - time.monotonic())
                )
            except asyncio.TimeoutError:
                await _refuse(
                    send,
                    408,
                    f"the request body did not arrive within {self.timeout:g} s",
                    "send the whole body at once",
                )
                return
            buffered.append(message)
            if message["type"] != "http.request":
                break  # the client went away: let the app see that
            seen += len(message.get("body", b""))
            if seen > limit:
                await _refuse(send, 413, too_large[1], too_large[2], code=too_large[0])
                return
            if not message.get("more_body", False):
                break

        async def replay() -> Message:
            if buffered:
                return buffered.pop(0)
            later: Message = await receive()  # e.g. http.disconnect while a stream is open
            return later

        await self.app(scope, replay, send)


async def _refuse(send: Any, status: int, detail: str, hint: str, code: str = "") -> None:
    code = code or {413: "body_too_large", 408: "body_timeout"}.get(status, "invalid_request")
    body = json.dumps({"detail": {"code": code, "message": detail, "hint": hint}}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
