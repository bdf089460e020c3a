"""``RunHandle``: a streaming run. Iterate it for events; ``await result()`` for the result."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from ..events import RunEvent
from .context import CancelToken
from .result import RunResult

__all__ = ["RunHandle"]


class RunHandle:
    """A run in progress.

    Iterating never raises: the stream always ends with exactly one terminal event
    (``RunCompleted`` or ``RunFailed``); the error, if any, is raised by ``result()``.
    The run starts at once when a loop is running, else on first use.
    """

    def __init__(
        self,
        start: Callable[[Callable[[RunEvent], None]], Awaitable[RunResult]],
        cancel_token: CancelToken,
    ) -> None:
        self._start = start
        self._queue: asyncio.Queue[RunEvent] = asyncio.Queue()
        self._task: asyncio.Task[RunResult] | None = None
        self._done = False
        self.cancel_token = cancel_token
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return
        self._ensure_started()

    def _ensure_started(self) -> asyncio.Task[RunResult]:
        if self._task is None:
            self._task = asyncio.ensure_future(self._start(self._queue.put_nowait))
        return self._task

    def cancel(self, reason: str | None = None) -> None:
        """Ask the run to stop at its next safe point (it ends with ``RunCancelled``)."""
        self.cancel_token.cancel(reason)

    def __aiter__(self) -> AsyncIterator[RunEvent]:
        return self._events()

    async def _events(self) -> AsyncIterator[RunEvent]:
        task = self._ensure_started()
        while not self._done:
            event = await self._queue.get()
            if event.terminal:
                self._done = True
            yield event
        # the terminal event was seen; let the task finish so result() is ready
        await asyncio.wait({task})

    async def result(self) -> RunResult:
        """The run's result; raises the run's error if it failed."""
        return await self._ensure_started()

    def __await__(self) -> Any:
        return self.result().__await__()
