"""A batch of parallel tool calls, each in a task of its own: their results are recorded as
they finish; on cancellation finished ones are kept and the rest cancelled.

A sync tool whose thread is running when the run is cancelled is waited for, for a short
grace (``tools._threads``): a value it returns in time is recorded like a finished call's,
so a resume does not run it again."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from ..errors import RunCancelled
from ..reliability import CancelToken
from ..transcript import ToolCallEntry
from .outcome import Outcome

__all__ = ["Record", "collect"]

Record = Callable[[list[tuple[ToolCallEntry, Outcome]]], Awaitable[None]]
"""Records finished calls' results, in call order (the tool phase's ``record_and_announce``)."""


async def collect(
    token: CancelToken, record: Record, tasks: dict[asyncio.Future[Outcome], ToolCallEntry]
) -> None:
    """Record results as tools finish; on cancellation keep finished ones, cancel the rest."""
    loop = asyncio.get_running_loop()
    stop: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        if not stop.done():
            stop.set_result(None)

    remove = token.add_callback(wake)
    pending: set[asyncio.Future[Any]] = set(tasks)
    cancelled = False
    try:
        while pending:
            done, pending = await asyncio.wait(
                pending | {stop}, return_when=asyncio.FIRST_COMPLETED
            )
            pending.discard(stop)
            if stop.done() and pending:
                await asyncio.sleep(0)  # a tool that cancelled and returned keeps its result
                done |= {t for t in pending if t.done()}
                pending -= done
            cancelled = await _record(token, record, tasks, done) or cancelled
            if stop.done() or cancelled:
                break
        if pending:  # the run stops: the rest are cancelled (a sync call held for a while)
            for t in pending:
                t.cancel()
            await asyncio.wait(pending)
            late, pending = pending, set()
            await _record(token, record, tasks, {t for t in late if not t.cancelled()})
    finally:
        remove()
        for t in pending:
            t.cancel()
        if pending:
            await asyncio.wait(pending)
    if cancelled or token.cancelled:
        token.check()
        raise RunCancelled("the run was cancelled")


async def _record(
    token: CancelToken,
    record: Record,
    tasks: dict[asyncio.Future[Outcome], ToolCallEntry],
    done: set[asyncio.Future[Any]],
) -> bool:
    """Record the results of the ``done`` tasks, in call order; whether one of them raised
    ``RunCancelled`` (its call stays without a result, and the token is fired)."""
    cancelled = False
    results: list[tuple[ToolCallEntry, Outcome]] = []
    for task in [t for t in tasks if t in done]:  # call order, not completion order
        exc = task.exception()
        if isinstance(exc, RunCancelled):
            cancelled = True
            token.cancel(exc.message)
            continue
        if exc is not None:
            raise exc
        results.append((tasks[task], task.result()))
    if results:
        await record(results)
    return cancelled
