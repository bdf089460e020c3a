"""``BodyLimit``: refuse request bodies over a size with 413, before anything reads them."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["BodyLimit"]

Scope = dict[str, Any]
Message = dict[str, Any]


class BodyLimit:
    """ASGI middleware: a body longer than ``max_bytes`` gets 413 (by its Content-Length
    when declared, otherwise counted as it arrives)."""

    def __init__(self, app: Any, *, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or ()).get(b"content-length")
        if declared is not None:
            if not declared.isdigit() or int(declared) > self.max_bytes:
                await self._refuse(send)
                return
            await self.app(scope, receive, send)  # the server holds the body to its length
            return
        # No length (a chunked body): read it here, at most max_bytes + 1, because an error
        # raised while the app reads the body would reach the client as a 400 parse error.
        buffered: list[Message] = []
        seen = 0
        while True:
            message: Message = await receive()
            buffered.append(message)
            if message["type"] != "http.request":
                break  # the client went away: let the app see that
            seen += len(message.get("body", b""))
            if seen > self.max_bytes:
                await self._refuse(send)
                return
            if not message.get("more_body", False):
                break

        async def replay() -> Message:
            if buffered:
                return buffered.pop(0)
            later: Message = await receive()  # e.g. http.disconnect while a stream is open
            return later

        await self.app(scope, replay, send)

    async def _refuse(self, send: Any) -> None:
        body = json.dumps(
            {"detail": f"request body over {self.max_bytes} bytes", "hint": "send less"}
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
