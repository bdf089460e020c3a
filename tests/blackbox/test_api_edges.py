"""api.md's promises for arguments that are wrong: misuse is a ``UserError`` with a hint,
and a stream still ends with exactly one terminal event ("the one-terminal-event rule holds
for errors raised before the first turn too")."""

from __future__ import annotations

from typing import Any

import pytest

from lovia import (
    Agent,
    CheckpointOptions,
    InMemoryCheckpointer,
    InMemorySession,
    Runner,
    UserError,
    tool,
)
from lovia.events import RunCompleted, RunFailed
from lovia.testing import ScriptedProvider, call, text


def _agent() -> Agent:
    return Agent("a", model=ScriptedProvider([text("ok")]))


CASES = {
    # found by these tests: an AttributeError, and a stream with no event at all
    "a checkpointer without CheckpointOptions": (_agent, {"checkpoint": InMemoryCheckpointer()}),
    "no agent": (lambda: None, {}),
    "an agent's name instead of the agent": (lambda: "a", {}),
    # already right: kept here so they stay so
    "a session without session_id": (_agent, {"session": InMemorySession()}),
    "a path instead of a session": (_agent, {"session": "chat.db", "session_id": "u"}),
    "max_turns that is not a number": (_agent, {"max_turns": None}),
}


@pytest.mark.parametrize("case", list(CASES))
async def test_misuse_is_a_user_error_with_a_hint(case: str) -> None:
    make, kwargs = CASES[case]
    with pytest.raises(UserError) as caught:
        await Runner.run(make(), "x", **kwargs)
    assert caught.value.hint, case


@pytest.mark.parametrize("case", list(CASES))
async def test_a_stream_of_a_misused_run_is_one_run_failed(case: str) -> None:
    make, kwargs = CASES[case]
    handle = Runner.stream(make(), "x", **kwargs)
    events = [e async for e in handle]
    assert [type(e) for e in events] == [RunFailed], case
    assert isinstance(events[0].error, UserError)
    with pytest.raises(UserError):
        await handle.result()


def test_run_sync_of_a_misused_run_raises_the_same_user_error() -> None:
    with pytest.raises(UserError, match="CheckpointOptions"):
        Runner.run_sync(_agent(), "x", checkpoint=InMemoryCheckpointer())


async def test_a_checkpointer_passed_bare_stores_nothing_and_the_fixed_call_works() -> None:
    cp = InMemoryCheckpointer()
    ran: list[int] = []

    @tool
    def work() -> str:
        """Do the work."""
        ran.append(1)
        return "done"

    model = ScriptedProvider([call("work", {}), text("finished")])
    agent = Agent("a", model=model, tools=[work])
    with pytest.raises(UserError):
        await Runner.run(agent, "go", checkpoint=cp)  # type: ignore[arg-type]
    assert ran == [] and model.calls == [] and await cp.list_runs() == []
    handle = Runner.stream(agent, "go", checkpoint=CheckpointOptions(cp, "job"))
    events = [e async for e in handle]
    assert isinstance(events[-1], RunCompleted) and ran == [1]
    snapshot = await cp.load("job")
    assert snapshot is not None and snapshot.status == "completed"


async def test_events_of_a_tool_turn_come_in_the_documented_order() -> None:
    """RunStarted, TurnStarted(1), MessageCompleted, ToolCallStarted, ToolCallCompleted,
    TurnEnded(1), TurnStarted(2), text deltas, MessageCompleted, TurnEnded(2), RunCompleted;
    hooks see the same sequence."""
    from lovia import AgentHooks

    seen_by_hooks: list[str] = []
    hooks = AgentHooks()

    @hooks.on_any
    def record(event: Any, ctx: Any) -> None:
        seen_by_hooks.append(type(event).__name__)

    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    model = ScriptedProvider([call("add", {"a": 2, "b": 3}), text("5")])
    agent = Agent("a", model=model, tools=[add], hooks=hooks)
    handle = Runner.stream(agent, "2+3?")
    names = [type(e).__name__ async for e in handle]
    assert names == [
        "RunStarted",
        "TurnStarted",
        "MessageCompleted",
        "ToolCallStarted",
        "ToolCallCompleted",
        "TurnEnded",
        "TurnStarted",
        "TextDelta",
        "MessageCompleted",
        "TurnEnded",
        "RunCompleted",
    ]
    assert seen_by_hooks == names
    result = await handle.result()
    assert result.output == "5" and result.turns == 2


async def test_segment_meta_json_cannot_hold_is_refused_by_every_store(stores: Any) -> None:
    """``SQLiteSession`` refused ``meta={"x": object()}`` while ``InMemorySession`` kept it:
    every store refuses it with a hint and stores nothing."""
    from lovia.transcript import InputEntry

    session, _cp = stores
    entries = [InputEntry(role="user", content="hi")]
    for meta in ({"x": object()}, {"nested": [{"when": object()}]}):
        with pytest.raises(UserError) as caught:
            await session.append("s1", entries, run_id="r1", meta=meta)
        assert caught.value.hint and "JSON" in caught.value.message
    assert await session.segments("s1") == [] and await session.list_sessions() == []
    assert (await session.history("s1")).version == 0
    await session.append("s1", entries, run_id="r1", meta={"x": 1})
    with pytest.raises(UserError):  # a stored run_id is no way around it
        await session.append("s1", entries, run_id="r1", meta={"x": object()})
    (stored,) = await session.segments("s1")
    assert stored.meta == {"x": 1} and (await session.history("s1")).version == 1
