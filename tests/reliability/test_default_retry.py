"""An agent retries transient model failures by default; ``retry=None`` turns that off
(issue 12: 0.9.119's default)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from lovia import Agent, ProviderError, RetryPolicy, Runner, events
from lovia.testing import ScriptedProvider, call, text

SLEPT: list[float] = []


async def _no_sleep(seconds: float) -> None:
    SLEPT.append(seconds)


def _fast(agent: Agent) -> Agent:
    """The agent's own policy, without the real waiting."""
    assert agent.retry is not None
    return agent.clone(retry=dataclasses.replace(agent.retry, sleep=_no_sleep))


def _rate_limited() -> ProviderError:
    return ProviderError("openai:m answered HTTP 429", status_code=429)


def test_the_default_policy_is_five_patient_attempts() -> None:
    policy = Agent("a").retry
    assert policy == RetryPolicy()
    assert policy is not None
    assert (policy.max_attempts, policy.backoff_base, policy.backoff_max) == (5, 1.0, 30.0)
    assert policy.restart_on_partial
    assert Agent("a", retry=None).retry is None
    assert Agent("a").clone(retry=None).retry is None
    assert Agent("a").clone(name="b").retry == RetryPolicy()


async def test_a_default_agent_retries_a_rate_limit_and_announces_it() -> None:
    model = ScriptedProvider([_rate_limited(), text("answer")])
    handle = Runner.stream(_fast(Agent("a", model=model)), "hi")
    retrying = [e async for e in handle if isinstance(e, events.ModelRetrying)]
    result = await handle.result()

    assert result.output == "answer"
    assert len(model.calls) == 2
    assert [(e.attempt, e.max_attempts) for e in retrying] == [(1, 5)]


async def test_with_retry_none_a_rate_limit_fails_the_run_at_once() -> None:
    model = ScriptedProvider([_rate_limited(), text("never")])
    with pytest.raises(ProviderError) as info:
        await Runner.run(Agent("a", model=model, retry=None), "hi")
    assert info.value.status_code == 429
    assert len(model.calls) == 1


async def test_a_bug_in_a_provider_is_not_retried() -> None:
    model = ScriptedProvider([RuntimeError("provider bug"), text("never")])
    with pytest.raises(ProviderError) as info:
        await Runner.run(_fast(Agent("a", model=model)), "hi")
    assert info.value.retryable is False
    assert isinstance(info.value.__cause__, RuntimeError)
    assert len(model.calls) == 1


async def test_a_dropped_connection_from_a_provider_is_retried() -> None:
    model = ScriptedProvider([ConnectionResetError("peer reset"), text("answer")])
    result = await Runner.run(_fast(Agent("a", model=model)), "hi")
    assert result.output == "answer"
    assert len(model.calls) == 2


async def test_an_agent_used_as_a_tool_retries_with_its_own_default() -> None:
    inner_model = ScriptedProvider([_rate_limited(), text("inner answer")])
    inner = _fast(Agent("inner", model=inner_model))
    outer_model = ScriptedProvider([call("ask_inner", {"input": "q"}), text("done")])
    outer = Agent("outer", model=outer_model, tools=[inner.as_tool(name="ask_inner")])

    result = await Runner.run(outer, "go")

    assert result.output == "done"
    assert len(inner_model.calls) == 2
    last: Any = outer_model.calls[1][-1]
    assert last.content == "inner answer"
