"""Shapes 0.9.119's documentation pages lead programs to rely on (compat): found by running
each page's code blocks and stated behaviours under 0.9.119 and here."""

from __future__ import annotations

import dataclasses

from lovia import Agent, BudgetExceeded, RunBudget, Runner, tool
from lovia.testing import ScriptedProvider, call, text


def test_run_budget_is_a_dataclass_whose_copy_starts_fresh() -> None:
    # the budgets page: a budget carries one run's counters, so make a fresh one per run;
    # dataclasses.replace() of a template is how a program does that
    template = RunBudget(max_tool_calls=1)
    assert dataclasses.is_dataclass(template)
    assert [f.name for f in dataclasses.fields(template) if f.init] == [
        "max_input_tokens",
        "max_output_tokens",
        "max_total_tokens",
        "max_tool_calls",
        "max_seconds",
    ]
    assert repr(template) == (
        "RunBudget(max_input_tokens=None, max_output_tokens=None, max_total_tokens=None, "
        "max_tool_calls=1, max_seconds=None)"
    )
    assert template == RunBudget(max_tool_calls=1)
    assert dataclasses.asdict(template)["max_tool_calls"] == 1

    @tool
    def ping() -> str:
        """Answer a ping."""
        return "pong"

    def agent() -> Agent:
        return Agent(
            name="a",
            model=ScriptedProvider([call("ping", {}), call("ping", {}), text("done")]),
            tools=[ping],
        )

    used = dataclasses.replace(template)
    try:
        Runner.run_sync(agent(), "go", budget=used)
    except BudgetExceeded as exc:
        assert "tool call count 2 exceeds budget 1" in str(exc)
    else:
        raise AssertionError("the budget did not stop the run")
    assert used.tool_calls == 2

    fresh = dataclasses.replace(used, max_tool_calls=5)
    assert fresh.tool_calls == 0
    assert Runner.run_sync(agent(), "go", budget=fresh).output == "done"


def test_a_zero_second_budget_stops_the_run_before_any_model_call() -> None:
    # as 0.9.119 did: RunBudget(max_seconds=0) leaves no time for a first call
    model = ScriptedProvider([text("never")])
    try:
        Runner.run_sync(Agent(name="a", model=model), "go", budget=RunBudget(max_seconds=0))
    except BudgetExceeded as exc:
        assert str(exc).startswith("elapsed 0.0s exceeds budget 0.0s")
        assert exc.hint
    else:
        raise AssertionError("the budget did not stop the run")
    assert model.calls == []
