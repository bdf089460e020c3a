"""An argument the tool's function does not take is left out of the call, as lovia 0.9.119
left it out: a scripted (or real) model that adds one still gets the tool's answer. The schema
the model is shown keeps forbidding other arguments, and a wrong or missing one is still an
error result."""

from __future__ import annotations

from lovia import Agent, Runner, ToolResultEntry, tool
from lovia.testing import ScriptedProvider, call, text


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def _results(arguments: dict[str, object]) -> list[tuple[str, bool]]:
    model = ScriptedProvider([call("add", arguments), text("done")])
    result = await Runner.run(Agent("calc", model=model, tools=[add]), "go")
    return [(e.output, e.is_error) for e in result.entries if isinstance(e, ToolResultEntry)]


async def test_an_extra_argument_is_left_out_and_the_tool_runs() -> None:
    assert await _results({"a": 1, "b": 2, "note": "from the model"}) == [("3", False)]
    assert add.parameters["additionalProperties"] is False


async def test_a_missing_or_wrong_argument_is_still_an_error_result() -> None:
    [(missing, missing_error)] = await _results({"a": 1, "c": 2})
    assert missing_error and "b" in missing
    [(wrong, wrong_error)] = await _results({"a": 1, "b": "two"})
    assert wrong_error and "b" in wrong
