"""Differences from lovia 0.9.119 found by running the same programs under both (compat4),
each pinned through the public API on every store kind."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from pydantic import BaseModel

from lovia import (
    Agent,
    AgentHooks,
    CheckpointOptions,
    GuardrailTripped,
    InputEntry,
    OutputValidationError,
    RunCancelled,
    Runner,
    ToolResultEntry,
    UserError,
    tool,
)
from lovia.events import RunStarted, ToolCallStarted
from lovia.testing import ScriptedProvider, batch, call, text


def _refuse_once() -> Any:
    seen: list[list[tuple[str, Any]]] = []

    def guard(messages: Any, ctx: Any) -> str | None:
        seen.append([(m.role, m.content) for m in messages])
        return "not now" if len(seen) == 1 else None

    guard.seen = seen  # type: ignore[attr-defined]
    return guard


async def test_a_tripped_input_guardrail_keeps_the_input_in_the_checkpoint_only(
    stores: tuple[Any, Any],
) -> None:
    # 0.9.119: the failed head holds the run's input; the session holds nothing
    session, cp = stores
    provider = ScriptedProvider([text("hi")])
    agent = Agent("a", model=provider, input_guardrails=[_refuse_once()])
    opts = CheckpointOptions(cp, "r1")
    with pytest.raises(GuardrailTripped):
        await Runner.run(agent, "hello", session=session, session_id="u", checkpoint=opts)
    snap = await cp.load("r1")
    assert snap is not None and snap.status == "failed"
    assert snap.entries == [InputEntry(role="user", content="hello")]
    assert await session.load("u") == []
    assert provider.calls == []


async def test_resubmitting_a_refused_run_works_on_its_own_input_and_guards_it_again(
    stores: tuple[Any, Any],
) -> None:
    session, cp = stores
    guard = _refuse_once()
    provider = ScriptedProvider([text("hi")])
    agent = Agent("a", model=provider, input_guardrails=[guard])
    opts = CheckpointOptions(cp, "r1")
    with pytest.raises(GuardrailTripped):
        await Runner.run(agent, "hello", session=session, session_id="u", checkpoint=opts)
    # the new input is ignored (a resume), and the guardrail sees the stored input again:
    # 0.9.119 skips it, so a re-submission would reach the model unchecked
    result = await Runner.run(agent, "other", session=session, session_id="u", checkpoint=opts)
    assert result.output == "hi"
    assert guard.seen == [[("user", "hello")], [("user", "hello")]]
    assert [(m.role, m.content) for m in provider.calls[0]] == [("user", "hello")]
    assert result.entries[0] == InputEntry(role="user", content="hello")
    assert [e.content for e in await session.load("u")] == ["hello", "hi"]


async def test_a_refused_run_resumed_with_resume_only_and_no_input(
    stores: tuple[Any, Any],
) -> None:
    session, cp = stores
    always: list[int] = []

    def guard(messages: Any, ctx: Any) -> str:
        always.append(len(messages))
        return "never"

    provider = ScriptedProvider([text("hi")])
    agent = Agent("a", model=provider, input_guardrails=[guard])
    with pytest.raises(GuardrailTripped):
        await Runner.run(agent, "hello", checkpoint=CheckpointOptions(cp, "r1"))
    again = CheckpointOptions(cp, "r1", if_run_exists="resume_only")
    with pytest.raises(GuardrailTripped):
        await Runner.run(agent, [], session=session, session_id="u", checkpoint=again)
    assert always == [1, 1]
    assert provider.calls == []  # the refused input never reaches the model
    snap = await cp.load("r1")
    assert snap is not None and snap.status == "failed"
    assert snap.entries == [InputEntry(role="user", content="hello")]
    assert await session.load("u") == []


RAN: list[int] = []


@tool
async def work(x: int) -> str:
    """Record the call, then wait a little."""
    RAN.append(x)
    await asyncio.sleep(0.05)
    return f"w{x}"


@pytest.mark.parametrize("how", ["stream", "hook"])
async def test_a_cancel_heard_when_a_batch_starts_starts_none_of_its_calls(
    stores: tuple[Any, Any], how: str
) -> None:
    # found: the first call's ToolCallStarted was heard, yet both async calls of the batch
    # started (and were cancelled half done, so a resume ran them a second time)
    _, cp = stores
    RAN.clear()
    hooks = AgentHooks()
    if how == "hook":

        @hooks.on(ToolCallStarted)
        def stop(event: Any, ctx: Any) -> None:
            if not RAN and not ctx.cancel_token.cancelled:
                ctx.cancel_token.cancel("stop")

    script = [batch(("work", {"x": 1}, "c1"), ("work", {"x": 2}, "c2")), text("done")]
    agent = Agent("a", model=ScriptedProvider(script), tools=[work], hooks=hooks)
    handle = Runner.stream(agent, "go", checkpoint=CheckpointOptions(cp, "r"))
    async for event in handle:
        if how == "stream" and isinstance(event, ToolCallStarted):
            handle.cancel("stop")
    with pytest.raises(RunCancelled):
        await handle.result()
    assert RAN == []
    snap = await cp.load("r")
    assert snap is not None and snap.status == "interrupted"
    assert [e.type for e in snap.entries] == ["input", "tool_call", "tool_call"]
    hooks_off = agent.clone(hooks=None)
    result = await Runner.run(hooks_off, "go", checkpoint=CheckpointOptions(cp, "r"))
    assert result.output == "done"
    assert sorted(RAN) == [1, 2]  # each call ran once in all
    assert [e.output for e in result.entries if isinstance(e, ToolResultEntry)] == ["w1", "w2"]


async def test_checkpoint_misuse_says_what_0_9_119_said(stores: tuple[Any, Any]) -> None:
    # a user's ``pytest.raises(UserError, match=...)`` written against 0.9.119's words
    session, cp = stores
    agent = Agent("a", model=ScriptedProvider([text("one")]))
    await Runner.run(agent, "hi", checkpoint=CheckpointOptions(cp, "r1"))
    with pytest.raises(UserError, match=r"A run already exists for run_id='r1' \(status='comp"):
        await Runner.run(agent, "hi", checkpoint=CheckpointOptions(cp, "r1", if_run_exists="fail"))
    only = CheckpointOptions(cp, "nope", if_run_exists="resume_only")
    with pytest.raises(UserError, match="No snapshot found for run_id='nope'"):
        await Runner.run(agent, [], checkpoint=only)
    with pytest.raises(UserError, match=r"if_run_exists must be one of \['fail', 'restart'"):
        CheckpointOptions(cp, "r", if_run_exists="bogus")  # type: ignore[arg-type]
    for bad in ("", "  ", 5):
        with pytest.raises(UserError, match="checkpoint run_id must be a non-empty string"):
            CheckpointOptions(cp, bad)  # type: ignore[arg-type]
    snap = await cp.load("r1")
    with pytest.raises(UserError, match="checkpoint run_id 'r2' does not match resume_from"):
        CheckpointOptions(cp, "r2", resume_from=snap)
    for call_it in (
        lambda: session.trim_tool_results("u", keep_chars=-1),
        lambda: session.trim_tool_results("u", keep_runs=-1),
        lambda: session.rewind("u", keep_entries=-1),
    ):
        with pytest.raises(ValueError, match=r"must be >= 0"):
            await call_it()


async def test_hooks_see_the_run_input_in_ctx_entries_from_run_started(
    stores: tuple[Any, Any],
) -> None:
    # 0.9.119: the input is in the live transcript when RunStarted is heard (it was not here)
    session, cp = stores
    await session.append("u", [InputEntry(role="user", content="before")], run_id="old")
    seen: dict[str, list[Any]] = {}
    hooks = AgentHooks()

    @hooks.on(RunStarted)
    def started(event: Any, ctx: Any) -> None:
        seen["started"] = [e.content for e in ctx.entries]

    agent = Agent("a", instructions="sys", model=ScriptedProvider([text("ok")]), hooks=hooks)
    opts = CheckpointOptions(cp, "r1")
    await Runner.run(agent, "now", session=session, session_id="u", checkpoint=opts)
    assert seen["started"] == ["sys", "before", "now"]


async def test_a_run_that_fails_in_its_setup_is_resubmitted_with_its_new_input(
    stores: tuple[Any, Any],
) -> None:
    # 0.9.119 stores nothing for such a run, so the next submission is a new run
    _, cp = stores

    def broken(ctx: Any) -> str:
        raise RuntimeError("instructions broke")

    opts = CheckpointOptions(cp, "r1")
    with pytest.raises(RuntimeError):
        await Runner.run(
            Agent("a", instructions=broken, model=ScriptedProvider([])), "x", checkpoint=opts
        )
    fixed = Agent("a", model=ScriptedProvider([text("ok")]))
    result = await Runner.run(fixed, "second", checkpoint=opts)
    assert [e.content for e in result.entries] == ["second", "ok"]


class _Out(BaseModel):
    n: int


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        ("not json", "Model output is not valid JSON"),
        ('{"n": "x"}', "Failed to parse output as _Out"),
    ],
)
async def test_an_answer_that_does_not_fit_says_what_0_9_119_said(answer: str, words: str) -> None:
    agent = Agent(
        "a", model=ScriptedProvider([text(answer)]), output_type=_Out, output_repair=False
    )
    with pytest.raises(OutputValidationError, match=words):
        await Runner.run(agent, "x")


async def test_a_replay_whose_agent_is_gone_warns_on_0_9_119s_logger(
    stores: tuple[Any, Any], caplog: pytest.LogCaptureFixture
) -> None:
    _, cp = stores
    b = Agent("b", model=ScriptedProvider([text("from b")]))
    a = Agent("a", model=ScriptedProvider([call("transfer_to_b", {})]), handoffs=[b])
    await Runner.run(a, "go", checkpoint=CheckpointOptions(cp, "r"))
    alone = Agent("a", model=ScriptedProvider([]))
    with caplog.at_level(logging.WARNING, logger="lovia.runtime.loop"):
        result = await Runner.run(alone, "go", checkpoint=CheckpointOptions(cp, "r"))
    assert result.output == "from b" and result.final_agent is alone
    [record] = [r for r in caplog.records if "no longer reachable" in r.getMessage()]
    assert record.name == "lovia.runtime.loop" and "'b'" in record.getMessage()


@pytest.mark.parametrize("policy", ["resume_only", "fail"])
async def test_a_run_that_failed_in_its_setup_counts_as_not_stored(
    stores: tuple[Any, Any], policy: str
) -> None:
    # 0.9.119 stores nothing for it: resume_only finds no run (it used to call the model with
    # an empty prompt here), fail lets the run start
    _, cp = stores

    def broken(ctx: Any) -> str:
        raise RuntimeError("instructions broke")

    first = Agent("a", instructions=broken, model=ScriptedProvider([]))
    with pytest.raises(RuntimeError):
        await Runner.run(first, "x", checkpoint=CheckpointOptions(cp, "r1"))
    provider = ScriptedProvider([text("ok")])
    opts = CheckpointOptions(cp, "r1", if_run_exists=policy)  # type: ignore[arg-type]
    if policy == "resume_only":
        with pytest.raises(UserError, match="No snapshot found for run_id='r1'"):
            await Runner.run(Agent("a", model=provider), [], checkpoint=opts)
        assert provider.calls == []
    else:
        result = await Runner.run(Agent("a", model=provider), "second", checkpoint=opts)
        assert [e.content for e in result.entries] == ["second", "ok"]


@tool
def _same() -> str:
    """One."""
    return "1"


@tool(name="_same")
def _same_again() -> str:
    """Two."""
    return "2"


MISUSE_WORDS = {
    "two tools with one name": (
        lambda: Agent("a", model=ScriptedProvider([]), tools=[_same, _same_again]),
        {},
        "Tool name conflict for '_same' from agent.tools",
    ),
    "an unknown model prefix": (
        lambda: Agent("a", model="nonsense:thing"),
        {},
        "Unknown model spec: 'nonsense:thing'",
    ),
    "a session without session_id": (
        lambda: Agent("a", model=ScriptedProvider([])),
        {"session": "memory"},
        "session_id is required when session is provided",
    ),
    "no model": (lambda: Agent("a"), {}, "Agent 'a' has no model configured"),
}


@pytest.mark.parametrize("case", list(MISUSE_WORDS))
async def test_misuse_says_what_0_9_119_said(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOVIA_MODEL", raising=False)
    make, kwargs, words = MISUSE_WORDS[case]
    if kwargs.get("session") == "memory":
        from lovia import InMemorySession

        kwargs = {"session": InMemorySession()}
    with pytest.raises(UserError, match=words):
        await Runner.run(make(), "x", **kwargs)


@pytest.mark.parametrize("limit", [0, 2])
async def test_max_turns_says_what_0_9_119_said(limit: int) -> None:
    from lovia import MaxTurnsExceeded

    @tool
    def again() -> str:
        """Again."""
        return "more"

    script = [call("again", {}, call_id=f"c{i}") for i in range(3)]
    agent = Agent("a", model=ScriptedProvider(script), tools=[again])
    with pytest.raises(MaxTurnsExceeded, match=f"Run exceeded max_turns={limit} without producing"):
        await Runner.run(agent, "x", max_turns=limit)


def test_run_sync_inside_a_loop_says_what_0_9_119_said() -> None:
    async def inside() -> None:
        Runner.run_sync(Agent("a", model=ScriptedProvider([text("x")])), "x")

    with pytest.raises(UserError, match=r"Runner.run_sync\(\) cannot be called from a running"):
        asyncio.run(inside())


async def test_a_tool_timeout_is_still_a_timeout_error() -> None:
    # 0.9.119's ToolCallFailed.error was the TimeoutError itself; ``except TimeoutError``
    # and ``isinstance(error, TimeoutError)`` in users' hooks keep working
    from lovia import ToolError
    from lovia.events import ToolCallFailed

    @tool(timeout=0.01)
    async def stuck() -> str:
        """Never answers in time."""
        await asyncio.Event().wait()
        return "never"

    failures: list[BaseException] = []
    hooks = AgentHooks()
    hooks.on(ToolCallFailed)(lambda event, ctx: failures.append(event.error))
    script = [call("stuck", {}), text("gave up")]
    agent = Agent("a", model=ScriptedProvider(script), tools=[stuck], hooks=hooks)
    result = await Runner.run(agent, "x")
    [error] = failures
    assert isinstance(error, TimeoutError) and isinstance(error, ToolError)
    [res] = [e for e in result.entries if isinstance(e, ToolResultEntry)]
    assert res.is_error and "timed out" in res.output
