"""Between a transport and the SDK's session: no call waits for an answer that will not come.

The SDK drops what it cannot match: a message it cannot parse, an answer whose id no request
has. A call waiting for that answer would wait forever. ``Guard`` watches both directions:
it knows which requests wait (and which were given up), and when the server sends something
unreadable or an answer to a request nobody sent, it fails the waiting requests at once with
an error naming the server and what it sent. An answer cut at the size cap is held here for
the connection to read (``take``), past the SDK's checks of a whole result.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from ._wire import CUT_KEY, BadMessage, excerpt

log = logging.getLogger("lovia.mcp")

GUARD_CODE = -32099  # the JSON-RPC error code of the errors the guard gives a waiting request
_ABANDONED_KEPT = 256  # ids given up on whose late answers are still recognized


@dataclass(frozen=True)
class Verdict:
    """What the guard decided for one request: ``problem`` (what went wrong, for the error
    message) or ``cut`` (the result of an answer cut at the size cap)."""

    problem: str | None = None
    cut: dict[str, Any] | None = None


def _key(request_id: Any) -> Any:
    """Request ids as the SDK matches them ("7" and 7 are one id)."""
    if isinstance(request_id, str) and request_id.lstrip("-").isdigit():
        return int(request_id)
    return request_id


class Guard:
    """Watches one session's traffic; ``wrap`` gives the streams the session reads and writes."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.waiting: dict[Any, Any] = {}  # key -> the request id as sent
        self.abandoned: OrderedDict[Any, None] = OrderedDict()
        self._verdicts: dict[int, Verdict] = {}
        self._next = 0

    def wrap(self, read: Any, write: Any) -> tuple[Any, Any]:
        return _GuardedRead(read, self), _GuardedWrite(write, self)

    def take(self, exc: BaseException) -> Verdict | None:
        """The guard's verdict behind an SDK error, once (``None`` for any other error)."""
        error = getattr(exc, "error", None)
        data = getattr(error, "data", None)
        if getattr(error, "code", None) != GUARD_CODE or not isinstance(data, dict):
            return None
        number = data.get("lovia_verdict")
        return self._verdicts.pop(number, None) if isinstance(number, int) else None

    # -- outbound ------------------------------------------------------------------------------

    def sent(self, item: Any) -> None:
        from mcp_types import JSONRPCNotification, JSONRPCRequest

        message = getattr(item, "message", None)
        if isinstance(message, JSONRPCRequest):
            self.waiting[_key(message.id)] = message.id
        elif (
            isinstance(message, JSONRPCNotification)
            and message.method == "notifications/cancelled"
            and isinstance(message.params, dict)
        ):
            key = _key(message.params.get("requestId"))
            if self.waiting.pop(key, None) is not None:
                self.abandoned[key] = None
                while len(self.abandoned) > _ABANDONED_KEPT:
                    self.abandoned.popitem(last=False)

    # -- inbound -------------------------------------------------------------------------------

    def received(self, item: Any) -> list[Any]:
        """What the session gets for one item from the transport (none, it, or errors)."""
        from mcp_types import JSONRPCError, JSONRPCResponse

        if isinstance(item, BadMessage):
            problem = f"sent a message that cannot be read: {item.reason} (it began {item.excerpt})"
            return self._fail(item.request_id, problem)
        message = getattr(item, "message", None)
        if not isinstance(message, (JSONRPCResponse, JSONRPCError)):
            return [item]
        key = _key(message.id)
        if key in self.abandoned:
            del self.abandoned[key]
            return [item]  # a late answer to a call given up on: the SDK drops it
        if key not in self.waiting:
            shown = excerpt(item.message.model_dump_json(by_alias=True, exclude_unset=True))
            problem = f"answered request id {message.id!r}, which no call is waiting for: {shown}"
            log.warning("mcp.wrong_id: %s %s", self.label, problem)
            return self._fail(None, problem)
        del self.waiting[key]
        result = message.result if isinstance(message, JSONRPCResponse) else None
        meta = result.get("_meta") if isinstance(result, dict) else None
        if isinstance(meta, dict) and CUT_KEY in meta:
            return [self._error(message.id, Verdict(cut=result))]
        return [item]

    def _fail(self, request_id: Any, problem: str) -> list[Any]:
        """Errors for the request ``request_id`` when it waits, else for every waiting one
        (the message may have been meant for any of them)."""
        key = _key(request_id)
        if request_id is not None and key not in self.waiting:
            if key in self.abandoned:
                return []  # a broken late answer to a call given up on
            keys = list(self.waiting)
        else:
            keys = [key] if request_id is not None else list(self.waiting)
        return [self._error(self.waiting.pop(k), Verdict(problem=problem)) for k in keys]

    def _error(self, request_id: Any, verdict: Verdict) -> Any:
        from mcp.shared.message import SessionMessage
        from mcp_types import ErrorData, JSONRPCError

        self._next += 1
        self._verdicts[self._next] = verdict
        error = ErrorData(
            code=GUARD_CODE,
            message=verdict.problem or "the answer was cut at the size cap",
            data={"lovia_verdict": self._next},
        )
        return SessionMessage(JSONRPCError(jsonrpc="2.0", id=request_id, error=error))


class _GuardedRead:
    """The session's read stream: the transport's items, as the guard lets them through."""

    def __init__(self, inner: Any, guard: Guard) -> None:
        self._inner = inner
        self._guard = guard
        self._ready: list[Any] = []

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        while not self._ready:
            self._ready = self._guard.received(await self._inner.receive())
        return self._ready.pop(0)

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _GuardedRead:
        return self

    async def __anext__(self) -> Any:
        import anyio

        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _GuardedRead:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class _GuardedWrite:
    """The session's write stream: each message noted by the guard, then sent."""

    def __init__(self, inner: Any, guard: Guard) -> None:
        self._inner = inner
        self._guard = guard

    async def send(self, item: Any) -> None:
        self._guard.sent(item)
        await self._inner.send(item)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _GuardedWrite:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
