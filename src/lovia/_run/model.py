"""One model call: stream deltas from the provider, assemble the turn's entries, retry."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from types import AsyncGeneratorType
from typing import TYPE_CHECKING, Any, NamedTuple

from pydantic_core import PydanticSerializationError

from .. import events as ev
from ..errors import ContextOverflowError, LoviaError, ProviderError
from ..output import output_schema
from ..providers.base import Provider, ToolSpec
from ..reliability import transport_failure
from ..settings import RetryPolicy
from ..transcript import (
    AssistantTextEntry,
    EntryCompletedDelta,
    FinishDelta,
    ReasoningDelta,
    ReasoningEntry,
    TextDelta,
    ToolCallDelta,
    ToolCallEntry,
    TranscriptEntry,
    UsageDelta,
    entries_to_json,
    entry_from_dict,
    entry_to_dict,
)
from ..usage import Usage

if TYPE_CHECKING:
    from ..agent import Agent

__all__ = ["ModelTurn", "TurnAssembler", "stream_turn"]

_LOOP_LOG = logging.getLogger("lovia.runtime.loop")

log = logging.getLogger("lovia.model")
Emit = Callable[[ev.Event], Awaitable[None]]


class ModelTurn(NamedTuple):
    entries: list[TranscriptEntry]
    usage: Usage
    finish_reason: str | None


class TurnAssembler:
    """Builds a turn's entries from deltas: whole entries win, else fragments are joined."""

    __slots__ = ("calls", "completed", "finish_reason", "reasoning", "text", "usage")

    def __init__(self) -> None:
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: dict[int, list[str]] = {}
        self.completed: list[TranscriptEntry] = []
        self.usage = _NO_USAGE  # replaced (never changed in place) when usage arrives
        self.finish_reason: str | None = None

    def add(self, delta: Any) -> None:
        kind = type(delta)
        if kind is TextDelta:
            self.text.append(delta.text)
        elif kind is EntryCompletedDelta:
            self.completed.append(delta.entry)
        elif kind is UsageDelta:
            self.usage = delta.usage  # the call's totals so far: the last one counts
        elif kind is FinishDelta:
            self.finish_reason = delta.reason
        elif kind is ToolCallDelta:
            slot = self.calls.setdefault(delta.index, ["", "", ""])
            if delta.call_id:
                slot[0] = delta.call_id
            if delta.name:
                slot[1] += delta.name
            slot[2] += delta.arguments
        elif kind is ReasoningDelta:
            self.reasoning.append(delta.text)
        else:
            raise ProviderError(
                f"the provider yielded {kind.__name__}, which is not a model delta",
                hint="yield deltas from lovia.transcript (TextDelta, ToolCallDelta, ...)",
            )

    def entries(self) -> list[TranscriptEntry]:
        """Whole entries of a kind win over that kind's fragments; a kind the provider sent
        only as fragments (text after a whole reasoning entry, say) is joined from them."""
        done = self.completed
        if not done and not self.reasoning:  # the common turn: text and calls as fragments
            return self._joined()
        kinds = {type(e) for e in done}
        joined: list[TranscriptEntry] = []
        if self.reasoning and ReasoningEntry not in kinds:
            joined.append(ReasoningEntry(content="".join(self.reasoning)))
        if self.text and AssistantTextEntry not in kinds:
            joined.append(AssistantTextEntry(content="".join(self.text)))
        if ToolCallEntry not in kinds:
            for index in sorted(self.calls):
                call_id, name, arguments = self.calls[index]
                if not name:
                    raise ProviderError(f"the model sent a tool call (index {index}) with no name")
                joined.append(
                    ToolCallEntry(
                        call_id=call_id or f"call_{index}", name=name, arguments=arguments
                    )
                )
        if not joined:
            return list(done)
        if not done:
            return joined
        order = (ReasoningEntry, AssistantTextEntry, ToolCallEntry)
        return sorted([*done, *joined], key=lambda e: order.index(type(e)))

    def _joined(self) -> list[TranscriptEntry]:
        """``entries()`` of a turn with no whole entries and no reasoning."""
        out: list[TranscriptEntry] = []
        if self.text:
            out.append(AssistantTextEntry(content="".join(self.text)))
        calls = self.calls
        for index in sorted(calls) if len(calls) > 1 else calls:
            call_id, name, arguments = calls[index]
            if not name:
                raise ProviderError(f"the model sent a tool call (index {index}) with no name")
            out.append(
                ToolCallEntry(call_id=call_id or f"call_{index}", name=name, arguments=arguments)
            )
        return out


_NO_USAGE = Usage()
"""The usage of a turn whose provider reported none (shared: nothing changes a ``Usage`` in
place here)."""


async def stream_turn(
    provider: Provider,
    view: Sequence[TranscriptEntry],
    *,
    tools: Sequence[ToolSpec],
    agent: Agent,
    output_type: Any = str,
    retry: RetryPolicy | None = None,
    emit: Emit | None = None,
    deltas: bool = False,
) -> ModelTurn:
    """Call the model once (retrying per ``retry``) and return the whole turn.

    With ``deltas`` each text/reasoning delta is emitted as it arrives. A transient failure
    is announced with ``ModelRetrying`` before the backoff; one that strikes after text was
    streamed also emits ``OutputDiscarded`` once the backoff is over, as the next attempt
    starts (with ``restart_on_partial``), or ends the run.
    """
    attempt = 1
    response_format = _response_format(output_type, provider) if output_type is not str else None
    while True:
        emitted = [False]
        started = time.monotonic()
        if _LOOP_LOG.isEnabledFor(logging.INFO):
            model_started(agent, provider)
        try:
            turn = await _once(
                provider, view, tools, agent, response_format, emit if deltas else None, emitted
            )
            if _LOOP_LOG.isEnabledFor(logging.INFO):
                model_done(turn.usage, turn.finish_reason, turn.entries, started)
            return turn
        except ContextOverflowError:
            raise
        except LoviaError as exc:
            if retry is None or attempt >= retry.max_attempts or not retry.retry_on(exc):
                raise
            if emitted[0] and not retry.restart_on_partial:
                raise
            delay = retry.delay(attempt)
            log.warning("model call failed (%s); retry %d in %.2fs", exc, attempt, delay)
            if emit is not None:
                await emit(ev.ModelRetrying(exc, attempt, retry.max_attempts, delay))
            await retry.sleep(delay)
            if emit is not None and emitted[0]:
                # at the next attempt's start, as 0.9.119: it also ends the retry notice
                await emit(ev.OutputDiscarded())
            attempt += 1


async def _once(
    provider: Provider,
    view: Sequence[TranscriptEntry],
    tools: Sequence[ToolSpec],
    agent: Agent,
    response_format: dict[str, Any] | None,
    on_delta: Emit | None,
    emitted: list[bool],
) -> ModelTurn:
    asm = TurnAssembler()
    stream = provider.stream(
        view,
        tools=tools or None,
        response_format=response_format,
        settings=agent.settings,
    )
    text = asm.text
    try:
        async for delta in stream:
            if on_delta is None and type(delta) is TextDelta:  # the common delta, inlined
                text.append(delta.text)
                emitted[0] = True
                continue
            asm.add(delta)
            if not emitted[0] and isinstance(delta, (TextDelta, ReasoningDelta)):
                emitted[0] = True
            if on_delta is not None:
                if isinstance(delta, TextDelta):
                    emitted[0] = True
                    await on_delta(ev.TextDelta(delta.text))
                elif isinstance(delta, ReasoningDelta):
                    emitted[0] = True
                    await on_delta(ev.ReasoningDelta(delta.text))
    except LoviaError:
        raise
    except (AssertionError, asyncio.CancelledError):
        raise
    except Exception as exc:
        raise ProviderError(
            f"model call to {getattr(provider, 'name', '?')}:{getattr(provider, 'model', '?')} "
            f"failed: {type(exc).__name__}: {exc}",
            # a dropped connection is worth another try (True, as 0.9.119 marked it); a bug is not
            retryable=transport_failure(exc),
        ) from exc
    finally:
        aclose = getattr(stream, "aclose", None)
        if aclose is not None and not (type(stream) is AsyncGeneratorType and not stream.ag_frame):
            await aclose()  # (an async generator that ran to its end is closed already)
    return ModelTurn(_storable(asm.entries()), asm.usage, asm.finish_reason)


def _storable(entries: list[TranscriptEntry]) -> list[TranscriptEntry]:
    """``entries`` with lone surrogates escaped (a model may send ``\\ud83d`` alone in its
    JSON): UTF-8 JSON cannot hold them, so the turn's save would fail with a foreign error."""
    for e in entries:
        if not _utf8_safe(e):
            return [entry_from_dict(_escape_surrogates(entry_to_dict(e))) for e in entries]
    return entries


def _utf8_safe(entry: TranscriptEntry) -> bool:
    """Cheap check on the hot path: ASCII strings are fine; only the rest is encoded."""
    for value in entry.__dict__.values():
        if isinstance(value, str):
            if not value.isascii():
                try:
                    value.encode("utf-8")
                except UnicodeEncodeError:
                    return False
        elif isinstance(value, (list, dict)) and value:
            try:
                entries_to_json([entry])
            except PydanticSerializationError:
                return False
    return True


def _escape_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, list):
        return [_escape_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {k: _escape_surrogates(v) for k, v in value.items()}
    return value


def _response_format(output_type: Any, provider: Provider) -> dict[str, Any] | None:
    if output_type is str or not getattr(provider, "supports_json_schema", False):
        return None
    schema = output_schema(output_type)
    return {"type": "json_schema", "json_schema": {"name": "output", "schema": schema}}


def model_started(agent: Agent, provider: Provider) -> float:
    """Log ``model.start`` (INFO, ``lovia.runtime.loop``); the clock reading for ``model.done``."""
    if _LOOP_LOG.isEnabledFor(logging.INFO):
        model = getattr(provider, "model", None) or getattr(provider, "name", "?")
        _LOOP_LOG.info("model.start: agent=%r model=%s", agent.name, model)
    return time.monotonic()


def model_done(
    usage: Usage, finish: str | None, entries: Sequence[TranscriptEntry], started: float
) -> None:
    """Log ``model.done`` with the call's tokens, finish reason, tool calls and duration."""
    if _LOOP_LOG.isEnabledFor(logging.INFO):
        calls = sum(isinstance(e, ToolCallEntry) for e in entries)
        _LOOP_LOG.info(
            "model.done: tokens=%d(in=%d out=%d) finish=%s tool_calls=%d dur=%.2fs",
            usage.input_tokens + usage.output_tokens,
            usage.input_tokens,
            usage.output_tokens,
            finish,
            calls,
            time.monotonic() - started,
        )
