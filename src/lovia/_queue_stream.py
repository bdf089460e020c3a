"""``lovia.workers``' following side: a run's states (``follow``) and its events as a
worker saves them (``stream_run``)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from ._queue_deltas import DeltaFollower
from ._queue_events import end_events, step_events
from ._queue_submit import QueueSubmit
from .stores.checkpoint import validate_id
from .stores.open import open_stores
from .stores.pg_deltas import next_notice

log = logging.getLogger("lovia.workers")

FINAL_STATES = frozenset({"completed", "failed", "cancelled", "awaiting_approval"})


class QueueStream(QueueSubmit):
    """Following a queued run: its state changes and its saved steps."""

    async def follow(
        self, run_id: str, *, poll_interval: float = 1.0, timeout: float | None = None
    ) -> AsyncIterator[dict[str, Any]]:
        """Yield the run's state (as ``state()``) each time it changes, until it is final
        (completed, failed, cancelled, awaiting_approval) or ``timeout`` seconds pass.

        On PostgreSQL, changes arrive by LISTEN/NOTIFY; the state is also read every
        ``poll_interval`` seconds, so a lost notification (a dropped connection) delays an
        update by at most that long."""
        validate_id(run_id, "run_id")
        deadline = None if timeout is None else time.monotonic() + timeout
        last: tuple[Any, ...] | None = None
        listener = await self._pg.listen() if self.is_postgres else None
        try:
            while True:
                current = await self.state(run_id)
                key = None if current is None else (current["state"], current["attempts"])
                if current is not None and key != last:
                    last = key
                    yield current
                    if current["state"] in FINAL_STATES:
                        return
                wait = poll_interval
                if deadline is not None:
                    wait = min(wait, deadline - time.monotonic())
                    if wait <= 0:
                        return
                await self._pg.wait_notice(listener, run_id, wait)
        finally:
            if listener is not None:
                await listener.close()

    async def stream_run(
        self,
        run_id: str,
        input: Any,
        *,
        session_id: str | None = None,
        agent: str | None = None,
        resume: bool = False,
        stopped: Callable[[], bool] | None = None,
        poll_interval: float = 0.5,
        park: bool = True,
    ) -> AsyncIterator[dict[str, Any]]:
        """Queue ``run_id`` (with ``resume=True``: the resumption of its parked run, whose
        decisions are recorded) and yield its progress as a worker saves it, as the event
        dicts of a live run: ``text_delta`` (with ``park``, as the worker writes the turn),
        ``message_completed`` (a model turn), ``tool_call_started``,
        ``tool_call_completed``, ``approval_required``, and last ``run_completed`` or
        ``run_failed``. This is how a web server hands its chats' runs to workers.

        The run's state changes, and with ``park`` (``submit``'s: a person watches) each
        saved step, arrive by LISTEN/NOTIFY; the checkpoint is read on each notice and every
        ``poll_interval`` seconds, so a lost notification (a dropped connection) delays a
        step by at most that long. Once ``stopped()`` is true the run is cancelled (as
        ``cancel``); closing the iterator leaves it running."""
        validate_id(run_id, "run_id")
        self._require_postgres("stream_run")
        if self._stores is None:
            self._stores = open_stores(
                self.db, table_prefix=self.table_prefix, max_size=self.pool_size
            )
        checkpointer = self._stores[1]
        started = await self._start_streamed(run_id, input, session_id, agent, resume, park)
        if started is None:
            yield {
                "type": "run_failed",
                "error": {
                    "type": "UserError",
                    "message": f"run {run_id!r} was not queued: no worker can resume it",
                },
            }
            return
        seen, turns = started
        tokens = DeltaFollower(self.table_prefix + run_id, turns)
        listener: list[Any] = [await self._pg.listen()]  # re-opened when it drops
        cancelled = False
        try:
            while True:
                looked = await self._look(listener, run_id, checkpointer)
                if looked is None:  # the database away: look again shortly
                    await asyncio.sleep(poll_interval)
                    continue
                state, snap = looked
                if snap is not None:
                    events, seen = step_events(list(snap.entries), seen)
                    for event in tokens.saved(events, snap.turns):
                        yield event
                if state is not None and state["state"] in FINAL_STATES:
                    for event in end_events(state, snap):
                        yield event
                    return
                if stopped is not None and not cancelled and stopped():
                    cancelled = True
                    await self._cancel_quietly(run_id)
                    continue
                async for event in self._tokens(listener[0], run_id, tokens, poll_interval):
                    yield event
        finally:
            if listener[0] is not None:
                await listener[0].close()

    async def _cancel_quietly(self, run_id: str) -> None:
        try:
            await self.cancel(run_id)
        except Exception as exc:  # the stream goes on: the run ends as it would have
            log.warning("stream_run %s: cancel failed: %s", run_id, exc)

    async def _tokens(
        self, listener: Any, run_id: str, tokens: DeltaFollower, wait: float
    ) -> AsyncIterator[dict[str, Any]]:
        """The text deltas that arrive within ``wait`` seconds, as they come; ends early
        at a notice of a saved step or a state change (the checkpoint is read then)."""
        until = time.monotonic() + wait
        while (left := until - time.monotonic()) > 0:
            payload = await next_notice(self._pg, listener, run_id, left)
            shown = None if payload is None else tokens.on_notice(payload)
            if shown is None:
                return
            for event in shown:
                yield event

    async def _look(
        self, listener: list[Any], run_id: str, checkpointer: Any
    ) -> tuple[dict[str, Any] | None, Any] | None:
        """The run's queue row (read on the LISTEN connection) and its checkpoint; ``None``
        when the database cannot be read now."""
        try:
            if not self._pg.listening(listener[0]):
                listener[0] = await self._pg.listen()
            if listener[0] is not None:
                state = await self._pg.read_state(run_id, listener[0])
            else:
                state = await self.state(run_id)
            return state, await checkpointer.load(run_id)
        except Exception as exc:
            log.info("stream_run %s: %s", run_id, exc)
            return None

    async def _start_streamed(
        self,
        run_id: str,
        input: Any,
        session_id: str | None,
        agent: str | None,
        resume: bool,
        park: bool,
    ) -> tuple[int, int] | None:
        """Queue the run (or its resumption); the count of its entries and turns already
        shown, or ``None`` when a run to resume was never queued."""
        if not resume:
            await self.submit(run_id, input, session_id=session_id, agent=agent, park=park)
            return 0, 0
        # a parked run decided, or a run followed again (a worker drives it)
        assert self._stores is not None
        before = await self._stores[1].load(run_id)
        await self.resume(run_id)
        if await self.state(run_id) is None:
            return None
        return (0, 0) if before is None else (len(before.entries), before.turns)
