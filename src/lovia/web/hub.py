"""The lifecycle events of ``GET /api/events``: runs starting and finishing, chats made and
retitled, for every client at once. No history: a client reads ``/api/sessions`` and
``/api/runs`` first, then follows. A client that falls behind by ``backlog`` events is
dropped (its stream ends; it reconnects and reads the state again)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any

__all__ = ["EventHub"]

_CLOSE: tuple[str, Mapping[str, Any]] = ("", {})


class EventHub:
    """Fan-out of lifecycle events to subscribers, each with a bounded queue."""

    def __init__(self, backlog: int = 256) -> None:
        self.backlog = backlog
        self._queues: set[asyncio.Queue[tuple[str, Mapping[str, Any]]]] = set()

    def emit(self, event: str, data: Mapping[str, Any]) -> None:
        """Send ``event`` to every subscriber now (never waits)."""
        for queue in list(self._queues):
            try:
                queue.put_nowait((event, dict(data)))
            except asyncio.QueueFull:  # too far behind: its stream ends, it reconnects
                self._queues.discard(queue)
                queue.get_nowait()
                queue.put_nowait(_CLOSE)

    async def subscribe(self) -> AsyncIterator[tuple[str, Mapping[str, Any]]]:
        """Each event from now on, until the subscriber falls behind or the hub closes."""
        queue: asyncio.Queue[tuple[str, Mapping[str, Any]]] = asyncio.Queue(self.backlog)
        self._queues.add(queue)
        try:
            while True:
                item = await queue.get()
                if item is _CLOSE:
                    return
                yield item
        finally:
            self._queues.discard(queue)

    def close(self) -> None:
        """End every subscriber's stream (server shutdown)."""
        for queue in list(self._queues):
            self._queues.discard(queue)
            while not queue.empty():
                queue.get_nowait()
            queue.put_nowait(_CLOSE)

    def __len__(self) -> int:
        return len(self._queues)
