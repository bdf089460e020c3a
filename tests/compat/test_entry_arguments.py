"""Run arguments and agent fields that lovia 0.9.119 takes: a model string is looked at when
the agent runs, never when it is built, and a ``max_turns`` of 0 or less starts the run and
ends it with ``MaxTurnsExceeded``, so a program's ``except MaxTurnsExceeded`` keeps working."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from lovia import (
    Agent,
    BudgetExceeded,
    MaxTurnsExceeded,
    ProviderError,
    RetryPolicy,
    RunBudget,
    Runner,
    UserError,
    events,
)
from lovia.providers import model_from_env, register_provider
from lovia.testing import ScriptedProvider, text


def _agent(model: Any = None) -> Agent:
    return Agent("helper", model=model if model is not None else ScriptedProvider([text("hi")]))


async def _stream_names(agent: Agent, **options: Any) -> tuple[list[str], BaseException]:
    """The events' names and the error the ``RunFailed`` event carries (the stream ends on
    it without raising, as in 0.9.119)."""
    seen = [event async for event in Runner.stream(agent, "go", **options)]
    failed = seen[-1]
    assert isinstance(failed, events.RunFailed)
    return [type(event).__name__ for event in seen], failed.error


@pytest.mark.parametrize("spec", ["", "   ", "openai:", "opnai:gpt-4.1", "nosuchvendor3:m"])
async def test_an_agent_with_a_wrong_model_string_is_built_and_fails_at_its_run(
    spec: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "set")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing on the Agent(...) line, not even a warning
        agent = Agent("helper", model=spec)
        clone = agent.clone(instructions="still fine")

    with pytest.raises(UserError) as info:
        await Runner.run(agent, "go")
    assert info.value.hint
    names, error = await _stream_names(clone)
    assert names == ["RunFailed"] and isinstance(error, UserError)


async def test_a_vendor_registered_after_the_agent_is_built_serves_its_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LOVIA_MODEL", "latevendor3:small")
    agent = Agent("helper", model=model_from_env())  # the vendor is not registered yet
    register_provider("latevendor3", lambda name: ScriptedProvider([text(f"from {name}")]))

    assert (await Runner.run(agent, "go")).output == "from small"


@pytest.mark.parametrize("limit", [0, -1, -50])
async def test_no_turn_left_starts_the_run_and_raises_max_turns_exceeded(limit: int) -> None:
    model = ScriptedProvider([text("hi")])
    with pytest.raises(MaxTurnsExceeded) as info:
        await Runner.run(_agent(model), "go", max_turns=limit)
    assert f"max_turns={limit}" in info.value.message and info.value.hint
    assert model.calls == []  # the model is never asked

    names, error = await _stream_names(_agent(), max_turns=limit)
    assert names == ["RunStarted", "RunFailed"] and isinstance(error, MaxTurnsExceeded)
    with pytest.raises(MaxTurnsExceeded):
        await Runner.run(_agent(), "go", max_turns=limit)


@pytest.mark.parametrize(("limit", "answered"), [(float("inf"), True), (1.5, True), (0.5, True)])
async def test_a_float_limit_counts_turns_as_0_9_119_compared_them(
    limit: float, answered: bool
) -> None:
    result = await Runner.run(_agent(), "go", max_turns=limit)  # type: ignore[arg-type]
    assert (result.output == "hi") is answered


@pytest.mark.parametrize("limit", [None, "3", float("nan")])
async def test_a_limit_that_is_not_a_number_is_refused_before_the_run_starts(limit: Any) -> None:
    names, error = await _stream_names(_agent(), max_turns=limit)
    assert names == ["RunFailed"]
    assert isinstance(error, UserError) and error.hint and "max_turns" in error.message


async def test_an_unknown_keyword_is_a_type_error_as_in_0_9_119_and_a_user_error() -> None:
    with pytest.raises(TypeError) as info:
        await Runner.run(_agent(), "go", max_turn=3)
    assert isinstance(info.value, UserError) and info.value.hint == "did you mean 'max_turns'?"
    with pytest.raises(TypeError):
        Runner.stream(_agent(), "go", no_such_option=1)


def test_run_sync_refuses_an_unknown_keyword_with_a_type_error_too() -> None:
    with pytest.raises(TypeError):
        Runner.run_sync(_agent(), "go", no_such_option=1)


@pytest.mark.parametrize("attempts", [0, -1, 1])
async def test_a_retry_policy_of_at_most_one_attempt_tries_once(attempts: int) -> None:
    """0.9.119 builds ``RetryPolicy(max_attempts=0)`` (a way to say "no retries") and makes
    one model call; so does this project."""
    failing = ProviderError("overloaded", status_code=529, retryable=True)
    model = ScriptedProvider([failing, text("never reached")])
    agent = Agent("helper", model=model, retry=RetryPolicy(max_attempts=attempts))

    names, error = await _stream_names(agent)
    assert names == ["RunStarted", "TurnStarted", "RunFailed"]
    assert error is failing
    assert model.remaining == 1  # one call, no retry


@pytest.mark.parametrize("limits", [{"max_total_tokens": -1}, {"max_tool_calls": -5}])
async def test_a_negative_budget_limit_starts_the_run_and_raises_budget_exceeded(
    limits: dict[str, int],
) -> None:
    model = ScriptedProvider([text("hi")])
    with pytest.raises(BudgetExceeded) as info:
        await Runner.run(_agent(model), "go", budget=RunBudget(**limits))
    assert info.value.hint
    assert model.calls == []  # spent before the first call


@pytest.mark.parametrize("limit", ["10", True])
def test_a_budget_limit_that_is_not_a_number_is_refused(limit: object) -> None:
    with pytest.raises(UserError) as info:
        RunBudget(max_total_tokens=limit)  # type: ignore[arg-type]
    assert info.value.hint
