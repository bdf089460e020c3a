"""Wrong values in ``Agent(...)`` and ``@tool``, found by the bad-input audit: each is refused
where it is written, with an error that names the field and a hint, and of a class a 0.9.119
program's ``except`` still catches (``UserTypeError`` is a ``TypeError``, ``UserValueError`` a
``ValueError``)."""

from __future__ import annotations

from typing import Any

import pytest

from lovia import Agent, AgentHooks, Runner, tool
from lovia.errors import UserError, UserTypeError, UserValueError
from lovia.testing import ScriptedProvider, call, text


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def model() -> ScriptedProvider:
    return ScriptedProvider([text("ok")])


def test_a_single_tool_instead_of_a_list_says_to_pass_a_list() -> None:
    # was a bare TypeError: 'Tool' object is not iterable
    with pytest.raises(UserTypeError) as caught:
        Agent("a", model=model(), tools=add)  # type: ignore[arg-type]
    assert "tools must be a list" in caught.value.message
    assert caught.value.hint is not None and "tools=[" in caught.value.hint


def test_a_single_handoff_instead_of_a_list_says_to_pass_a_list() -> None:
    other = Agent("b", model=model())
    with pytest.raises(UserTypeError) as caught:
        Agent("a", model=model(), handoffs=other)  # type: ignore[arg-type]
    assert "handoffs must be a list" in caught.value.message and caught.value.hint


@pytest.mark.parametrize(
    ("field", "value", "error", "words"),
    [
        # each of these built an agent that failed (or timed out every call) only once it ran
        ("hooks", 5, UserTypeError, "hooks must be an AgentHooks"),
        ("input_guardrails", [5], UserTypeError, "input_guardrails[0] must be a function"),
        ("output_guardrails", ["no"], UserTypeError, "output_guardrails[0] must be a function"),
        ("default_tool_timeout", -1, UserValueError, "default_tool_timeout must be above 0"),
        ("default_tool_timeout", 0, UserValueError, "default_tool_timeout must be above 0"),
        ("default_tool_timeout", "30", UserTypeError, "default_tool_timeout must be a number"),
        # ran as if no policy were set: a wrong setting was silently ignored
        ("retry", 5, UserTypeError, "retry must be a RetryPolicy or None"),
    ],
)
def test_a_wrong_value_is_refused_on_the_agent_line(
    field: str, value: Any, error: type[UserError], words: str
) -> None:
    with pytest.raises(error) as caught:
        Agent("a", model=model(), **{field: value})
    assert words in caught.value.message
    assert caught.value.hint


def test_what_was_accepted_still_is() -> None:
    def check(_value: Any, _ctx: Any) -> None:
        return None

    agent = Agent(
        "a",
        model=ScriptedProvider([call("add", {"a": 1, "b": 2}), text("3")]),
        tools=(add,),
        input_guardrails=(g for g in [check]),  # any iterable, read once
        hooks=AgentHooks(),
        retry=None,
        default_tool_timeout=2.5,
        handoffs=None,  # type: ignore[arg-type]
    )
    assert agent.input_guardrails == (check,)
    assert Runner.run_sync(agent, "1+2?").output == "3"


def test_tool_given_no_function_is_a_type_error_with_a_hint() -> None:
    with pytest.raises(UserTypeError) as caught:
        tool(5)  # type: ignore[call-overload]
    assert caught.value.hint
    with pytest.raises(UserTypeError):
        Agent("a", model=model(), tools=["add"])


def test_two_handoffs_under_one_name_are_named_as_a_handoff_conflict() -> None:
    # the error said "from agent.tools" and told to rename a @tool, which the agent has none of
    other = Agent("b", model=model())
    agent = Agent("a", model=model(), handoffs=[other, other])
    with pytest.raises(UserError) as caught:
        Runner.run_sync(agent, "hi")
    assert "from handoff" in caught.value.message
    assert caught.value.hint is not None and "Handoff(" in caught.value.hint


@pytest.mark.parametrize("limit", ["3", None])
def test_max_turns_that_is_no_number_is_still_a_type_error(limit: Any) -> None:
    # 0.9.119 raised TypeError from its comparison; a UserError that is not one broke
    # 'except TypeError'
    with pytest.raises(UserTypeError) as caught:
        Runner.run_sync(Agent("a", model=model()), "hi", max_turns=limit)
    assert caught.value.hint


@pytest.mark.parametrize(
    ("argument", "value", "words"),
    [
        # was ignored: the run went on with the agent's retry policy
        ("retry", 5, "retry= takes a RetryPolicy, got int"),
        # was "sequence item 0: expected str instance, int found" from inside the run
        ("extra_instructions", 5, "extra_instructions= takes a string, got int"),
    ],
)
async def test_a_run_argument_of_the_wrong_type_is_refused_before_the_run(
    argument: str, value: Any, words: str
) -> None:
    scripted = model()
    with pytest.raises(UserTypeError) as caught:
        await Runner.run(Agent("a", model=scripted), "hi", **{argument: value})
    assert caught.value.message == words and caught.value.hint
    assert scripted.calls == []  # no model call was made


@pytest.mark.parametrize("content", [5, None])
def test_mailbox_push_of_no_text_is_a_type_error(content: Any) -> None:
    # 0.9.119 took it and the run failed with TypeError; a plain UserError broke that
    # 'except TypeError'
    from lovia import Mailbox

    with pytest.raises(UserTypeError) as caught:
        Mailbox().push(content)
    assert caught.value.hint
