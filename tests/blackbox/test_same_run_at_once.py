"""One run id submitted by several tasks at once, on every store: the model and the tool run
once, every caller gets the same answer, and the session holds one segment, from the input of
the submission that ran (the others replay it and their input is ignored, as the page says)."""

from __future__ import annotations

import asyncio
from typing import Any

from lovia import Agent, CheckpointOptions, Runner, tool
from lovia.testing import ScriptedProvider, call, text


async def test_six_submissions_of_one_run_at_once_run_it_once(stores: Any) -> None:
    session, cp = stores
    ran: list[int] = []
    asked: list[int] = []

    @tool
    async def work() -> str:
        """Slow work, so the submissions overlap."""
        ran.append(1)
        await asyncio.sleep(0.3)
        return "worked"

    def model(messages: list[Any]) -> Any:
        asked.append(1)
        return call("work", {}) if len(asked) == 1 else text("done")

    agent = Agent("a", model=ScriptedProvider([model] * 12), tools=[work])

    async def submit(i: int) -> str:
        result = await Runner.run(
            agent,
            f"input {i}",
            session=session,
            session_id="u",
            checkpoint=CheckpointOptions(cp, "same"),
        )
        return str(result.output)

    answers = await asyncio.gather(*[submit(i) for i in range(6)])
    assert answers == ["done"] * 6
    assert ran == [1] and len(asked) == 2
    (segment,) = await session.segments("u")
    assert segment.run_id == "same"
    assert [e.type for e in segment.entries] == [
        "input",
        "tool_call",
        "tool_result",
        "assistant_text",
    ]
    assert segment.entries[0].content.startswith("input ")
    snapshot = await cp.load("same")
    assert snapshot is not None and snapshot.status == "completed"
    assert snapshot.entries == segment.entries
