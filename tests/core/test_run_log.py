"""The run's log narrative on the loggers 0.9.119 used, and ``CURRENT_AGENT``, the tag that
says which agent a line comes from."""

from __future__ import annotations

import logging

import pytest
from pydantic import BaseModel

from lovia import Agent, MaxTurnsExceeded, Runner, tool
from lovia.log_config import CURRENT_AGENT
from lovia.messages import AssistantTurn
from lovia.testing import ScriptedProvider, call, text
from lovia.usage import Usage

LOOP = "lovia.runtime.loop"
TOOLS = "lovia.runtime.tool_calls"


@tool
def noop() -> str:
    return "ok"


@tool
def broken() -> str:
    raise RuntimeError("kaputt")


def lines(caplog: pytest.LogCaptureFixture, logger: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == logger]


async def test_a_run_is_narrated_from_start_to_done(caplog: pytest.LogCaptureFixture) -> None:
    helper = Agent(name="helper", model=ScriptedProvider([text("from helper")]))
    agent = Agent(
        name="lead",
        model=ScriptedProvider(
            [call("noop", {}), call("broken", {}), call("transfer_to_helper", {}), text("x")]
        ),
        tools=[noop, broken],
        handoffs=[helper],
    )
    with caplog.at_level(logging.INFO, logger="lovia.runtime"):
        await Runner.run(agent, "go")
    loop = lines(caplog, LOOP)
    assert loop[0].startswith("run.start: agent='lead'")
    starts = [m for m in loop if m.startswith("model.start:")]
    done = [m for m in loop if m.startswith("model.done:")]
    assert len(starts) == len(done) == 4
    assert "tokens=2(in=1 out=1)" in done[0] and "tool_calls=1" in done[0] and "dur=" in done[0]
    assert "run.handoff: 'lead' → 'helper'" in loop
    assert loop[-1].startswith("run.done: agent='helper' turns=4 tokens=8(in=4 out=4)")
    tools = lines(caplog, TOOLS)
    assert "tool.start: noop call_id=call_noop args={}" in tools
    assert "tool.done: noop call_id=call_noop result=ok" in tools
    [error] = [r for r in caplog.records if r.getMessage().startswith("tool.error: broken")]
    assert error.levelno == logging.WARNING and "kaputt" in error.getMessage()


async def test_max_turns_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    agent = Agent(name="a", model=ScriptedProvider([call("noop", {})]), tools=[noop])
    with caplog.at_level(logging.WARNING, logger=LOOP), pytest.raises(MaxTurnsExceeded):
        await Runner.run(agent, "go", max_turns=1)
    [line] = lines(caplog, LOOP)
    assert line.startswith("run.interrupted: agent='a' (MaxTurnsExceeded:")


async def test_an_empty_final_answer_completes_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    empty = AssistantTurn(content=None, usage=Usage(input_tokens=1, output_tokens=0))
    agent = Agent(name="a", model=ScriptedProvider([empty]))
    with caplog.at_level(logging.WARNING, logger=LOOP):
        result = await Runner.run(agent, "go")
    assert result.output == ""
    assert [m.split(":")[0] for m in lines(caplog, LOOP)] == ["run.empty_output"]


async def test_nothing_is_logged_below_the_level_asked_for(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="lovia"):
        await Runner.run(Agent(name="a", model=ScriptedProvider([text("hi")])), "go")
    assert caplog.records == []


async def test_the_agent_tag_follows_the_run_and_is_restored() -> None:
    tags: list[tuple[str, str | None]] = []

    @tool
    def peek() -> str:
        tags.append(("inner", CURRENT_AGENT.get()))
        return "ok"

    @tool
    async def delegate() -> str:
        tags.append(("outer", CURRENT_AGENT.get()))
        inner = Agent(
            name="inner", model=ScriptedProvider([call("peek", {}), text("x")]), tools=[peek]
        )
        await Runner.run(inner, "hi")
        tags.append(("after", CURRENT_AGENT.get()))
        return "ok"

    helper = Agent(
        name="helper",
        model=ScriptedProvider([call("delegate", {}), text("done")]),
        tools=[delegate],
    )
    lead = Agent(
        name="lead",
        model=ScriptedProvider([call("delegate", {}), call("transfer_to_helper", {})]),
        tools=[delegate],
        handoffs=[helper],
    )
    assert CURRENT_AGENT.get() is None
    await Runner.run(lead, "go")
    assert tags == [
        ("outer", "lead"),
        ("inner", "inner"),
        ("after", "lead"),
        ("outer", "helper"),
        ("inner", "inner"),
        ("after", "helper"),
    ]
    assert CURRENT_AGENT.get() is None


async def test_a_streamed_run_tags_its_tools_too() -> None:
    seen: list[str | None] = []

    @tool
    def peek() -> str:
        seen.append(CURRENT_AGENT.get())
        return "ok"

    agent = Agent(
        name="streamed", model=ScriptedProvider([call("peek", {}), text("x")]), tools=[peek]
    )
    handle = Runner.stream(agent, "go")
    async for _ in handle:
        pass
    assert seen == ["streamed"] and CURRENT_AGENT.get() is None


async def test_a_failed_run_is_an_error_and_a_stopped_one_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # 0.9.119's levels: the run's status decides (failed -> ERROR, interrupted -> WARNING)
    agent = Agent(name="a", model=ScriptedProvider([]))  # out of answers: a bug, not a stop
    with caplog.at_level(logging.WARNING, logger=LOOP), pytest.raises(AssertionError):
        await Runner.run(agent, "go")
    [failed] = [r for r in caplog.records if r.name == LOOP]
    assert failed.getMessage().startswith("run.failed: agent='a'")
    assert failed.levelno == logging.ERROR
    caplog.clear()
    agent = Agent(name="a", model=ScriptedProvider([call("noop", {})]), tools=[noop])
    with caplog.at_level(logging.WARNING, logger=LOOP), pytest.raises(MaxTurnsExceeded):
        await Runner.run(agent, "go", max_turns=1)
    [stopped] = [r for r in caplog.records if r.name == LOOP]
    assert stopped.levelno == logging.WARNING


async def test_an_output_repair_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    # 0.9.119 warns run.output_repair each time it asks the model to fix its answer
    class Answer(BaseModel):
        n: int

    agent = Agent(
        name="a", model=ScriptedProvider([text("not json"), text('{"n": 1}')]), output_type=Answer
    )
    with caplog.at_level(logging.WARNING, logger=LOOP):
        result = await Runner.run(agent, "go")
    assert result.output == Answer(n=1)
    [line] = [r for r in caplog.records if r.name == LOOP]
    assert line.levelno == logging.WARNING
    assert line.getMessage().startswith("run.output_repair: agent='a' attempt=1")
