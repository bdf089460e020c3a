"""Builders shared by the context-policy tests: tools with big outputs, view checks."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

from lovia import ContextOverflowError, tool
from lovia.events import RunEvent
from lovia.messages import Message
from lovia.testing import ScriptedProvider as _ScriptedProvider
from lovia.transcript import UsageDelta
from lovia.usage import Usage


def page(n: int, chars: int) -> str:
    """A deterministic, distinct tool output of exactly ``chars`` characters."""
    unit = f"page {n} line: the quick brown fox jumps over the lazy dog. "
    return (unit * (chars // len(unit) + 1))[:chars]


def fetch_tool(chars: int, runs: list[int] | None = None) -> Any:
    """A ``fetch(n)`` tool returning ``page(n, chars)``; appends ``n`` to ``runs``. Async, so
    the fetches of one turn finish (and are stored) in the order the model asked: the tests
    name which result is the newest (sync tools run on threads and may finish in any order)."""

    @tool
    async def fetch(n: int) -> str:
        """Fetch page n."""
        if runs is not None:
            runs.append(n)
        return page(n, chars)

    return fetch


class ScriptedProvider(_ScriptedProvider):
    """A scripted model that reports usage the way a real one does: about one token per
    four characters of prompt (lovia.testing's reports 1 + 1), so a policy that calibrates
    its estimate on reported usage sees realistic figures."""

    async def stream(self, entries: Sequence[Any], **kwargs: Any) -> AsyncIterator[Any]:
        async for delta in super().stream(entries, **kwargs):
            if isinstance(delta, UsageDelta):
                prompt = sum(len(m.text) for m in self.calls[-1])
                delta = UsageDelta(Usage(prompt // 4 + 1, delta.usage.output_tokens))
            yield delta


def tool_messages(messages: list[Message]) -> list[Message]:
    return [m for m in messages if m.role == "tool"]


def assert_paired(messages: list[Message]) -> None:
    """Every tool message answers a call made earlier in the view, and every call is answered."""
    open_calls: list[str] = []
    for m in messages:
        for c in m.tool_calls or ():
            open_calls.append(c.id)
        if m.role == "tool":
            assert m.tool_call_id in open_calls, f"result without its call: {m}"
            open_calls.remove(m.tool_call_id)
    assert open_calls == [], f"calls without results: {open_calls}"


def dumped(messages: list[Message]) -> list[str]:
    return [json.dumps(dataclasses.asdict(m), sort_keys=True, ensure_ascii=False) for m in messages]


def of_type(events: Sequence[RunEvent], name: str) -> list[RunEvent]:
    return [e for e in events if e.type == name]


class RefusingProvider:
    """Wraps a ScriptedProvider and refuses the first ``refusals`` calls as too long."""

    name = "refusing"
    model = "refusing"
    supports_json_schema = True

    def __init__(self, inner: ScriptedProvider, refusals: int) -> None:
        self.inner = inner
        self.refusals = refusals
        self.refused_sizes: list[int] = []

    async def stream(self, entries: Sequence[Any], **kwargs: Any) -> AsyncIterator[Any]:
        if self.refusals > 0:
            self.refusals -= 1
            self.refused_sizes.append(sum(len(json.dumps(e.model_dump())) for e in entries))
            raise ContextOverflowError("prompt is too long for this model")
        async for delta in self.inner.stream(entries, **kwargs):
            yield delta


def view_size(messages: list[Message]) -> int:
    return sum(len(json.dumps(dataclasses.asdict(m))) for m in messages)
