"""The plain types of a run that the layers below the runtime may name: ``RunResult`` (what a
finished run returns), ``RunHandle`` (a streamed run) and ``Channel`` (the rendezvous between a
run and its reader). The runtime in ``lovia._run`` builds them; ``Agent``, the events and the
hooks only name them, so nothing below the runtime imports it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from .approvals import ApprovalChannel
from .events import Event, RunCompleted, RunFailed
from .reliability import CancelToken
from .transcript import TranscriptEntry, entries_to_messages, entry_to_dict
from .usage import Usage

if TYPE_CHECKING:
    from .agent import Agent
    from .messages import Message

__all__ = ["Channel", "RunHandle", "RunResult"]


@dataclass(frozen=True, repr=False)
class RunResult:
    """The output of a run and how it got there.

    ``entries`` are this run's own entries (from its input on; no system prompt, no session
    history). ``finish_reason`` is the provider's last finish reason, ``None`` on a replay.
    The first fields come in 0.9.119's order with its defaults, so a result a test builds by
    hand (``RunResult(output, entries, agent, usage, turns)``) still builds; its ``run_id``
    is then ``""``. ``started_at`` and ``finished_at`` (Unix seconds) are the timing the run
    recorded in its session segment: its first start (``None`` for a run resumed from a
    checkpoint that predates timing) and its end. A replay carries the segment's when it
    read it (answered from the segment, or the session read with the run's lease), else
    ``None``.
    """

    output: Any
    entries: list[TranscriptEntry]
    final_agent: Agent
    usage: Usage
    turns: int
    finish_reason: str | None = None
    last_input_tokens: int | None = None
    run_id: str = ""
    session_id: str | None = None
    replayed: bool = field(default=False)
    started_at: float | None = None
    finished_at: float | None = None

    @property
    def messages(self) -> list[Message]:
        """This run's entries as chat messages."""
        return entries_to_messages(self.entries)

    def __repr__(self) -> str:
        shown = repr(self.output)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        return (
            f"RunResult(output={shown}, agent={self.final_agent.name!r}, "
            f"turns={self.turns}, tokens={self.usage.total_tokens})"
        )

    def to_dict(self) -> dict[str, Any]:
        output = self.output
        if isinstance(output, BaseModel):
            output = output.model_dump(mode="json")
        return {
            "output": output,
            "entries": [entry_to_dict(e) for e in self.entries],
            "usage": self.usage.to_dict(),
            "turns": self.turns,
            "finish_reason": self.finish_reason,
            "final_agent": self.final_agent.name,
            "run_id": self.run_id,
            "session_id": self.session_id,
            "replayed": self.replayed,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
        }


class Channel:
    """A rendezvous between the run and the consumer iterating its handle.

    ``send`` hands one event over and returns only when the consumer asks for the next one,
    so a run never gets ahead of its reader (an unread handle does no work) and a consumer
    can decide an approval while the run waits at that event.
    """

    __slots__ = ("_queue",)

    def __init__(self) -> None:
        self._queue: asyncio.Queue[tuple[Event, asyncio.Future[None]]] = asyncio.Queue(1)

    async def send(self, event: Event) -> None:
        ack: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        await self._queue.put((event, ack))
        await ack

    async def receive(self) -> tuple[Event, asyncio.Future[None]]:
        return await self._queue.get()


class RunHandle:
    """A run driven by its reader.

    The run starts when you first iterate the handle (or call ``result()``) and advances one
    event per step of your iteration: a handle nobody reads does no work. Iteration is
    single-shot (a second one raises ``RuntimeError``) and never raises for run failures:
    the stream always ends with exactly one terminal event (``RunCompleted`` or
    ``RunFailed``) and ``result()`` raises the run's error. Leaving the loop early (``break``)
    abandons the run: it stops at once and its checkpoint says ``"interrupted"``.
    ``approvals`` decides pending tool approvals by call id; ``cancel()`` stops the run at
    its next safe point.
    """

    def __init__(
        self,
        start: Callable[[Channel], Awaitable[RunResult]],
        cancel_token: CancelToken,
        approvals: ApprovalChannel,
    ) -> None:
        self._start = start
        self._task: asyncio.Task[RunResult] | None = None
        self._consumed = False
        self._finished = False
        self._error: BaseException | None = None
        self._result: RunResult | None = None
        self.cancel_token = cancel_token
        self.approvals = approvals

    def cancel(self, reason: str | None = None) -> None:
        """Ask the run to stop at its next safe point (it ends with ``RunCancelled``)."""
        self.cancel_token.cancel(reason)

    def __aiter__(self) -> AsyncIterator[Event]:
        if self._consumed:
            raise RuntimeError("RunHandle can only be iterated once")
        self._consumed = True
        return self._events()

    async def _events(self) -> AsyncIterator[Event]:
        channel = Channel()
        task = self._task = asyncio.ensure_future(self._start(channel))
        task.add_done_callback(_retrieved)  # its error reaches the caller through the handle
        ack: asyncio.Future[None] | None = None
        try:
            while True:
                if ack is not None and not ack.done():
                    ack.set_result(None)
                ack = None
                receive = asyncio.ensure_future(channel.receive())
                await asyncio.wait({receive, task}, return_when=asyncio.FIRST_COMPLETED)
                if not receive.done():
                    receive.cancel()
                    if not task.cancelled() and task.exception() is not None:
                        # it failed before it could say so (bad arguments): one terminal event
                        failed = RunFailed(task.exception())  # type: ignore[arg-type]
                        self._settle_terminal(failed)
                        yield failed
                    break  # the run ended without a terminal event for the stream
                event, ack = receive.result()
                if event.terminal:
                    ack.set_result(None)
                    ack = None
                    self._settle_terminal(event)
                    yield event
                    break
                yield event
        except GeneratorExit:
            if self._result is None and self._error is None:
                self._abandon(task)  # left before the end: the run stops here
            raise  # after the terminal event the run only finishes its bookkeeping
        except BaseException:
            self._abandon(task)
            raise
        await asyncio.wait({task})
        self._collect(task)
        if self._result is None and self._error is None:  # pragma: no cover - defensive
            self._error = RuntimeError("the run ended without a result")

    def _settle_terminal(self, event: Event) -> None:
        if isinstance(event, RunCompleted):
            self._result = event.result
        elif isinstance(event, RunFailed):
            self._error = event.error

    def _collect(self, task: asyncio.Task[RunResult]) -> None:
        self._finished = True
        if task.cancelled():
            if self._error is None:
                self._error = RuntimeError("the run was abandoned before it completed")
            return
        exc = task.exception()
        if exc is not None:
            self._error = exc
        elif self._result is None:
            self._result = task.result()

    def _abandon(self, task: asyncio.Task[RunResult]) -> None:
        self._finished = True
        if not task.done():
            task.cancel()
        if self._result is None and self._error is None:
            self._error = RuntimeError(
                "the run was abandoned before it completed (the event stream was closed "
                "before RunCompleted)"
            )

    async def result(self) -> RunResult:
        """The run's result; raises the run's error if it failed."""
        if not self._consumed:
            async for _ in self:
                pass
        elif self._result is not None or self._error is not None:
            if self._task is not None and not self._task.done():
                await asyncio.wait({self._task})  # the run's last saves and its lease release
        elif not self._finished:
            task = self._task
            if task is not None:
                await asyncio.wait({task})
                # an iterator still running owns the handle's state: wait for it to settle
                while not self._finished:  # noqa: ASYNC110 - settles within a step or two
                    await asyncio.sleep(0)
        if self._error is not None:
            raise self._error
        if self._result is None:
            raise RuntimeError("the run was abandoned before it completed")
        return self._result

    def __await__(self) -> Any:
        return self.result().__await__()


def _retrieved(task: asyncio.Task[Any]) -> None:
    """Mark a run task's exception as seen: the handle hands it on (``result()``, the
    terminal event), so asyncio must not also log it as never retrieved."""
    if not task.cancelled():
        task.exception()
