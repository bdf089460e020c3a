"""A user's provider may report usage several times in one call, as running totals (an
Anthropic-style stream reports the prompt first, then the whole call): lovia 0.9.119 took the
last report as the call's usage, and so does this lovia, so budgets and results count each
token once."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from lovia import Agent, BudgetExceeded, RunBudget, Runner, Usage
from lovia.transcript import FinishDelta, TextDelta, UsageDelta


class RunningTotals:
    """Reports (12 in, 1 out) after the first token, then (12 in, 7 out) at the end."""

    name = "totals"
    model = "m"
    supports_json_schema = False

    async def stream(self, entries: Any, **_: Any) -> AsyncIterator[Any]:
        yield UsageDelta(Usage(input_tokens=12, output_tokens=1))
        yield TextDelta("Fine.")
        yield UsageDelta(Usage(input_tokens=12, output_tokens=7))
        yield FinishDelta("stop")


async def test_the_last_usage_report_of_a_call_is_its_usage() -> None:
    result = await Runner.run(Agent("a", model=RunningTotals()), "How are you?")
    assert (result.usage.input_tokens, result.usage.output_tokens) == (12, 7)
    assert result.usage.total_tokens == 19


async def test_a_budget_counts_running_totals_once() -> None:
    agent = Agent("a", model=RunningTotals())
    result = await Runner.run(agent, "hi", budget=RunBudget(max_total_tokens=25))
    assert result.output == "Fine."  # 19 tokens, not 32
    with pytest.raises(BudgetExceeded):
        await Runner.run(agent, "hi", budget=RunBudget(max_total_tokens=18))
