"""Session maintenance while a run is answering (S2, S8, S10, C12).

``trim_tool_results`` cuts stored outputs but keeps every run, entry and call id where it was
(S8), so a run that was answering while the session was trimmed answered the same
conversation: its segment is appended when it completes (S2), as lovia 0.9.119 appends it.
A rewind in the meantime undid part of what the run answered, so that run is still refused
with ``SessionConflict``, and so is one that another run overtook.
"""

from __future__ import annotations

from typing import Any

import pytest

from lovia import (
    Agent,
    CheckpointOptions,
    InMemoryCheckpointer,
    Runner,
    SessionConflict,
    ToolResultEntry,
    tool,
)
from lovia.testing import ScriptedProvider, call, text
from tests.stores.backends import session, session_backend

__all__ = ["session", "session_backend"]  # fixtures used by name


@tool
def report(n: int) -> str:
    """A long report."""
    return f"line {n}\n" * 400


def agent(*script: Any) -> Agent:
    return Agent("assistant", instructions="Be terse.", model=ScriptedProvider(list(script)))


async def two_runs(session: Any) -> None:
    for n in (1, 2):
        await Runner.run(
            agent(call("report", {"n": n}), text(f"report {n} read")).clone(tools=[report]),
            f"read report {n}",
            session=session,
            session_id="u1",
        )


async def test_a_trim_while_a_run_answers_keeps_the_runs_answer(session: Any) -> None:
    await two_runs(session)
    trimmed: list[int] = []

    async def trim_meanwhile(messages: Any) -> Any:
        trimmed.append(await session.trim_tool_results("u1", keep_chars=40, keep_runs=1))
        return text("two reports")

    cp = InMemoryCheckpointer()
    result = await Runner.run(
        agent(trim_meanwhile),
        "how many reports?",
        session=session,
        session_id="u1",
        checkpoint=CheckpointOptions(cp, "r3"),
    )

    assert trimmed == [1] and result.output == "two reports"
    segments = await session.segments("u1")
    assert len(segments) == 3 and segments[2].run_id == "r3"
    assert [e.content for e in segments[2].entries] == ["how many reports?", "two reports"]
    first_output = next(e for e in segments[0].entries if isinstance(e, ToolResultEntry)).output
    assert first_output.startswith("line 1\n") and "[lovia: trimmed" in first_output
    snap = await cp.load("r3")
    assert snap is not None and snap.status == "completed"

    replayed = await Runner.run(
        agent(), "ignored", session=session, session_id="u1", checkpoint=CheckpointOptions(cp, "r3")
    )
    assert replayed.output == "two reports"
    assert len(await session.segments("u1")) == 3


async def test_a_rewind_while_a_run_answers_still_refuses_the_runs_answer(session: Any) -> None:
    await two_runs(session)

    async def rewind_meanwhile(messages: Any) -> Any:
        await session.rewind("u1", keep_entries=4)
        return text("two reports")

    cp = InMemoryCheckpointer()
    with pytest.raises(SessionConflict):
        await Runner.run(
            agent(rewind_meanwhile),
            "how many reports?",
            session=session,
            session_id="u1",
            checkpoint=CheckpointOptions(cp, "r3"),
        )
    assert [len(s.entries) for s in await session.segments("u1")] == [4]
    snap = await cp.load("r3")
    assert snap is not None and snap.status == "failed"


async def test_a_run_overtaken_after_a_trim_is_still_refused(session: Any) -> None:
    await two_runs(session)

    async def trim_then_another_run(messages: Any) -> Any:
        await session.trim_tool_results("u1", keep_chars=40, keep_runs=1)
        await Runner.run(agent(text("other")), "someone else", session=session, session_id="u1")
        return text("two reports")

    with pytest.raises(SessionConflict):
        await Runner.run(
            agent(trim_then_another_run),
            "how many reports?",
            session=session,
            session_id="u1",
            checkpoint=CheckpointOptions(InMemoryCheckpointer(), "r3"),
        )
    assert [s.entries[-1].content for s in await session.segments("u1")][2:] == ["other"]
