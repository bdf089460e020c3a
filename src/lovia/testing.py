"""Offline testing: ``ScriptedProvider`` answers model calls from a script.

::

    model = ScriptedProvider([call("add", {"a": 1, "b": 2}), text("3")])
    agent = Agent("calc", model=model, tools=[add])

Each model call takes the next scripted turn and records the prompt it received in
``model.calls`` (chat-format messages). A script item may also be an exception (raised by
that call) or a callable ``(messages) -> turn`` (sync or async) that decides from the prompt.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

from .providers.base import ToolSpec
from .settings import ModelSettings
from .transcript import (
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
)
from .usage import Usage

__all__ = ["ScriptedProvider", "ScriptedTurn", "batch", "call", "text", "to_messages"]


@dataclass(frozen=True)
class ScriptedTurn:
    """One model answer: optional reasoning, optional text, zero or more tool calls."""

    text: str | None = None
    reasoning: str | None = None
    calls: tuple[ToolCallEntry, ...] = field(default_factory=tuple)

    def entries(self) -> list[TranscriptEntry]:
        out: list[TranscriptEntry] = []
        if self.reasoning is not None:
            out.append(ReasoningEntry(content=self.reasoning, provider="scripted"))
        if self.text is not None:
            out.append(AssistantTextEntry(content=self.text))
        out.extend(self.calls)
        return out


ScriptItem = Union[ScriptedTurn, BaseException, Callable[[list[dict[str, Any]]], Any]]  # noqa: UP007


def text(content: str, *, reasoning: str | None = None) -> ScriptedTurn:
    """A turn that answers with ``content`` (and optional reasoning)."""
    return ScriptedTurn(text=content, reasoning=reasoning)


def _call_entry(name: str, args: Any, call_id: str | None) -> ToolCallEntry:
    arguments = args if isinstance(args, str) else json.dumps(args)
    return ToolCallEntry(call_id=call_id or f"call_{name}", name=name, arguments=arguments)


def call(name: str, args: Any = None, *, call_id: str | None = None) -> ScriptedTurn:
    """A turn with one tool call (default id ``call_<name>``); ``args`` a dict or JSON text."""
    return ScriptedTurn(calls=(_call_entry(name, {} if args is None else args, call_id),))


def batch(*calls: tuple[Any, ...]) -> ScriptedTurn:
    """A turn with several tool calls: ``batch(("a", {...}), ("b", {...}, "id_b"))``.

    Calls without an id get ``call_<name>``, then ``call_<name>_2``... for repeats.
    """
    entries: list[ToolCallEntry] = []
    seen: dict[str, int] = {}
    for item in calls:
        name, args, *rest = item
        call_id = rest[0] if rest else None
        if call_id is None:
            n = seen[name] = seen.get(name, 0) + 1
            call_id = f"call_{name}" if n == 1 else f"call_{name}_{n}"
        entries.append(_call_entry(name, args, call_id))
    return ScriptedTurn(calls=tuple(entries))


class ScriptedProvider:
    """A ``Provider`` that plays a script; raises ``AssertionError`` when it runs dry."""

    name = "scripted"
    supports_json_schema = True

    def __init__(self, script: Iterable[ScriptItem] = (), *, model: str = "scripted") -> None:
        self.script: list[ScriptItem] = list(script)
        self.model = model
        self.calls: list[list[dict[str, Any]]] = []
        self.tools: list[list[ToolSpec]] = []
        self.settings: list[ModelSettings | None] = []
        self._next = 0

    @property
    def remaining(self) -> int:
        """How many scripted turns are left."""
        return len(self.script) - self._next

    def extend(self, items: Iterable[ScriptItem]) -> None:
        self.script.extend(items)

    async def stream(
        self,
        entries: Sequence[TranscriptEntry],
        *,
        tools: Sequence[ToolSpec] | None = None,
        response_format: dict[str, Any] | None = None,
        settings: ModelSettings | None = None,
    ) -> AsyncIterator[ModelDelta]:
        messages = to_messages(entries)
        self.calls.append(messages)
        self.tools.append(list(tools or ()))
        self.settings.append(settings)
        if self._next >= len(self.script):
            raise AssertionError(
                f"ScriptedProvider ran out of script after {len(self.script)} turn(s); "
                f"the last prompt ended with {messages[-1] if messages else None!r}"
            )
        item = self.script[self._next]
        self._next += 1
        if isinstance(item, BaseException):
            raise item
        turn = item if isinstance(item, ScriptedTurn) else item(messages)
        if inspect.isawaitable(turn):  # an async callable
            turn = await turn
        if isinstance(turn, str):
            turn = ScriptedTurn(text=turn)
        if not isinstance(turn, ScriptedTurn):
            raise AssertionError(f"a script callable returned {turn!r}, not a scripted turn")
        if turn.reasoning is not None:
            yield ReasoningDelta(turn.reasoning)
        if turn.text is not None:
            yield TextDelta(turn.text)
        for index, c in enumerate(turn.calls):
            yield ToolCallDelta(index, c.call_id, c.name, c.arguments)
        for entry in turn.entries():
            yield EntryCompletedDelta(entry)
        prompt_chars = sum(len(str(m.get("content") or "")) for m in messages)
        out_chars = len(turn.text or "") + sum(len(c.arguments) for c in turn.calls)
        yield UsageDelta(
            Usage(input_tokens=prompt_chars // 4 + 1, output_tokens=out_chars // 4 + 1)
        )
        yield FinishDelta("tool_calls" if turn.calls else "stop")


def to_messages(entries: Sequence[TranscriptEntry]) -> list[dict[str, Any]]:
    """Chat-format messages for ``entries`` (consecutive assistant entries share a message).

    The system message always comes first, once: an empty one when the agent has no
    instructions, so ``calls[i][0]`` is the system message in every prompt.
    """
    out: list[dict[str, Any]] = []
    if not entries or not (isinstance(entries[0], InputEntry) and entries[0].role == "system"):
        out.append({"role": "system", "content": ""})
    for e in entries:
        if isinstance(e, InputEntry):
            out.append({"role": e.role, "content": e.content})
        elif isinstance(e, ToolResultEntry):
            out.append({"role": "tool", "tool_call_id": e.call_id, "content": e.output})
        else:
            last = out[-1] if out and out[-1]["role"] == "assistant" else None
            if last is None:
                last = {"role": "assistant", "content": None}
                out.append(last)
            if isinstance(e, AssistantTextEntry):
                last["content"] = (last["content"] or "") + e.content
            elif isinstance(e, ReasoningEntry):
                last["reasoning"] = (last.get("reasoning") or "") + e.content
            elif isinstance(e, ToolCallEntry):
                last.setdefault("tool_calls", []).append(
                    {"id": e.call_id, "name": e.name, "arguments": e.arguments}
                )
    return out
