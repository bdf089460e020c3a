"""A handoff switches agents after its turn's calls; until then the head keeps the transfer as
``pending_handoff``, so a run that stops in between (a later call of that turn, the target's
plugin setup, its system prompt) resumes with the switch still to make (C11, as 0.9.119)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from lovia import (
    Agent,
    AgentHooks,
    CheckpointOptions,
    Handoff,
    InputEntry,
    RunCancelled,
    RunHead,
    Runner,
    SQLiteCheckpointer,
    ToolCallEntry,
    ToolResultEntry,
    UserError,
    events,
    tool,
)
from lovia.plugins import PluginInstance
from lovia.testing import ScriptedProvider, batch, call, text


@pytest.fixture
def cp(tmp_path: Path) -> SQLiteCheckpointer:
    return SQLiteCheckpointer(tmp_path / "runs.db")


def tool_outputs(entries: list[Any]) -> list[str]:
    return [e.output for e in entries if isinstance(e, ToolResultEntry)]


async def test_a_call_after_the_transfer_that_stops_the_run_leaves_the_switch_pending(
    cp: SQLiteCheckpointer,
) -> None:
    pings: list[str] = []
    fired: list[str] = []

    @tool
    async def ping() -> str:
        pings.append("ping")
        if len(pings) == 1:
            raise RunCancelled("stopped during ping")
        return "pong"

    async def on_handoff(args: dict[str, Any], ctx: Any) -> None:
        fired.append(args.get("reason", ""))

    b_model = ScriptedProvider([text("from b")])
    b = Agent(name="b", model=b_model)
    a = Agent(
        name="a",
        model=ScriptedProvider([batch(("transfer_to_b", {"reason": "r"}), ("ping", {}))]),
        tools=[ping],
        handoffs=[Handoff(target=b, on_handoff=on_handoff)],
    )
    with pytest.raises(RunCancelled):
        await Runner.run(a, "go", checkpoint=CheckpointOptions(cp, "h1"))
    snap = await cp.load("h1")
    assert snap is not None and snap.status == "interrupted"
    assert (snap.agent_name, snap.pending_handoff) == ("a", "b")

    result = await Runner.run(a, [], checkpoint=CheckpointOptions(cp, "h1"))
    assert result.output == "from b" and result.final_agent is b
    assert tool_outputs(result.entries) == ["Transferred to b (r)", "pong"]
    assert fired == ["r"] and pings == ["ping", "ping"]
    done = await cp.load("h1")
    assert done is not None and (done.agent_name, done.pending_handoff) == ("b", None)


class FlakySetup:
    name = "flaky"

    def __init__(self) -> None:
        self.failures = 1

    async def setup(self, ctx: Any) -> PluginInstance:
        if self.failures:
            self.failures -= 1
            raise ValueError("plugin down")
        return PluginInstance()


async def test_a_target_whose_plugin_setup_fails_is_switched_to_on_resume(
    cp: SQLiteCheckpointer,
) -> None:
    seen_at_failure: list[str] = []
    hooks = AgentHooks()

    @hooks.on(events.RunFailed)
    async def failed(event: events.RunFailed, ctx: Any) -> None:
        seen_at_failure.append(ctx.agent.name)

    b = Agent(name="b", model=ScriptedProvider([text("from b")]), plugins=[FlakySetup()])
    a = Agent(
        name="a", model=ScriptedProvider([call("transfer_to_b", {})]), handoffs=[b], hooks=hooks
    )
    with pytest.raises(ValueError, match="plugin down"):
        await Runner.run(a, "go", checkpoint=CheckpointOptions(cp, "h2"))
    assert seen_at_failure == ["a"]  # the handing-off agent is active again
    snap = await cp.load("h2")
    assert snap is not None and snap.status == "failed"
    assert (snap.agent_name, snap.pending_handoff) == ("a", "b")

    result = await Runner.run(a, [], checkpoint=CheckpointOptions(cp, "h2"))
    assert result.output == "from b" and result.final_agent is b


async def test_a_target_whose_prompt_fails_to_render_is_switched_to_on_resume(
    cp: SQLiteCheckpointer,
) -> None:
    renders = 0

    def instructions(ctx: Any) -> str:
        nonlocal renders
        renders += 1
        if renders == 1:
            raise ValueError("prompt down")
        return "You are b."

    b_model = ScriptedProvider([text("from b")])
    b = Agent(name="b", instructions=instructions, model=b_model)
    a = Agent(name="a", model=ScriptedProvider([call("transfer_to_b", {})]), handoffs=[b])
    with pytest.raises(ValueError, match="prompt down"):
        await Runner.run(a, "go", checkpoint=CheckpointOptions(cp, "h3"))
    snap = await cp.load("h3")
    assert snap is not None and (snap.agent_name, snap.pending_handoff) == ("a", "b")

    result = await Runner.run(a, [], checkpoint=CheckpointOptions(cp, "h3"))
    assert result.output == "from b" and result.final_agent is b
    assert [m.content for m in b_model.calls[0] if m.role == "system"] == ["You are b."]


async def test_a_head_with_a_pending_handoff_resumes_as_its_target(
    cp: SQLiteCheckpointer,
) -> None:
    """The head shape 0.9.119 writes: the active agent, and the transfer not applied yet."""
    entries = [
        InputEntry(role="user", content="go"),
        ToolCallEntry(call_id="t1", name="transfer_to_b", arguments="{}"),
        ToolResultEntry(call_id="t1", output="Transferred to b"),
    ]
    head = RunHead(agent_name="a", turns=1, status="interrupted", pending_handoff="b")
    await cp.append("h4", entries, head)
    a_model = ScriptedProvider([])
    b = Agent(name="b", model=ScriptedProvider([text("from b")]))
    a = Agent(name="a", model=a_model, handoffs=[b])
    result = await Runner.run(a, [], checkpoint=CheckpointOptions(cp, "h4"))
    assert result.output == "from b" and result.final_agent is b
    assert a_model.calls == []


async def test_a_pending_handoff_to_an_agent_the_active_one_cannot_reach_is_refused(
    cp: SQLiteCheckpointer,
) -> None:
    head = RunHead(agent_name="a", turns=1, status="interrupted", pending_handoff="ghost")
    await cp.append("h5", [InputEntry(role="user", content="go")], head)
    before = await cp.load("h5")
    model = ScriptedProvider([text("never")])
    a = Agent(name="a", model=model, handoffs=[Agent(name="b", model=model)])
    with pytest.raises(UserError, match="ghost") as info:
        await Runner.run(a, [], checkpoint=CheckpointOptions(cp, "h5"))
    assert info.value.hint
    assert model.calls == [] and await cp.load("h5") == before


def graph_with_two_workers() -> Agent:
    left = Agent(name="sales", handoffs=[Agent(name="worker", model=ScriptedProvider([]))])
    right = Agent(name="support", handoffs=[Agent(name="worker", model=ScriptedProvider([]))])
    return Agent(name="triage", model=ScriptedProvider([]), handoffs=[left, right])


async def test_resuming_where_two_different_agents_share_a_name_is_refused(
    cp: SQLiteCheckpointer,
) -> None:
    head = RunHead(agent_name="worker", turns=1, status="interrupted")
    await cp.append("h6", [InputEntry(role="user", content="go")], head)
    before = await cp.load("h6")
    with pytest.raises(UserError, match="'worker'") as info:
        await Runner.run(graph_with_two_workers(), [], checkpoint=CheckpointOptions(cp, "h6"))
    assert info.value.hint
    assert await cp.load("h6") == before


async def test_replaying_a_run_whose_agent_name_is_shared_reports_the_entry_agent(
    cp: SQLiteCheckpointer, caplog: pytest.LogCaptureFixture
) -> None:
    head = RunHead(agent_name="worker", turns=1, status="completed", output="done")
    await cp.append("h7", [InputEntry(role="user", content="go")], head)
    entry = graph_with_two_workers()
    with caplog.at_level(logging.WARNING, logger="lovia"):
        result = await Runner.run(entry, [], checkpoint=CheckpointOptions(cp, "h7"))
    assert result.output == "done" and result.final_agent is entry
    assert any("worker" in r.getMessage() for r in caplog.records if r.name.startswith("lovia"))


async def test_C3_once_the_switch_is_made_the_stored_head_names_the_target(
    cp: SQLiteCheckpointer,
) -> None:
    """The head names the active agent (C3, C11). Found by the seed page's check: after the
    switch, while the target's first model call ran, the stored head still named the agent
    that handed off (the target only in ``pending_handoff``), so ``lovia runs show`` or a
    hook reading the checkpoint saw the wrong agent; 0.9.119 names the target."""
    seen: list[tuple[str, str | None]] = []

    class Peek(ScriptedProvider):
        def stream(self, *args: Any, **kwargs: Any) -> Any:
            stored = cp_now.pop()
            seen.append((stored.agent_name, stored.pending_handoff))
            return super().stream(*args, **kwargs)

    cp_now: list[Any] = []
    spanish = Agent("Spanish", instructions="reply in Spanish", model=Peek([text("Hola!")]))

    async def before_model(event: Any, ctx: Any) -> None:
        cp_now.append(await cp.load("h1"))

    hooks = AgentHooks()
    hooks.on(events.TurnStarted)(before_model)
    english = Agent(
        "English",
        model=ScriptedProvider([call("transfer_to_spanish", {})]),
        handoffs=[spanish],
        hooks=hooks,
    )
    done = await Runner.run(english, "Hola", checkpoint=CheckpointOptions(cp, "h1"))
    assert (done.output, done.final_agent.name) == ("Hola!", "Spanish")
    assert seen == [("Spanish", None)]
