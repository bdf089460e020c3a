"""``ask_human``: the model asks a person through a ``HumanChannel`` and gets the reply."""

from __future__ import annotations

import asyncio

import pytest

from lovia import Agent, RunContext, Runner, ToolError, ToolResultEntry
from lovia.testing import ScriptedProvider, call, text
from lovia.tools import HumanChannel, HumanQuestion, QuestionOption, ask_human


def tool_results(entries: list[object]) -> list[ToolResultEntry]:
    return [e for e in entries if isinstance(e, ToolResultEntry)]


async def operator(channel: HumanChannel, reply: str, seen: list[HumanQuestion]) -> None:
    async for q in channel.questions():
        seen.append(q)
        channel.answer(q.id, reply)


async def test_the_model_gets_the_operators_answer() -> None:
    channel = HumanChannel()
    seen: list[HumanQuestion] = []
    consumer = asyncio.create_task(operator(channel, "Kyoto", seen))
    agent = Agent(
        name="concierge",
        model=ScriptedProvider([call("ask_human", {"question": "Which city?"}), text("Kyoto!")]),
        tools=[ask_human(channel)],
    )
    result = await Runner.run(agent, "book a trip")
    assert result.output == "Kyoto!"
    assert [r.output for r in tool_results(result.entries)] == ["Kyoto"]
    assert [(q.question, q.options, q.multi_select) for q in seen] == [("Which city?", [], False)]
    assert seen[0].run_id == result.run_id
    channel.close()
    await asyncio.wait_for(consumer, 5)  # close() ends the iteration
    assert channel.pending == []


async def test_options_reach_the_operator_as_models() -> None:
    channel = HumanChannel()
    seen: list[HumanQuestion] = []
    consumer = asyncio.create_task(operator(channel, "Kyoto\nOsaka", seen))
    args = {
        "question": "Which cities?",
        "options": [{"label": "Kyoto", "description": "temples"}, {"label": "Osaka"}],
        "multi_select": True,
    }
    agent = Agent(
        name="c",
        model=ScriptedProvider([call("ask_human", args), text("ok")]),
        tools=[ask_human(channel)],
    )
    await Runner.run(agent, "plan")
    [q] = seen
    assert q.options == [
        QuestionOption(label="Kyoto", description="temples"),
        QuestionOption(label="Osaka"),
    ]
    assert q.multi_select is True
    channel.close()
    await asyncio.wait_for(consumer, 5)


@pytest.mark.parametrize(
    "options",
    [
        [{"label": "alone"}],
        [{"label": f"o{i}"} for i in range(5)],
        [{"label": "same"}, {"label": "same"}],
        [{"label": "two\nlines"}, {"label": "b"}],
        [{"label": ""}, {"label": "b"}],
        [{"label": "a", "description": "x\ny"}, {"label": "b"}],
    ],
)
async def test_bad_options_are_an_error_the_model_sees_and_ask_nobody(
    options: list[dict[str, str]],
) -> None:
    channel = HumanChannel()
    agent = Agent(
        name="c",
        model=ScriptedProvider(
            [call("ask_human", {"question": "pick", "options": options}), text("ok")]
        ),
        tools=[ask_human(channel)],
    )
    result = await Runner.run(agent, "go")
    [res] = tool_results(result.entries)
    assert res.is_error and "options" in res.output
    assert channel.pending == []


async def test_multi_select_without_options_is_a_free_form_question() -> None:
    channel = HumanChannel()
    seen: list[HumanQuestion] = []
    consumer = asyncio.create_task(operator(channel, "anything", seen))
    agent = Agent(
        name="c",
        model=ScriptedProvider(
            [call("ask_human", {"question": "?", "multi_select": True}), text("ok")]
        ),
        tools=[ask_human(channel)],
    )
    await Runner.run(agent, "go")
    assert seen[0].multi_select is False and seen[0].options == []
    channel.close()
    await asyncio.wait_for(consumer, 5)


async def test_a_cancelled_question_is_a_tool_error_and_the_run_goes_on() -> None:
    channel = HumanChannel()

    async def refuse() -> None:
        async for q in channel.questions():
            channel.cancel(q.id, "the operator is away")

    consumer = asyncio.create_task(refuse())
    agent = Agent(
        name="c",
        model=ScriptedProvider([call("ask_human", {"question": "?"}), text("went on")]),
        tools=[ask_human(channel)],
    )
    result = await Runner.run(agent, "go")
    [res] = tool_results(result.entries)
    assert res.is_error and "the operator is away" in res.output
    assert result.output == "went on"
    channel.close()
    await asyncio.wait_for(consumer, 5)


async def test_close_fails_the_waiting_question_and_refuses_new_ones() -> None:
    channel = HumanChannel()
    agent = Agent(
        name="c",
        model=ScriptedProvider(
            [
                call("ask_human", {"question": "first"}),
                call("ask_human", {"question": "2"}),
                text("done"),
            ]
        ),
        tools=[ask_human(channel)],
    )
    run = asyncio.create_task(Runner.run(agent, "go"))
    asked = await asyncio.wait_for(channel.questions().__anext__(), 5)
    assert channel.pending == [asked] and asked.question == "first"
    channel.close("shutting down")
    result = await asyncio.wait_for(run, 5)
    first, second = tool_results(result.entries)
    assert first.is_error and "shutting down" in first.output
    assert second.is_error and "closed" in second.output
    # a consumer that starts after close() ends at once
    assert [q async for q in channel.questions()] == []
    assert [q async for q in channel.questions()] == []


async def test_answer_and_cancel_of_unknown_questions_do_nothing() -> None:
    channel = HumanChannel()
    assert channel.answer("nope", "x") is False
    assert channel.cancel("nope") is False


def test_ask_human_runs_alone() -> None:
    t = ask_human(HumanChannel(), name="ask_operator")
    assert t.parallel is False and t.name == "ask_operator"


async def test_a_question_asked_outside_a_run_carries_the_context_ids() -> None:
    channel = HumanChannel()
    seen: list[HumanQuestion] = []
    consumer = asyncio.create_task(operator(channel, "yes", seen))
    ctx: RunContext[None] = RunContext(
        deps=None,
        entries=[],
        agent=Agent(name="x", model=ScriptedProvider([])),
        session_id="s1",
        run_id="r1",
    )
    from lovia.tools import run_tool

    assert await run_tool(ask_human(channel), {"question": "ok?"}, ctx) == "yes"
    assert (seen[0].session_id, seen[0].run_id) == ("s1", "r1")
    channel.close()
    await asyncio.wait_for(consumer, 5)
    with pytest.raises(ToolError, match="closed"):
        await run_tool(ask_human(channel), {"question": "late?"}, ctx)
