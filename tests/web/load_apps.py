"""Agents for the load tests (``tests.web.load_apps:NAME`` for ``--app``): a chat whose run
waits at a gate and then says a lot, and a chat that answers at once."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

from lovia import Agent, tool
from lovia.testing import ScriptedProvider, call, text
from lovia.transcript import FinishDelta, TextDelta, UsageDelta
from lovia.usage import Usage


@tool
def gate() -> str:
    """Wait until the file LOVIA_TEST_GATE names exists (the test opens the gate; the tool
    runs on a thread)."""
    path = Path(os.environ.get("LOVIA_TEST_GATE", "gate"))
    while not path.exists():
        time.sleep(0.05)
    return "open"


@tool(needs_approval=True)
def launch(target: str) -> str:
    """Launch at ``target`` (needs a person's approval)."""
    return f"launched at {target}"


class Talker:
    """``wait N``: calls ``gate`` first, then answers with N text deltas (default 200) of
    LOVIA_TEST_CHUNK_SIZE characters (default 4096) each. ``park``: calls ``gate``, then
    ``launch`` (which waits for approval). Anything else: ``echo: <message>`` at once.
    Stateless."""

    name = "talker"
    model = "talker"
    supports_json_schema = False

    async def stream(self, entries: Any, **kwargs: Any) -> Any:
        users = [e.text for e in entries if e.type == "input" and e.role == "user"]
        last = users[-1] if users else ""
        waited = entries and entries[-1].type == "tool_result"
        if "wait" in last and waited:
            words = last.split()
            chunks = int(words[-1]) if words[-1].isdigit() else 200
            size = int(os.environ.get("LOVIA_TEST_CHUNK_SIZE", "4096"))
            for n in range(chunks):
                yield TextDelta(chr(ord("a") + n % 26) * size)
                await asyncio.sleep(0)
            yield UsageDelta(Usage(1, 1))
            yield FinishDelta(None)
            return
        turn = None
        if "park" in last and waited:
            results = sum(e.type == "tool_result" for e in entries)
            launch = call("launch", {"target": "moon"}, call_id="call_0")
            turn = launch if results == 1 else text("launched")
        if ("wait" in last or "park" in last) and not waited:
            turn = call("gate", {}, call_id=f"call_gate_{len(entries)}")
        async for delta in ScriptedProvider([turn or text(f"echo: {last}")]).stream(entries):
            yield delta


talking = {"talker": Agent("talker", model=Talker(), tools=[gate, launch])}
"""Waits at the gate then talks at length (``wait``), or echoes at once (anything else)."""
