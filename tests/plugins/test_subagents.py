"""Background subagents: spawn returns at once, the report reaches the parent once (pushed as
a message or collected by wait_subagents), bounded children end with the run, detached ones
report through deliver, and checkpointed children survive a SIGKILL of the parent."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from lovia import Agent, RunContext, Runner, Subagents, tool
from lovia.plugins import SubagentReport
from lovia.testing import ScriptedProvider, batch, call, text


def result_of(entries: list[Any], call_id: str) -> str:
    return next(e.output for e in entries if e.type == "tool_result" and e.call_id == call_id)


async def test_spawn_and_wait_give_the_report_once_and_count_its_tokens() -> None:
    child = Agent(name="researcher", model=ScriptedProvider([text("tides: twice a day")]))
    parent_model = ScriptedProvider(
        [
            batch(("spawn_subagent", {"prompt": "tides?"}, "s"), ("wait_subagents", {}, "w")),
            text("final"),
        ]
    )
    parent = Agent(name="p", model=parent_model, plugins=[Subagents([child])])
    result = await Runner.run(parent, "go")
    assert "t1" in result_of(result.entries, "s")
    assert result_of(result.entries, "w").startswith(
        "[subagent t1: done] agent=researcher elapsed="
    )
    last_view = "\n".join(m.text for m in parent_model.calls[1])
    assert last_view.count("tides: twice a day") == 1  # withdrawn from the mailbox
    assert result.usage.total_tokens == 6  # the child's two tokens counted in the parent's


async def test_a_report_arrives_as_a_message_at_the_next_turn() -> None:
    @tool
    async def until_reported(ctx: RunContext[Any]) -> str:
        """Wait for a report."""
        while not ctx.mailbox:  # noqa: ASYNC110 - the mailbox has no event to wait on
            await asyncio.sleep(0.01)
        return "ok"

    child = Agent(name="c", model=ScriptedProvider([text("found it")]))
    parent_model = ScriptedProvider(
        [
            batch(("spawn_subagent", {"prompt": "look"}, "s"), ("until_reported", {}, "u")),
            call("wait_subagents", {}, call_id="w"),
            text("done"),
        ]
    )
    parent = Agent(name="p", model=parent_model, tools=[until_reported], plugins=[Subagents(child)])
    result = await Runner.run(parent, "go")
    pushed = [m.text for m in parent_model.calls[1] if m.text.startswith("[subagent t1: done]")]
    assert len(pushed) == 1 and "found it" in pushed[0]
    assert "already delivered" in result_of(result.entries, "w")


async def test_bounded_children_end_with_the_run_and_are_reminded_of() -> None:
    never = asyncio.Event()

    @tool
    async def forever() -> str:
        """Block."""
        await never.wait()
        return "x"

    child = Agent(
        name="slow", model=ScriptedProvider([call("forever", {}), text("x")]), tools=[forever]
    )
    parent_model = ScriptedProvider([call("spawn_subagent", {"prompt": "p"}), text("bye")])
    parent = Agent(name="p", model=parent_model, plugins=[Subagents(child)])
    before = asyncio.all_tasks()
    assert (await Runner.run(parent, "go")).output == "bye"
    await asyncio.sleep(0)
    assert asyncio.all_tasks() - before == set()
    reminder = [m.text for m in parent_model.calls[1] if "Background subagents running" in m.text]
    assert len(reminder) == 1 and "t1 slow" in reminder[0]


async def test_detached_children_report_through_deliver_after_the_run() -> None:
    gate = asyncio.Event()

    @tool
    async def hold() -> str:
        """Wait for the gate."""
        await gate.wait()
        return "released"

    reports: list[SubagentReport] = []
    done = asyncio.Event()

    async def deliver(report: SubagentReport) -> None:
        reports.append(report)
        done.set()

    child = Agent(name="c", model=ScriptedProvider([call("hold", {}), text("late")]), tools=[hold])
    parent = Agent(
        name="p",
        model=ScriptedProvider([call("spawn_subagent", {"prompt": "p"}), text("bye")]),
        plugins=[Subagents(child, deliver=deliver)],
    )
    assert (await Runner.run(parent, "go")).output == "bye"
    assert reports == []
    gate.set()
    await asyncio.wait_for(done.wait(), 10)
    [report] = reports
    assert (report.id, report.error) == ("t1", None) and "late" in report.text


async def test_refusals_are_answers_the_model_can_act_on() -> None:
    a, b = Agent(name="a", model=ScriptedProvider([])), Agent(name="b", model=ScriptedProvider([]))
    model = ScriptedProvider(
        [
            batch(
                ("spawn_subagent", {"prompt": " "}, "empty"),
                ("spawn_subagent", {"prompt": "x", "agent": "zz"}, "unknown"),
                ("wait_subagents", {"ids": ["t9"]}, "w"),
                ("send_to_subagent", {"id": "t9", "message": "hi"}, "send"),
            ),
            text("ok"),
        ]
    )
    result = await Runner.run(Agent(name="p", model=model, plugins=[Subagents([a, b])]), "go")
    assert "Nothing spawned" in result_of(result.entries, "empty")
    assert "unknown subagent 'zz'" in result_of(result.entries, "unknown")
    assert "a, b" in result_of(result.entries, "unknown")
    assert "No subagents have been spawned" in result_of(result.entries, "w")
    assert "No subagent 't9'" in result_of(result.entries, "send")


PARENT = textwrap.dedent(
    """
    import asyncio, json, os, signal, sys
    from lovia import Agent, CheckpointOptions, RunContext, Runner, SQLiteCheckpointer
    from lovia import Subagents, tool
    from lovia.testing import ScriptedProvider, call, text

    state = sys.argv[1]

    @tool
    async def checkpoint_then_die(ctx: RunContext) -> str:
        '''Hold the turn until the child has reported, then (the first time) die.'''
        while not ctx.mailbox:
            await asyncio.sleep(0.01)
        if not os.path.exists(state + "/died"):
            open(state + "/died", "w").close()
            os.kill(os.getpid(), signal.SIGKILL)
        return "survived"

    def child_model(messages):
        with open(state + "/child_calls", "a") as out:
            out.write("call\\n")
        return text("the answer is 42")

    def parent_model(messages):
        tools = [m for m in messages if m.role == "tool"]
        if not tools:
            return call("spawn_subagent", {"prompt": "find the answer"}, call_id="spawn")
        if len(tools) == 1:
            return call("checkpoint_then_die", {}, call_id="die")
        seen = "\\n".join(m.text for m in messages)
        if "the answer is 42" not in seen:
            return call("wait_subagents", {}, call_id=f"wait{len(tools)}")
        return text("done")

    async def main():
        cp = SQLiteCheckpointer(state + "/runs.db")
        child = Agent(name="finder", model=ScriptedProvider([child_model] * 2))
        parent = Agent(
            name="boss",
            model=ScriptedProvider([parent_model] * 6),
            tools=[checkpoint_then_die],
            plugins=[Subagents(child, checkpointer=cp)],
        )
        result = await Runner.run(parent, "go", checkpoint=CheckpointOptions(cp, "job"))
        seen = sum(m.text.count("the answer is 42") for m in result.messages)
        print(json.dumps({"output": result.output, "reports": seen}))
        await cp.close()

    asyncio.run(main())
    """
)


def test_a_checkpointed_child_survives_a_sigkill_of_its_parent(tmp_path: Path) -> None:
    script = tmp_path / "parent.py"
    script.write_text(PARENT)
    args = [sys.executable, str(script), str(tmp_path)]
    first = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert first.returncode == -9, first.stderr
    second = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout) == {"output": "done", "reports": 1}
    # the child ran its model once: the resumed parent got its report from the checkpoint
    assert (tmp_path / "child_calls").read_text() == "call\n"


class _GatedModel(ScriptedProvider):
    """A scripted model whose calls wait until ``gate`` is set."""

    def __init__(self, script: list[Any], gate: asyncio.Event) -> None:
        super().__init__(script)
        self.gate = gate

    async def stream(self, entries: Any, **kwargs: Any) -> Any:
        await self.gate.wait()
        async for delta in super().stream(entries, **kwargs):
            yield delta


class _OpeningModel(ScriptedProvider):
    """A scripted model that sets ``gate`` when its call number ``at`` starts, and lets
    other tasks run at the start of each call as a model on the network does."""

    def __init__(self, script: list[Any], gate: asyncio.Event, at: int) -> None:
        super().__init__(script)
        self.gate, self.at = gate, at

    async def stream(self, entries: Any, **kwargs: Any) -> Any:
        if len(self.calls) + 1 == self.at:
            self.gate.set()
        for _ in range(20):  # a real endpoint lets other tasks run (the children start)
            await asyncio.sleep(0)
        async for delta in super().stream(entries, **kwargs):
            yield delta


async def test_a_child_that_ends_after_the_parents_next_turn_still_counts_its_tokens() -> None:
    """Example 30 of 0.9.119 against a real endpoint: the children answer while the parent's
    model is already on its next turn; their tokens count in the parent's usage all the
    same (they were lost when the parent had moved on to a new usage value)."""
    gate = asyncio.Event()
    child = Agent(name="researcher", model=_GatedModel([text("tides: twice a day")], gate))
    parent_model = _OpeningModel(
        [
            call("spawn_subagent", {"prompt": "tides?"}, call_id="s"),
            call("cancel_subagent", {"id": "t9"}, call_id="c"),  # a turn of the parent's own
            call("wait_subagents", {}, call_id="w"),  # the child runs from this call on
            text("final"),
        ],
        gate,
        at=3,
    )
    parent = Agent(name="p", model=parent_model, plugins=[Subagents([child])])
    result = await Runner.run(parent, "go")
    assert "tides: twice a day" in result_of(result.entries, "w")
    assert result.usage.total_tokens == 5 * 2  # four calls of the parent's, one of the child's


async def test_0_9_119s_tool_schemas_report_header_and_delivery() -> None:
    # spawn_subagent's agent is one of the catalog's names (required when there are several,
    # absent for clones); wait_subagents waits whole seconds
    def offered(model: ScriptedProvider) -> dict[str, Any]:
        return {t["function"]["name"]: t["function"]["parameters"] for t in model.tools[0]}

    a = Agent(name="researcher", model=ScriptedProvider([text("a " * 200)]))
    b = Agent(name="writer", model=ScriptedProvider([]))
    seen = []
    for catalog in ([a, b], [a], []):
        model = ScriptedProvider([text("ok")])
        await Runner.run(Agent(name="p", model=model, plugins=[Subagents(catalog)]), "go")
        seen.append(offered(model))
    spawn = [s["spawn_subagent"] for s in seen]
    assert spawn[0]["properties"]["agent"]["enum"] == ["researcher", "writer"]
    assert spawn[0]["required"] == ["agent", "prompt"]
    assert spawn[1]["properties"]["agent"]["type"] == "string"
    assert spawn[1]["required"] == ["prompt"]
    assert "agent" not in spawn[2]["properties"]
    assert seen[0]["wait_subagents"]["properties"]["timeout_seconds"]["type"] == "integer"

    # a child that answers at once is reported by the parent's next turn, as in 0.9.119;
    # a long report keeps its head and its end
    parent_model = ScriptedProvider([call("spawn_subagent", {"prompt": "p"}), text("done")])
    parent = Agent(name="p", model=parent_model, plugins=[Subagents([a], max_result_chars=60)])
    result = await Runner.run(parent, "go")
    [report] = [e.content for e in result.entries if e.type == "input" and e.role == "user"][1:]
    header, body = report.split("\n", 1)
    assert header == "[subagent t1: done] agent=researcher elapsed=0s"
    assert body.startswith("a " * 20) and "[340 chars truncated]" in body
    assert body.endswith("a " * 10)
