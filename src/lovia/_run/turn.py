"""One model turn: the context view (policy, plugins' injected views), the model call under
its span (stopped at once when the run is cancelled), its usage added to the run state."""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import time
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

from .. import events as ev
from ..context.policy import (
    ContextRequest,
    ContextView,
    NoopContextPolicy,
    prepare_view,
    worth_retrying,
)
from ..errors import ContextOverflowError
from ..tracing import model_call_span, record_model_usage
from ..transcript import TranscriptEntry, to_entries, unique_call_ids
from .model import stream_turn

if TYPE_CHECKING:
    from ..reliability import CancelToken
    from .run import Run

__all__ = ["model_turn", "until_cancelled"]


async def model_turn(d: Run) -> list[TranscriptEntry]:
    state = d.state
    agent = state.agent
    provider = d.kit.provider(agent)
    policy = d.kit.policy(agent)
    tooling = d.kit.tooling(agent)
    attempt = 0
    refused: tuple[ContextView, ContextOverflowError] | None = None
    started = time.time()
    while True:
        whole = [*state.system_entries, *state.history, *state.entries]
        if type(policy) is NoopContextPolicy:  # the whole transcript, state kept: no request
            view = ContextView(whole)
        else:
            view = await prepare_view(
                policy,
                ContextRequest(
                    entries=whole,
                    state=state.context_state,
                    provider=provider,
                    # after a refusal the last count describes an older, smaller view
                    reported_input_tokens=None if attempt else state.reported_input_tokens,
                    attempt=attempt,
                    tools=tuple(tooling.by_name.values()),
                    reported_window=refused[1].reported_window if refused else None,
                ),
            )
            state.context_state = view.state
            if view.usage is not None:  # the policy's own model calls count in the run's usage
                state.usage = state.usage + view.usage
                if d.o.parent_usage is not None:  # an agent-as-tool's caller pays for it too
                    d.o.parent_usage.add(view.usage)
                if d.budget is not None:  # and against its budget, before the next call
                    d.budget.check(state.usage)
        viewed, compacted = view.entries, view.compacted
        if refused is not None and not worth_retrying(
            refused[0].entries, refused[0].claimed_tokens, view
        ):
            raise refused[1]  # the same view again would be refused again
        entries = await _inject_views(d, viewed) if d.kit.plugin_order else viewed
        if compacted is not None:
            await d.emit(_compaction_seen(d, compacted))
        call = stream_turn(
            provider,
            entries,
            tools=tooling.specs,
            agent=agent,
            output_type=d.kit.output_type(agent),
            retry=d.o.retry or d.kit.entry_agent.retry,  # the entry agent's, after handoffs too
            emit=d.emit,
            deltas=d.emitter.listening,
        )
        try:
            if not d.traced:  # the no-op tracer: no span to open
                turn = await until_cancelled(d, call)
            else:
                with model_call_span(
                    d.tracer,
                    model=getattr(provider, "model", None),
                    turn=state.turn,
                    provider=getattr(provider, "name", None),
                ) as span:
                    turn = await until_cancelled(d, call)
                    record_model_usage(
                        span,
                        input_tokens=turn.usage.input_tokens,
                        output_tokens=turn.usage.output_tokens,
                        finish_reason=turn.finish_reason,
                        tracer=d.tracer,
                    )
        except ContextOverflowError as exc:
            if attempt:
                raise
            attempt, refused = 1, (view, exc)
            continue
        state.usage = state.usage + turn.usage
        state.time_turn(started, time.time(), turn.usage)
        if d.o.parent_usage is not None:
            d.o.parent_usage.add(turn.usage)
        state.reported_input_tokens = turn.usage.input_tokens or None
        state.finish_reason = turn.finish_reason
        return unique_call_ids(turn.entries)  # a repeated call id gets one of its own


def _compaction_seen(d: Run, event: ev.ContextCompacted) -> ev.ContextCompacted:
    """Name the session on the event; its notice goes into the run's segment meta."""
    if event.session_id is None:
        event.session_id = d.o.session_id
    if event.notice is not None:
        d.state.context_notice = event.notice.to_dict()
    return event


async def _inject_views(d: Run, entries: list[TranscriptEntry]) -> list[TranscriptEntry]:
    extra: list[TranscriptEntry] = []
    for inst in d.kit.plugin_instances(d.state.agent):
        for injector in inst.view_injectors:
            got = injector(d.ctx)
            if inspect.isawaitable(got):
                got = await got
            if got:
                extra.extend(to_entries(got))
    return [*entries, *extra] if extra else entries


async def until_cancelled(d: Run, coro: Any, *, keep_finished: bool = False) -> Any:
    """Await ``coro`` in this task, stopping it when the cancel token fires (-> ``RunCancelled``).

    The token's callback cancels the current task (as ``asyncio.timeout`` does) and the
    ``CancelledError`` it causes is turned back into ``RunCancelled``; a cancellation from
    outside stays a ``CancelledError``. No task per call, and (but for a tool call) no
    callback for a call that finishes without waiting: a token fired meanwhile is checked
    when it returns.

    With ``keep_finished`` (a tool call) a ``coro`` that finished although the token fired
    returns its result, and the caller checks the token after keeping it; a token fired from
    another thread (a sync tool stopping its own run) then lets the call finish.
    """
    token = d.cancel_token
    if token.cancelled:
        coro.close()
        token.check()
    waiting = _InContext(coro, token, keep_finished)
    if keep_finished:  # a sync tool may fire the token on its thread before the call waits:
        waiting.arm()  # that must reach this callback, which lets the call finish
    try:
        try:
            result = await waiting
        except asyncio.CancelledError:
            stop = waiting.stop
            if stop is not None:
                stop.done = True
                if stop.cancelled and stop.ours():
                    token.check()
            raise
        stop = waiting.stop
        if stop is None:  # it never waited: the token can only have fired while it ran
            if token.cancelled and not keep_finished:
                token.check()
            return result
        stop.done = True
        if stop.cancelled:  # cancelled during the call's last step: take that cancel here
            try:
                await asyncio.sleep(0)
            except asyncio.CancelledError:
                pass
            if not stop.ours():
                raise asyncio.CancelledError
        if stop.fired and not keep_finished:
            token.check()
        return result
    finally:
        waiting.disarm()


class _InContext:
    """Await a coroutine in a copy of the current context, as a task of its own would run
    it: context variables it sets (a lease it takes, a span it opens) stay its own. Before
    the coroutine first waits, the token gets a callback that cancels the awaiting task."""

    __slots__ = ("armed", "context", "coro", "keep", "remove", "stop", "token")

    def __init__(self, coro: Any, token: CancelToken, keep: bool) -> None:
        self.coro = coro
        self.context = contextvars.copy_context()
        self.token = token
        self.keep = keep
        self.armed = False
        self.stop: _Stop | None = None
        self.remove: Callable[[], None] | None = None

    def arm(self) -> None:
        self.armed = True
        task = asyncio.current_task()
        if task is not None:  # not in a task (cannot happen under asyncio.run): nothing to stop
            self.stop = stop = _Stop(task, self.keep)
            self.remove = self.token.add_callback(stop.fire)

    def disarm(self) -> None:
        if self.stop is not None:
            self.stop.done = True
        if self.remove is not None:
            self.remove()
            self.remove = None

    def __await__(self) -> Generator[Any, Any, Any]:
        run, coro = self.context.run, self.coro
        send, throw = coro.send, coro.throw
        value: Any = None
        error: BaseException | None = None
        while True:
            try:
                step = run(send, value) if error is None else run(throw, error)
            except StopIteration as done:
                return done.value
            if not self.armed:
                self.arm()
            try:
                value, error = (yield step), None
            except GeneratorExit:
                run(coro.close)
                raise
            except BaseException as exc:  # thrown in by the task (a cancellation): pass it on
                value, error = None, exc


def _nothing() -> None:
    pass


class _Stop:
    """Cancellation of one call running in ``task``, asked for by the cancel token."""

    __slots__ = ("before", "cancelled", "done", "fired", "keep", "loop", "task")

    def __init__(self, task: asyncio.Task[Any], keep_finished: bool) -> None:
        self.task = task
        self.keep = keep_finished
        self.loop = task.get_loop()
        cancelling = getattr(task, "cancelling", None)  # Python 3.11+
        self.before = cancelling() if cancelling is not None else 0
        self.fired = self.cancelled = self.done = False

    def fire(self) -> None:
        """The token's callback (on the loop, or on a sync tool's thread)."""
        if self.fired:
            return
        self.fired = True
        if asyncio._get_running_loop() is self.loop:  # on the loop's own thread
            self.cancel()
        elif self.keep:
            self.loop.call_soon_threadsafe(_nothing)  # wake the loop; the call finishes first
        else:
            self.loop.call_soon_threadsafe(self.cancel)

    def cancel(self) -> None:
        if not self.done and not self.cancelled:
            self.cancelled = True
            self.task.cancel()

    def ours(self) -> bool:
        """Take back the token's cancel; whether no one else cancelled the task too."""
        if not hasattr(self.task, "uncancel"):
            return True
        left: int = self.task.uncancel()
        return left <= self.before
