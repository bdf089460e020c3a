"""Small helpers shared by the contract tests (public API only)."""

from __future__ import annotations

from typing import Any

from lovia import Runner


async def events_of(agent: Any, input: Any, **kwargs: Any) -> tuple[list[Any], Any]:
    """Stream a run; return (events, handle)."""
    handle = Runner.stream(agent, input, **kwargs)
    events = [e async for e in handle]
    return events, handle


def tool_results(entries: list[Any]) -> list[Any]:
    return [e for e in entries if e.type == "tool_result"]
