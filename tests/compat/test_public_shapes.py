"""Public objects a 0.9.119 program or test suite builds by hand keep building: a stubbed
``RunResult`` (a test that fakes ``Runner.run``) takes 0.9.119's fields, order and defaults."""

from __future__ import annotations

from lovia import Agent, Runner, RunResult, Usage
from lovia.testing import ScriptedProvider, text


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
