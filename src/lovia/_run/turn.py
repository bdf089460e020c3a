"""One model turn: the context view (policy, plugins' injected views), the model call under
its span (stopped at once when the run is cancelled), its usage added to the run state."""

from __future__ import annotations

import asyncio
import inspect
from typing import TYPE_CHECKING, Any

from .. import events as ev
from ..context.policy import ContextRequest, prepare_view, shrank_enough
from ..errors import ContextOverflowError
from ..tracing import model_call_span, record_model_usage
from ..transcript import TranscriptEntry, to_entries
from .model import stream_turn

if TYPE_CHECKING:
    from .loop import RunDriver

__all__ = ["model_turn", "until_cancelled"]


async def model_turn(d: RunDriver) -> list[TranscriptEntry]:
    state = d.state
    agent = state.agent
    provider = d.provider(agent)
    policy = d.policy(agent)
    tooling = d.tooling(agent)
    attempt = 0
    refused: tuple[list[TranscriptEntry], ContextOverflowError] | None = None
    while True:
        view = await prepare_view(
            policy,
            ContextRequest(
                entries=[*state.system_entries, *state.history, *state.entries],
                state=state.context_state,
                provider=provider,
                reported_input_tokens=state.reported_input_tokens,
                attempt=attempt,
                tools=tuple(tooling.by_name.values()),
            ),
        )
        state.context_state = view.state
        if view.usage is not None:  # the policy's own model calls count in the run's usage
            state.usage = state.usage + view.usage
        if refused is not None and not shrank_enough(refused[0], view.entries):
            raise refused[1]  # the same view again would be refused again
        entries = await _inject_views(d, view.entries)
        if view.compacted is not None:
            await d.emit(_compaction_seen(d, view.compacted))
        model = getattr(provider, "model", None)
        try:
            with model_call_span(
                d.tracer,
                model=model,
                turn=state.turn,
                provider=getattr(provider, "name", None),
            ) as span:
                turn = await until_cancelled(
                    d,
                    stream_turn(
                        provider,
                        entries,
                        tools=tooling.specs,
                        agent=agent,
                        output_type=d.output_type(agent),
                        retry=d.o.retry or agent.retry,
                        emit=d.emit,
                        deltas=d.emitter.listening,
                    ),
                )
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
            attempt, refused = 1, (view.entries, exc)
            continue
        state.usage = state.usage + turn.usage
        if d.o.parent_usage is not None:
            d.o.parent_usage.add(turn.usage)
        state.reported_input_tokens = turn.usage.input_tokens or None
        state.finish_reason = turn.finish_reason
        result: list[TranscriptEntry] = turn.entries
        return result


def _compaction_seen(d: RunDriver, event: ev.ContextCompacted) -> ev.ContextCompacted:
    """Name the session on the event; its notice goes into the run's segment meta."""
    if event.session_id is None:
        event.session_id = d.o.session_id
    if event.notice is not None:
        d.state.context_notice = event.notice.to_dict()
    return event


async def _inject_views(d: RunDriver, entries: list[TranscriptEntry]) -> list[TranscriptEntry]:
    extra: list[TranscriptEntry] = []
    for inst in d.kit.plugin_instances(d.state.agent):
        for injector in inst.view_injectors:
            got = injector(d.ctx)
            if inspect.isawaitable(got):
                got = await got
            if got:
                extra.extend(to_entries(got))
    return [*entries, *extra] if extra else entries


async def until_cancelled(d: RunDriver, coro: Any) -> Any:
    """Await ``coro``, stopping it when the cancel token fires (-> ``RunCancelled``)."""
    token = d.cancel_token
    if token.cancelled:
        coro.close()
        token.check()
    task = asyncio.ensure_future(coro)
    remove = token.add_callback(task.cancel)
    try:
        return await task
    except asyncio.CancelledError:
        if token.cancelled and task.cancelled():
            current = asyncio.current_task()
            if current is None or not getattr(current, "cancelling", lambda: 0)():
                token.check()
        raise
    finally:
        remove()
