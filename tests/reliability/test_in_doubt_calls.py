"""In-doubt tool calls: the head records which calls started, and ``@tool(on_resume=...)``
decides what a resumed run does with a dangling one (C10, E2; docs/guarantees.md)."""

from __future__ import annotations

import asyncio
import dataclasses
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from lovia import (
    Agent,
    AgentHooks,
    CheckpointOptions,
    InMemoryCheckpointer,
    RunCancelled,
    RunContext,
    Runner,
    SQLiteCheckpointer,
    ToolCallEntry,
    ToolResultEntry,
    UserError,
    tool,
)
from lovia.events import MessageCompleted, RunEvent
from lovia.testing import ScriptedProvider, batch, call, text


class Payments:
    """A pretend payment provider: counts charges; the first charge "crashes" the run."""

    def __init__(self, *, crash: bool = True) -> None:
        self.charged: list[str] = []
        self.crash = crash

    def tool(self, on_resume: Any) -> Any:
        @tool(parallel=False, on_resume=on_resume)
        def charge(ctx: RunContext[Any], amount: int) -> str:
            """Charge the card."""
            self.charged.append(f"{ctx.run_id}:{amount}")
            if self.crash:
                self.crash = False
                raise RunCancelled("the worker died inside charge")  # its call stays dangling
            return f"charged {amount}"

        return charge


def _agent(tools: list[Any], script: list[Any], **kwargs: Any) -> tuple[Agent, ScriptedProvider]:
    model = ScriptedProvider(script)
    return Agent("payer", model=model, tools=tools, **kwargs), model


async def _interrupted(cp: InMemoryCheckpointer, tools: list[Any], first: Any) -> None:
    agent, _ = _agent(tools, [first])
    with pytest.raises(RunCancelled):
        await Runner.run(agent, "pay", checkpoint=CheckpointOptions(cp, "r1"))


async def test_a_started_call_is_recorded_in_the_head_before_its_tool_runs() -> None:
    """The head names the in-doubt call while its tool runs and after the run stops in it."""
    cp = InMemoryCheckpointer()
    seen: list[tuple[str, ...]] = []

    @tool(on_resume="fail")
    async def probe(ctx: RunContext[Any]) -> str:
        """Look at the stored head."""
        snap = await cp.load(ctx.run_id)
        assert snap is not None
        seen.append(snap.started_calls)
        raise RunCancelled("stop here")

    await _interrupted(cp, [probe], call("probe", {}, call_id="p1"))
    assert seen == [("p1",)]
    snap = await cp.load("r1")
    assert snap is not None and snap.started_calls == ("p1",)
    assert snap.status == "interrupted"


async def test_resuming_a_started_fail_tool_stops_with_an_error_naming_the_call() -> None:
    """on_resume='fail': the resume raises UserError naming the call; the tool is not run."""
    cp = InMemoryCheckpointer()
    pay = Payments()
    await _interrupted(cp, [pay.tool("fail")], call("charge", {"amount": 5}, call_id="pay-1"))
    before = await cp.load("r1")
    agent, model = _agent([pay.tool("fail")], [text("never")])
    with pytest.raises(UserError, match="pay-1") as info:
        await Runner.run(agent, "pay", checkpoint=CheckpointOptions(cp, "r1"))
    assert info.value.hint
    assert pay.charged == ["r1:5"]
    assert model.calls == []
    after = await cp.load("r1")
    assert after is not None and before is not None
    assert after.entries == before.entries
    assert after.status == "failed" and after.error is not None
    assert "pay-1" in after.error["message"]


async def test_a_fail_tool_that_never_started_runs_on_resume() -> None:
    """A call saved with the model turn but stopped before its tool began is not in doubt."""
    cp = InMemoryCheckpointer()
    pay = Payments(crash=False)
    hooks = AgentHooks()

    @hooks.on(MessageCompleted)
    def stop(event: RunEvent, ctx: RunContext[Any]) -> None:
        ctx.cancel_token.cancel("stopped between the model turn and the tools")

    agent, _ = _agent([pay.tool("fail")], [call("charge", {"amount": 7})], hooks=hooks)
    with pytest.raises(RunCancelled):
        await Runner.run(agent, "pay", checkpoint=CheckpointOptions(cp, "r1"))
    snap = await cp.load("r1")
    assert snap is not None and snap.started_calls == ()
    assert pay.charged == []
    agent, _ = _agent([pay.tool("fail")], [text("paid")])
    result = await Runner.run(agent, "pay", checkpoint=CheckpointOptions(cp, "r1"))
    assert result.output == "paid"
    assert pay.charged == ["r1:7"]


async def test_the_default_reruns_a_dangling_call_at_least_once() -> None:
    """on_resume='rerun' (the default, E2): the dangling call runs again."""
    cp = InMemoryCheckpointer()
    pay = Payments()
    await _interrupted(cp, [pay.tool("rerun")], call("charge", {"amount": 3}))
    agent, _ = _agent([pay.tool("rerun")], [text("paid")])
    result = await Runner.run(agent, "pay", checkpoint=CheckpointOptions(cp, "r1"))
    assert result.output == "paid"
    assert pay.charged == ["r1:3", "r1:3"]


async def test_an_on_resume_callable_can_record_the_outcome_instead_of_running() -> None:
    """A callable (sync or async) gets the call and the context; a string it returns becomes
    the call's result and the tool does not run again."""
    cp = InMemoryCheckpointer()
    pay = Payments()
    asked: list[tuple[str, str]] = []

    async def ask_provider(c: ToolCallEntry, ctx: RunContext[Any]) -> str:
        asked.append((c.call_id, ctx.run_id))
        return "charged 9 (confirmed by the provider)"

    await _interrupted(cp, [pay.tool(ask_provider)], call("charge", {"amount": 9}, call_id="c9"))
    agent, model = _agent([pay.tool(ask_provider)], [text("paid")])
    result = await Runner.run(agent, "pay", checkpoint=CheckpointOptions(cp, "r1"))
    assert result.output == "paid"
    assert asked == [("c9", "r1")]
    assert pay.charged == ["r1:9"]
    results = [e for e in result.entries if isinstance(e, ToolResultEntry)]
    assert results == [
        ToolResultEntry(
            call_id="c9",
            output="charged 9 (confirmed by the provider)",
            raw="charged 9 (confirmed by the provider)",
        )
    ]
    tool_messages = [m for m in model.calls[0] if m.role == "tool"]
    assert [m.tool_call_id for m in tool_messages] == ["c9"]


async def test_an_on_resume_callable_that_says_rerun_runs_the_call_again() -> None:
    cp = InMemoryCheckpointer()
    pay = Payments()

    def not_found(c: ToolCallEntry, ctx: RunContext[Any]) -> str:
        return "rerun"

    await _interrupted(cp, [pay.tool(not_found)], call("charge", {"amount": 4}))
    agent, _ = _agent([pay.tool(not_found)], [text("paid")])
    await Runner.run(agent, "pay", checkpoint=CheckpointOptions(cp, "r1"))
    assert pay.charged == ["r1:4", "r1:4"]
    snap = await cp.load("r1")
    assert snap is not None and snap.status == "completed"
    assert snap.started_calls == ()


async def test_a_rerun_call_is_not_saved_as_started_and_still_runs_again() -> None:
    """Only a batch with a tool whose ``on_resume`` is not "rerun" costs a save before it
    starts; a dangling "rerun" call runs again on resume all the same."""
    cp = InMemoryCheckpointer()
    seen: list[tuple[str, ...]] = []

    @tool
    async def probe(ctx: RunContext[Any]) -> str:
        """Look at the stored head."""
        snap = await cp.load(ctx.run_id)
        assert snap is not None
        seen.append(snap.started_calls)
        if len(seen) == 1:
            raise RunCancelled("stop here")
        return "looked"

    await _interrupted(cp, [probe], call("probe", {}, call_id="p1"))
    assert seen == [()]  # the head saved after the model turn, nothing since
    agent, _ = _agent([probe], [text("done")])
    result = await Runner.run(agent, [], checkpoint=CheckpointOptions(cp, "r1"))
    assert result.output == "done" and len(seen) == 2
    outputs = [e.output for e in result.entries if isinstance(e, ToolResultEntry)]
    assert outputs == ["looked"]


async def test_a_parallel_group_with_one_fail_tool_marks_every_call_started() -> None:
    """The whole group's calls are saved as started; on resume the plain tool reruns and the
    fail tool stops the run before anything runs."""
    cp = InMemoryCheckpointer()
    ran: list[str] = []

    @tool(on_resume="fail")
    async def send(to: str) -> str:
        """Send an email."""
        ran.append(f"send {to}")
        raise RunCancelled("died while sending")

    @tool
    async def look(q: str) -> str:
        """Look something up."""
        ran.append(f"look {q}")
        return q

    first = batch(("look", {"q": "x"}, "l1"), ("send", {"to": "bob"}, "s1"))
    await _interrupted(cp, [send, look], first)
    snap = await cp.load("r1")
    assert snap is not None
    assert "s1" in snap.started_calls
    agent, _ = _agent([send, look], [text("never")])
    with pytest.raises(UserError, match="s1"):
        await Runner.run(agent, "go", checkpoint=CheckpointOptions(cp, "r1"))
    assert ran.count("send bob") == 1


async def test_a_failed_in_doubt_run_can_be_repaired_by_recording_the_result() -> None:
    """The documented repair: add the call's result to the snapshot and resume from it."""
    cp = InMemoryCheckpointer()
    pay = Payments()
    await _interrupted(cp, [pay.tool("fail")], call("charge", {"amount": 5}, call_id="pay-1"))
    agent, _ = _agent([pay.tool("fail")], [])
    with pytest.raises(UserError):
        await Runner.run(agent, "pay", checkpoint=CheckpointOptions(cp, "r1"))
    snap = await cp.load("r1")
    assert snap is not None
    fixed = ToolResultEntry(call_id="pay-1", output="charged 5 (checked by hand)")
    repaired = dataclasses.replace(snap, entries=[*snap.entries, fixed])
    agent, model = _agent([pay.tool("fail")], [text("paid")])
    result = await Runner.run(agent, "pay", checkpoint=CheckpointOptions(cp, resume_from=repaired))
    assert result.output == "paid"
    assert pay.charged == ["r1:5"]
    assert [m.content for m in model.calls[0] if m.role == "tool"] == [fixed.output]


KILLED_IN_TOOL = """
import asyncio, os, signal, sys
from lovia import Agent, CheckpointOptions, Runner, SQLiteCheckpointer, tool
from lovia.testing import ScriptedProvider, call

@tool(on_resume="fail")
def wire(cents: int) -> str:
    '''Wire money.'''
    os.kill(os.getpid(), signal.SIGKILL)  # the process dies inside the tool
    return "sent"

async def main() -> None:
    agent = Agent("payer", model=ScriptedProvider([call("wire", {"cents": 5}, call_id="w1")]),
                  tools=[wire])
    async with SQLiteCheckpointer(sys.argv[1]) as cp:
        await Runner.run(agent, "pay", checkpoint=CheckpointOptions(cp, "r1"))

asyncio.run(main())
"""


async def test_a_process_killed_inside_a_fail_tool_leaves_the_call_in_doubt(
    tmp_path: Path,
) -> None:
    """A real SIGKILL inside the tool: the head on disk names the started call, and the
    resume refuses to run it again."""
    db = tmp_path / "runs.db"
    child = await asyncio.create_subprocess_exec(sys.executable, "-c", KILLED_IN_TOOL, str(db))
    assert await child.wait() == -signal.SIGKILL
    async with SQLiteCheckpointer(db) as cp:
        snap = await cp.load("r1")
        assert snap is not None and snap.status == "running"
        assert snap.started_calls == ("w1",)
        agent, model = _agent([], [text("never")])

        @tool(on_resume="fail")
        def wire(cents: int) -> str:
            """Wire money."""
            raise AssertionError("must not run again")

        agent = agent.clone(tools=[wire])
        with pytest.raises(UserError, match="w1"):
            await Runner.run(agent, "pay", checkpoint=CheckpointOptions(cp, "r1"))
        assert model.calls == []
