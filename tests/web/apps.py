"""Agents the web and CLI tests serve (importable as ``tests.web.apps:NAME`` for --app)."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from lovia import Agent, tool
from lovia.messages import AssistantTurn, Message
from lovia.testing import ScriptedProvider, call, text


@tool
async def block(note: str = "") -> str:
    """Wait a long time when LOVIA_TEST_BLOCK is set (so a test can kill the server)."""
    if os.environ.get("LOVIA_TEST_BLOCK"):
        await asyncio.sleep(600)
    return f"unblocked {note}".strip()


def _block_then_answer(messages: list[Message]) -> AssistantTurn:
    last = messages[-1]
    if last.role == "tool":
        return text(f"finished after {last.content}")
    return call("block", {"note": "once"}, call_id=f"call_block_{len(messages)}")


class Stateless:
    """A provider that answers every call with ``turn(messages)`` (wraps a fresh
    ``ScriptedProvider`` per call, so it never runs dry and keeps no state)."""

    name = "stateless"
    model = "stateless"
    supports_json_schema = False

    def __init__(self, turn: Any) -> None:
        self.turn = turn

    async def stream(self, entries: Any, **kwargs: Any) -> Any:
        async for delta in ScriptedProvider([self.turn]).stream(entries, **kwargs):
            yield delta


blocking = Agent("blocker", model=Stateless(_block_then_answer), tools=[block])
"""Calls ``block`` once, then answers; stateless, so a new process can resume it."""

agents = {"blocker": blocking}
