"""Public objects a 0.9.119 program or test suite builds by hand keep building: a stubbed
``RunResult`` (a test that fakes ``Runner.run``) takes 0.9.119's fields, order and defaults,
and ``Agent(...)`` reads positional arguments in 0.9.119's order."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from lovia import Agent, ModelSettings, RetryPolicy, Runner, RunResult, Usage
from lovia.testing import ScriptedProvider, text
from lovia.workspace import Workspace


class Answer(BaseModel):
    value: int


def test_a_result_built_as_in_0_9_119_has_its_defaults() -> None:
    agent = Agent("helper")
    by_position = RunResult("done", [], agent, Usage(input_tokens=3), 1)
    by_name = RunResult(output="done", entries=[], final_agent=agent, usage=Usage(), turns=1)

    for result in (by_position, by_name):
        assert result.output == "done" and result.final_agent is agent and result.turns == 1
        assert result.finish_reason is None and result.last_input_tokens is None
        assert result.run_id == "" and result.session_id is None and result.replayed is False
    assert by_position.usage.input_tokens == 3
    assert RunResult("x", [], agent, Usage(), 2, "stop").finish_reason == "stop"


async def test_a_stub_for_runner_run_stands_in_for_a_real_result() -> None:
    """The real result has the same fields the stub sets, with the same meaning."""
    agent = Agent("helper", model=ScriptedProvider([text("hi")]))
    real = await Runner.run(agent, "go")
    stub = RunResult(real.output, real.entries, real.final_agent, real.usage, real.turns)

    assert (stub.output, stub.entries, stub.final_agent) == ("hi", real.entries, agent)
    assert real.run_id and stub.run_id == ""
    assert repr(stub) == repr(real)


def test_an_agent_built_with_positional_arguments_reads_them_in_0_9_119s_order() -> None:
    other = Agent("other")
    settings, retry, policy = ModelSettings(temperature=0.1), RetryPolicy(max_attempts=2), None
    agent = Agent("a", "be brief", "openai:m", [], Answer, False, [other], settings, retry, policy)

    assert (agent.name, agent.instructions, agent.model) == ("a", "be brief", "openai:m")
    assert agent.output_type is Answer and agent.output_repair is False
    assert [h.target for h in agent.handoffs] == [other]
    assert (agent.settings, agent.retry, agent.context_policy) == (settings, retry, policy)
    workspace = Workspace.local(".")
    agent = Agent("a", "", None, [], str, True, [], settings, retry, policy, workspace)
    assert agent.workspace is workspace  # 0.9.119's eleventh; the rest are keyword-only
    with pytest.raises(TypeError):
        Agent("a", "", None, [], str, True, [], settings, retry, policy, None, [])


async def test_none_for_a_list_field_is_an_empty_list() -> None:
    """0.9.119 builds ``Agent(tools=None)``; here every list field takes None as empty."""
    agent = Agent(
        "a",
        model=ScriptedProvider([text("hi")]),
        tools=None,  # type: ignore[arg-type]
        handoffs=None,  # type: ignore[arg-type]
        plugins=None,  # type: ignore[arg-type]
        input_guardrails=None,  # type: ignore[arg-type]
        output_guardrails=None,  # type: ignore[arg-type]
    )
    assert agent.tools == agent.handoffs == agent.plugins == ()
    assert agent.input_guardrails == agent.output_guardrails == ()
    assert (await Runner.run(agent, "go")).output == "hi"


def test_names_0_9_119_modules_held_beside_their_own() -> None:
    """0.9.119's modules also held names they imported; a program importing one from there
    gets the same object as from its home module."""
    import lovia
    import lovia.transcript as transcript
    from lovia.checkpointer import Usage as CheckpointUsage
    from lovia.checkpointer import entry_from_dict, entry_to_dict
    from lovia.reliability import ProviderError
    from lovia.stores.checkpointer import RunHead, RunSnapshot
    from lovia.stores.checkpointer import entry_to_dict as store_entry_to_dict
    from lovia.stores.session import ToolResultEntry, drop_dangling_tool_calls
    from lovia.stores.session import entry_from_dict as session_entry_from_dict

    assert ProviderError is lovia.ProviderError and CheckpointUsage is Usage
    assert (RunHead, RunSnapshot) == (lovia.RunHead, lovia.RunSnapshot)
    assert entry_to_dict is store_entry_to_dict is transcript.entry_to_dict
    assert entry_from_dict is session_entry_from_dict is transcript.entry_from_dict
    assert ToolResultEntry is transcript.ToolResultEntry
    assert drop_dangling_tool_calls is transcript.drop_dangling_tool_calls
    entry = entry_from_dict(entry_to_dict(ToolResultEntry(call_id="c", output="ok")))
    assert entry == ToolResultEntry(call_id="c", output="ok")
