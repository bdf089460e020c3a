"""Structured output: the schema in the prompt, lenient reading, and repair."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
from typing import Any

import pytest
from pydantic import BaseModel

from lovia import Agent, MaxTurnsExceeded, OutputValidationError, Runner, tool
from lovia.output import DefaultOutputRepair, OutputRepairStrategy
from lovia.testing import ScriptedProvider, batch, text


class Brief(BaseModel):
    title: str
    points: list[str]


async def test_without_native_support_the_schema_is_in_the_system_prompt() -> None:
    model = ScriptedProvider([text('{"title": "Tides", "points": ["moon"]}')])
    agent = Agent("w", instructions="Be exact.", model=model, output_type=Brief)
    result = await Runner.run(agent, "brief me")
    assert result.output == Brief(title="Tides", points=["moon"])
    system = model.calls[0][0]
    assert system.role == "system" and system.content.startswith("Be exact.")
    assert '"required": ["title", "points"]' in system.content
    assert '"title": "Brief"' not in system.content  # no derived titles
    plain = ScriptedProvider([text("hi")])
    await Runner.run(Agent("p", instructions="Be exact.", model=plain), "x")
    assert plain.calls[0][0].content == "Be exact."  # str output: no format block


@pytest.mark.parametrize(
    "answer",
    [
        '{"title": "T", "points": []}',
        '```json\n{"title": "T", "points": []}\n```',
        'Here it is: {"title": "T", "points": []} -- hope that helps {',
        'Sure. {"title": "brace } in a string", "points": []}',
    ],
)
async def test_answers_are_read_leniently(answer: str) -> None:
    agent = Agent("w", model=ScriptedProvider([text(answer)]), output_type=Brief)
    result = await Runner.run(agent, "x")
    assert isinstance(result.output, Brief) and result.turns == 1


async def test_a_bad_answer_is_repaired_once_in_a_new_turn() -> None:
    model = ScriptedProvider([text("oops"), text('{"title": "T", "points": []}')])
    result = await Runner.run(Agent("w", model=model, output_type=Brief), "brief me")
    assert result.output.title == "T" and result.turns == 2
    asked = model.calls[1]
    assert asked[-2].role == "assistant" and asked[-2].content == "oops"
    assert asked[-1].role == "user" and "could not be parsed" in asked[-1].content
    assert [e.type for e in result.entries] == [
        "input",
        "assistant_text",
        "input",
        "assistant_text",
    ]


async def test_repair_off_fails_at_once_and_a_strategy_decides_per_attempt() -> None:
    agent = Agent(
        "w", model=ScriptedProvider([text("oops")]), output_type=Brief, output_repair=False
    )
    with pytest.raises(OutputValidationError) as caught:
        await Runner.run(agent, "x")
    assert caught.value.raw == "oops" and caught.value.output_type_name == "Brief"

    attempts: list[int] = []

    class Patient:
        def build_prompt(self, exc: OutputValidationError, attempt: int) -> str | None:
            attempts.append(attempt)
            return None if attempt > 2 else f"try again ({attempt})"

    assert isinstance(Patient(), OutputRepairStrategy)
    model = ScriptedProvider([text("a"), text("b"), text("c")])
    agent = Agent("w", model=model, output_type=Brief, output_repair=Patient())
    with pytest.raises(OutputValidationError) as caught:
        await Runner.run(agent, "x")
    assert attempts == [1, 2, 3] and caught.value.raw == "c"
    assert model.calls[2][-1].content == "try again (2)"
    assert DefaultOutputRepair(max_attempts=0).build_prompt(caught.value, 1) is None


async def test_a_repair_is_a_turn_counted_by_max_turns() -> None:
    agent = Agent("w", model=ScriptedProvider([text("oops")]), output_type=Brief)
    with pytest.raises(MaxTurnsExceeded):
        await Runner.run(agent, "x", max_turns=1)


async def test_tool_results_render_dates_decimals_and_enums_as_json() -> None:
    class Color(enum.Enum):
        RED = "red"

    @dataclasses.dataclass
    class Row:
        name: str
        when: datetime.date

    values: dict[str, Any] = {
        "rows": [Row("a", datetime.date(2024, 1, 2))],
        "price": decimal.Decimal("1.50"),
        "color": Color.RED,
        "odd": object,
    }
    tools = []
    for key, value in values.items():

        def make(v: Any, k: str) -> Any:
            @tool(name=k)
            def give() -> Any:
                """Give."""
                return v

            return give

        tools.append(make(value, key))
    model = ScriptedProvider([batch(*[(k, {}, k) for k in values]), text("ok")])
    result = await Runner.run(Agent("a", model=model, tools=tools), "go")
    out = {e.call_id: e.output for e in result.entries if e.type == "tool_result"}
    assert out["rows"] == '[{"name": "a", "when": "2024-01-02"}]'
    assert out["price"] == '"1.50"' and out["color"] == '"red"'
    assert out["odd"] == str(object)  # no JSON form: its str()


def test_a_wrong_output_repair_setting_fails_when_the_agent_is_built() -> None:
    from lovia import UserError

    with pytest.raises(UserError, match="output_repair") as caught:
        Agent("w", output_type=Brief, output_repair="yes please")
    assert caught.value.hint
