"""`RunBudget` as a user misuses and re-submits it: bad limits are refused when the budget is
built, and a checkpointed run stopped by its budget resumes from its saved counts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lovia import (
    Agent,
    BudgetExceeded,
    CheckpointOptions,
    RunBudget,
    Runner,
    SQLiteCheckpointer,
    UserError,
    tool,
)
from lovia.testing import ScriptedProvider, call, text


@pytest.mark.parametrize(
    "limits",
    [
        {"max_tool_calls": "2"},  # a number read from a config file or an env variable
        {"max_seconds": "30"},
        {"max_total_tokens": [100]},
        {"max_tool_calls": True},
    ],
)
def test_a_limit_that_is_not_a_number_is_a_type_error_with_a_hint(limits: dict[str, Any]) -> None:
    with pytest.raises(UserError) as caught:
        RunBudget(**limits)
    assert isinstance(caught.value, TypeError)
    assert next(iter(limits)) in caught.value.message and caught.value.hint


def test_a_limit_that_is_no_number_is_refused_and_zero_or_a_float_is_a_limit() -> None:
    with pytest.raises(UserError) as caught:
        RunBudget(max_output_tokens="10")  # type: ignore[arg-type]
    assert caught.value.hint
    assert RunBudget(max_tool_calls=0, max_seconds=2.5).max_seconds == 2.5


async def test_a_stopped_run_resumes_from_its_counts_not_with_a_fresh_allowance(
    tmp_path: Path,
) -> None:
    ran: list[str] = []

    @tool
    def search(query: str) -> str:
        """Search the logs."""
        ran.append(query)
        return f"hits for {query}"

    cp = SQLiteCheckpointer(tmp_path / "runs.db")
    script = [call("search", {"query": q}, call_id=q) for q in ("a", "b", "c")]
    agent = Agent("analyst", model=ScriptedProvider([*script, text("never")]), tools=[search])
    with pytest.raises(BudgetExceeded) as caught:
        await Runner.run(
            agent, "why?", budget=RunBudget(max_tool_calls=2), checkpoint=CheckpointOptions(cp, "j")
        )
    assert caught.value.hint and ran == ["a", "b"]
    stopped = await cp.load("j")
    assert stopped is not None and stopped.status == "interrupted"
    assert [e.type for e in stopped.entries][-1] == "tool_call"  # "c" asked for, not started

    # the same limit again: "c" was the third call, so it stops before running it
    model = ScriptedProvider([text("Done.")])
    agent = Agent("analyst", model=model, tools=[search])
    with pytest.raises(BudgetExceeded):
        await Runner.run(
            agent, [], budget=RunBudget(max_tool_calls=2), checkpoint=CheckpointOptions(cp, "j")
        )
    assert ran == ["a", "b"] and model.calls == []

    # a limit that covers the calls asked for: "c" runs once, then the model answers
    done = await Runner.run(
        agent, [], budget=RunBudget(max_tool_calls=3), checkpoint=CheckpointOptions(cp, "j")
    )
    assert done.output == "Done." and ran == ["a", "b", "c"] and done.turns == 4
    await cp.close()
