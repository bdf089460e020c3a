"""Offline testing: ``ScriptedProvider`` answers model calls from a script.

::

    model = ScriptedProvider([call("add", {"a": 1, "b": 2}), text("3")])
    agent = Agent("calc", model=model, tools=[add])

Each model call takes the next scripted turn and records the prompt it received in
``model.calls``: ``calls[i]`` is the list of ``lovia.messages.Message`` of call *i* (the
system message first when the agent has instructions). Text and reasoning stream one
character per delta; every scripted turn reports 1 input and 1 output token and no finish
reason, as lovia 0.9.119's scripted model does.

A script item is an ``AssistantTurn`` (what ``text``, ``call`` and ``batch`` build), an
exception (raised by that call), or a callable ``(messages) -> turn`` (sync or async, may
return a plain string) that decides from the prompt.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Union

from ..errors import UserTypeError
from ..messages import AssistantTurn, Message, ToolCall
from ..providers._render import SMALL_VIEW, BodyCache, Marks
from ..providers.base import ToolSpec
from ..settings import ModelSettings
from ..transcript import (
    AssistantTextEntry,
    EntryCompletedDelta,
    FinishDelta,
    InputEntry,
    ModelDelta,
    ReasoningDelta,
    ReasoningEntry,
    TextDelta,
    ToolCallDelta,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
    UsageDelta,
    call_arguments,
)
from ..usage import Usage

__all__ = [
    "Divergence",
    "RecordedProvider",
    "RetestReport",
    "ScriptedProvider",
    "ScriptedTurn",
    "assert_same_run",
    "batch",
    "call",
    "retest",
    "text",
    "to_messages",
]

_RETEST = ("Divergence", "RecordedProvider", "RetestReport", "assert_same_run", "retest")


def __getattr__(name: str) -> Any:
    """The recorded-run tools (``lovia.testing._retest``), loaded when first used: they
    bring the run loop, which a scripted model alone does not need."""
    if name in _RETEST:
        from . import _retest

        return getattr(_retest, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass
class ScriptedTurn(AssistantTurn):
    """An ``AssistantTurn`` that also streams ``reasoning`` before its text."""

    reasoning: str | None = None


ScriptItem = Union[AssistantTurn, BaseException, Callable[[list[Message]], Any]]  # noqa: UP007


def _usage() -> Usage:
    return Usage(input_tokens=1, output_tokens=1)


def text(content: str, *, reasoning: str | None = None) -> AssistantTurn:
    """A turn that answers with ``content`` (after ``reasoning``, if given)."""
    return ScriptedTurn(content=content, usage=_usage(), reasoning=reasoning)


def _tool_call(name: str, args: Any, call_id: str) -> ToolCall:
    arguments = args if isinstance(args, str) else json.dumps({} if args is None else args)
    return ToolCall(id=call_id, name=name, arguments=arguments)


def call(name: str, args: Any = None, *, call_id: str | None = None) -> AssistantTurn:
    """A turn with one tool call (id ``call_<name>`` unless given); ``args`` a dict or JSON
    text."""
    return AssistantTurn(
        content=None, tool_calls=[_tool_call(name, args, call_id or f"call_{name}")], usage=_usage()
    )


def batch(*specs: tuple[Any, ...]) -> AssistantTurn:
    """A turn with several tool calls: ``batch(("a", {...}), ("b", {...}, "id_b"))``.

    A call without an id gets ``call_<index>_<name>``, so two calls of one tool differ.
    """
    calls = []
    for index, spec in enumerate(specs):
        name, args, *rest = spec
        call_id = rest[0] if rest and rest[0] is not None else f"call_{index}_{name}"
        calls.append(_tool_call(name, args, call_id))
    return AssistantTurn(content=None, tool_calls=calls, usage=_usage())


class _View(tuple):  # type: ignore[type-arg]
    """The entries of a call whose messages nobody has asked for yet."""

    __slots__ = ()


_TEXT_DELTAS: dict[str, TextDelta] = {}
"""One ``TextDelta`` per character seen (deltas are frozen values: sharing them is safe)."""
_MAX_CACHED_DELTAS = 4096
_NO_REASON = FinishDelta(None)


class ScriptedProvider:
    """A ``Provider`` that plays a script; raises ``AssertionError`` when it runs dry.

    Besides ``calls`` it records the tool specs (``tools``) and the settings (``settings``)
    of every call. ``supports_json_schema`` is False, so structured output takes the prompt
    path: the final scripted turn is the JSON text itself.
    """

    name = "scripted"
    supports_json_schema = False

    def __init__(self, script: Iterable[ScriptItem] = (), *, model: str | None = None) -> None:
        if isinstance(script, AssistantTurn | BaseException | str) or callable(script):
            raise UserTypeError(  # was "'ScriptedTurn' object is not iterable"
                f"ScriptedProvider takes a list of turns, got one {type(script).__name__}",
                hint="pass a list even for one turn: ScriptedProvider([text('Done.')])",
            )
        self.script: list[ScriptItem] = list(script)
        self.model = model
        self._calls: list[Any] = []  # a call's messages, or its view until someone looks
        self._unrendered: list[int] = []
        self.tools: list[list[ToolSpec]] = []
        self.settings: list[ModelSettings | None] = []
        self._next = 0

    @property
    def calls(self) -> list[list[Message]]:
        """The prompt of every call so far, as messages (rendered when first asked for)."""
        calls, pending = self._calls, self._unrendered
        if pending:
            for i in pending:
                if i < len(calls) and type(calls[i]) is _View:
                    calls[i] = to_messages(calls[i])
            pending.clear()
        return calls

    @calls.setter
    def calls(self, value: list[list[Message]]) -> None:
        self._calls, self._unrendered = value, []

    @property
    def _script(self) -> list[ScriptItem]:
        """The turns not played yet (0.9.119's tests subclass this provider and read it)."""
        return self.script[self._next :]

    @property
    def remaining(self) -> int:
        """How many scripted turns are left."""
        return len(self.script) - self._next

    def extend(self, items: Iterable[ScriptItem]) -> None:
        """Add turns to the end of the script."""
        self.script.extend(items)

    async def _turn(self, messages: list[Message]) -> AssistantTurn:
        item = self.script[self._next]
        self._next += 1
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, AssistantTurn):
            return item
        if not callable(item):  # was "'str' object is not callable", wrapped as a ProviderError
            raise UserTypeError(
                f"ScriptedProvider: script item {self._next - 1} is not a scripted turn: "
                f"{repr(item)[:60]}",
                hint="script turns with text('...'), call('tool', {...}) or batch(...), an "
                "exception to raise, or a function (messages) -> turn",
            )
        turn = item(list(messages))
        if inspect.isawaitable(turn):  # an async callable
            turn = await turn
        if isinstance(turn, str):
            turn = text(turn)
        if not isinstance(turn, AssistantTurn):
            raise AssertionError(f"a script callable returned {turn!r}, not a scripted turn")
        return turn

    async def stream(
        self,
        entries: Sequence[TranscriptEntry],
        *,
        tools: Sequence[ToolSpec] | None = None,
        response_format: dict[str, Any] | None = None,
        settings: ModelSettings | None = None,
    ) -> AsyncIterator[ModelDelta]:
        upcoming = self.script[self._next] if self._next < len(self.script) else None
        if not callable(upcoming) or isinstance(upcoming, (AssistantTurn, BaseException)):
            # only a callable reads the prompt now: else it is rendered if a test asks for it
            self._unrendered.append(len(self._calls))
            self._calls.append(_View(entries))
            messages: list[Message] = []
        else:
            messages = to_messages(entries)
            self._calls.append(messages)
        self.tools.append(list(tools or ()))
        self.settings.append(settings)
        if self._next >= len(self.script):
            raise AssertionError("ScriptedProvider ran out of canned responses")
        if isinstance(upcoming, AssistantTurn):  # a canned turn: what _turn gives, at once
            self._next += 1
            turn = upcoming
        else:
            turn = await self._turn(messages)
        reasoning = getattr(turn, "reasoning", None)
        if reasoning:
            for ch in reasoning:
                yield ReasoningDelta(ch)
            yield EntryCompletedDelta(ReasoningEntry(content=reasoning, provider=self.name))
        if turn.content:
            deltas = _TEXT_DELTAS
            for ch in turn.content:
                delta = deltas.get(ch)
                if delta is None:
                    delta = TextDelta(ch)
                    if len(deltas) < _MAX_CACHED_DELTAS:
                        deltas[ch] = delta
                yield delta
        for index, c in enumerate(turn.tool_calls):
            yield ToolCallDelta(index, c.id, c.name, c.arguments)
        u = turn.usage
        yield UsageDelta(
            Usage(u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens)
        )
        reason = turn.finish_reason
        yield _NO_REASON if reason is None else FinishDelta(reason)


def _render(
    entries: Sequence[TranscriptEntry], start: int, out: list[Message], marks: Marks
) -> None:
    text: str | None = None
    reasoning: str | None = None
    calls: list[ToolCall] = []
    pending = False
    for i in range(start, len(entries)):
        e = entries[i]
        kind = type(e)
        if kind is InputEntry or kind is ToolResultEntry:
            if pending:  # the assistant message so far ends here
                out.append(
                    Message(role="assistant", content=text, reasoning=reasoning, tool_calls=calls)
                )
                text, reasoning, calls, pending = None, None, [], False
            marks.append((i, len(out)))
            if kind is InputEntry:
                assert isinstance(e, InputEntry)
                content = e.content
                out.append(
                    Message(
                        role=e.role, content=content if isinstance(content, str) else list(content)
                    )
                )
            else:
                assert isinstance(e, ToolResultEntry)
                out.append(Message(role="tool", content=e.output, tool_call_id=e.call_id))
            continue
        if not pending:
            marks.append((i, len(out)))
            pending = True
        if kind is AssistantTextEntry:
            assert isinstance(e, AssistantTextEntry)
            text = e.content if text is None else text + e.content
        elif kind is ToolCallEntry:
            assert isinstance(e, ToolCallEntry)
            calls.append(ToolCall(id=e.call_id, name=e.name, arguments=call_arguments(e.arguments)))
        elif kind is ReasoningEntry:
            assert isinstance(e, ReasoningEntry)
            reasoning = e.content if reasoning is None else reasoning + e.content
    if pending:
        out.append(Message(role="assistant", content=text, reasoning=reasoning, tool_calls=calls))


_MESSAGES: BodyCache[Message] = BodyCache(_render)


def to_messages(entries: Sequence[TranscriptEntry]) -> list[Message]:
    """The chat view of ``entries`` (``lovia.transcript.entries_to_messages``), rendered once
    per entry: a view that extends an earlier one reuses its messages, so treat them as
    read-only."""
    if len(entries) < SMALL_VIEW:  # a short view: one pass, nothing worth caching
        out: list[Message] = []
        _render(entries, 0, out, [])
        return out
    return _MESSAGES.render(entries)
