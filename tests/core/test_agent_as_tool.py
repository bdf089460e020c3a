"""An agent as another agent's tool: its own run on the model's ``input``, folded back."""

from __future__ import annotations

from typing import Any

import pytest

from lovia import (
    Agent,
    RunBudget,
    RunCancelled,
    RunContext,
    Runner,
    ToolResultEntry,
    UserError,
    tool,
)
from lovia.testing import ScriptedProvider, call, text


def results(entries: Any) -> list[tuple[bool, str]]:
    return [(e.is_error, e.output) for e in entries if isinstance(e, ToolResultEntry)]


async def test_the_sub_agent_answers_alone_and_its_tokens_count_in_the_caller() -> None:
    sub_model = ScriptedProvider([text("- a\n- b")])
    summarizer = Agent("summarizer", instructions="Summarize.", model=sub_model)
    as_tool = summarizer.as_tool(description="Summarize a passage.")
    assert as_tool.name == "ask_summarizer" and as_tool.description == "Summarize a passage."
    assert as_tool.parameters["required"] == ["input"]
    manager = Agent(
        "manager",
        instructions="Delegate.",
        model=ScriptedProvider([call("ask_summarizer", {"input": "long text"}), text("Done.")]),
        tools=[as_tool],
    )
    result = await Runner.run(manager, "summarize this")
    assert result.output == "Done."
    assert results(result.entries) == [(False, "- a\n- b")]
    # the sub-run saw its own system prompt and the input, none of the manager's conversation
    assert [(m.role, m.content) for m in sub_model.calls[0]] == [
        ("system", "Summarize."),
        ("user", "long text"),
    ]
    assert result.usage.total_tokens == 6  # two manager turns and one sub-run turn, 2 tokens each


async def test_deps_reach_the_sub_agent_and_names_can_be_set() -> None:
    seen: list[Any] = []

    @tool
    def whoami(ctx: RunContext[dict[str, str]]) -> str:
        """Who."""
        seen.append(ctx.deps)
        return "ok"

    helper = Agent(
        "Research Bot", model=ScriptedProvider([call("whoami"), text("found")]), tools=[whoami]
    )
    assert helper.as_tool().name == "ask_research_bot"
    t = helper.as_tool(name="research")
    boss = Agent(
        "boss",
        model=ScriptedProvider([call("research", {"input": "go"}), text("thanks")]),
        tools=[t],
    )
    result = await Runner.run(boss, "q", deps={"user": "ada"})
    assert seen == [{"user": "ada"}] and results(result.entries) == [(False, "found")]


async def test_a_failed_sub_run_is_a_tool_error_and_each_call_gets_a_fresh_budget() -> None:
    ran: list[int] = []

    @tool
    def work(n: int) -> str:
        """Work."""
        ran.append(n)
        return "done"

    helper = Agent(
        "helper",
        model=ScriptedProvider(
            [call("work", {"n": 1}), text("one"), call("work", {"n": 2}), call("work", {"n": 3})]
        ),
        tools=[work],
    )
    t = helper.as_tool(budget=RunBudget(max_tool_calls=1))
    boss = Agent(
        "boss",
        model=ScriptedProvider(
            [
                call("ask_helper", {"input": "a"}, call_id="d1"),
                call("ask_helper", {"input": "b"}, call_id="d2"),
                text("handled"),
            ]
        ),
        tools=[t],
    )
    result = await Runner.run(boss, "go")
    assert result.output == "handled"
    # the second sub-run starts with a fresh count: its first call runs, its second is over
    assert ran == [1, 2]
    (first, second) = results(result.entries)
    assert first == (False, "one")
    assert second[0] and second[1].startswith("Tool error")
    # the failed sub-run's two turns still count: 3 boss turns + 2 + 2 sub-run turns
    assert result.usage.total_tokens == 14


async def test_cancelling_inside_the_sub_run_cancels_the_caller() -> None:
    @tool
    def stop(ctx: RunContext[None]) -> str:
        """Stop."""
        ctx.cancel_token.cancel("enough")
        return "stopping"

    helper = Agent("helper", model=ScriptedProvider([call("stop"), text("never")]), tools=[stop])
    boss = Agent(
        "boss",
        model=ScriptedProvider([call("ask_helper", {"input": "x"}), text("never")]),
        tools=[helper.as_tool()],
    )
    with pytest.raises(RunCancelled):
        await Runner.run(boss, "go")


async def test_runner_does_not_take_the_internal_usage_link() -> None:
    with pytest.raises(UserError, match="parent_usage"):
        await Runner.run(Agent("a", model=ScriptedProvider([])), "x", parent_usage=None)
