"""api.md's "Behaviour details that are part of the contract", on every store lovia ships:
each was run on this project and on lovia 0.9.119 and agrees on both, or api.md decides
(said where it does)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from lovia import (
    Agent,
    AgentHooks,
    CheckpointOptions,
    Compaction,
    InMemorySession,
    RunCancelled,
    RunContext,
    Runner,
    tool,
)
from lovia import events as ev
from lovia.context import FileResultStore, InMemoryResultStore
from lovia.testing import ScriptedProvider, batch, call, text
from lovia.transcript import entry_to_dict


@tool
def plain() -> str:
    """Answer at once."""
    return "p"


@tool  # async: the calls of one turn finish in call order (sync ones, on threads: any order)
async def sized(n: int) -> str:
    """n characters."""
    return "s" * n


class Point(BaseModel):
    x: int


@dataclasses.dataclass
class Pair:
    a: int
    b: str


@tool
def model_value() -> Point:
    """A model."""
    return Point(x=1)


@tool
def dataclass_value() -> Pair:
    """A dataclass."""
    return Pair(1, "b")


@tool
def tuple_value() -> tuple[int, int]:
    """A tuple."""
    return (1, 2)


async def test_a_cancel_with_a_reason_then_a_resume_gives_the_whole_run(stores: Any) -> None:
    """A tool cancels with a reason and keeps its result; the head is interrupted with the
    reason as 0.9.119 stores it ({type, message}); resume_only then finishes the run, whose
    result, context and session segment all start at the original input."""
    session, cp = stores
    await Runner.run(
        Agent("a", model=ScriptedProvider([text("hist")])), "old", session=session, session_id="S"
    )
    stops = 0

    @tool
    def stopper(ctx: RunContext[Any]) -> str:
        nonlocal stops
        stops += 1
        if stops == 1:
            ctx.cancel_token.cancel("pause here")
        return f"s{stops}"

    first = ScriptedProvider([call("plain", {}), call("stopper", {}), text("x")])
    options = CheckpointOptions(cp, "R")
    with pytest.raises(RunCancelled, match="pause here"):
        await Runner.run(
            Agent("a", model=first, tools=[stopper, plain]),
            "go",
            session=session,
            session_id="S",
            checkpoint=options,
        )
    snap = await cp.load("R")
    assert snap.status == "interrupted" and snap.turns == 2
    assert snap.error == {"type": "RunCancelled", "message": "pause here"}
    assert [e.output for e in snap.entries if e.type == "tool_result"] == ["p", "s1"]
    assert len(await session.segments("S")) == 1  # an interrupted run is not appended

    contexts: list[tuple[int, str | None, str | None, list[str]]] = []

    @tool
    def look(ctx: RunContext[Any]) -> str:
        contexts.append((ctx.turn, ctx.run_id, ctx.session_id, [e.type for e in ctx.entries]))
        return "l"

    second = ScriptedProvider([call("look", {}, call_id="z"), text("fin")])
    handle = Runner.stream(
        Agent("a", instructions="SYS", model=second, tools=[stopper, plain, look]),
        [],
        session=session,
        session_id="S",
        checkpoint=CheckpointOptions(cp, "R", if_run_exists="resume_only"),
    )
    turns = [e.turn async for e in handle if isinstance(e, ev.TurnStarted)]
    result = await handle.result()

    assert turns == [3, 4] and result.turns == 4 and result.output == "fin"
    assert result.entries[0].type == "input" and result.entries[0].content == "go"
    assert [e.output for e in result.entries if e.type == "tool_result"] == ["p", "s1", "l"]
    assert contexts == [
        (
            3,
            "R",
            "S",
            ["input", "input", "assistant_text"] + [e.type for e in result.entries[:-2]],
        )
    ]
    assert [(m.role, m.content) for m in second.calls[0][:3]] == [
        ("system", "SYS"),
        ("user", "old"),
        ("assistant", "hist"),
    ]
    segments = await session.segments("S")
    assert [s.run_id for s in segments][1] == "R"
    assert [e.type for e in segments[1].entries] == [e.type for e in result.entries]
    assert (await cp.load("R")).status == "completed"


async def test_delete_on_success_deletes_after_the_append_and_the_id_then_replays(
    stores: Any,
) -> None:
    """While a tool runs the snapshot exists; by the terminal event (hook and stream alike)
    the segment is in the session and the snapshot is gone; the same id again replays from
    the segment with no model call (api.md)."""
    session, cp = stores
    seen: list[tuple[str, Any, int]] = []

    @tool
    async def probe() -> str:
        snap = await cp.load("R")
        seen.append(("tool", snap and snap.status, len(await session.segments("S"))))
        return "p"

    hooks = AgentHooks()

    @hooks.on(ev.RunCompleted)
    async def done(event: Any, ctx: Any) -> None:
        snap = await cp.load("R")
        seen.append(("hook", snap and snap.status, len(await session.segments("S"))))

    options = CheckpointOptions(cp, "R", delete_on_success=True)
    model = ScriptedProvider([call("probe", {}), text("done")])
    handle = Runner.stream(
        Agent("a", model=model, tools=[probe], hooks=hooks),
        "go",
        session=session,
        session_id="S",
        checkpoint=options,
    )
    async for event in handle:
        if isinstance(event, ev.RunCompleted):
            snap = await cp.load("R")
            seen.append(("event", snap and snap.status, len(await session.segments("S"))))
    first = await handle.result()

    assert seen == [("tool", "running", 0), ("hook", None, 1), ("event", None, 1)]
    assert await cp.load("R") is None

    again = ScriptedProvider([text("new")])
    replayed = await Runner.run(
        Agent("a", model=again), "go", session=session, session_id="S", checkpoint=options
    )
    assert replayed.output == "done" and again.calls == []
    assert [e.type for e in replayed.entries] == [e.type for e in first.entries]
    assert len(await session.segments("S")) == 1 and await cp.load("R") is None


async def test_delete_on_success_keeps_a_failed_run_until_its_resume_succeeds(
    stores: Any,
) -> None:
    session, cp = stores
    options = CheckpointOptions(cp, "X", delete_on_success=True)
    with pytest.raises(AssertionError):
        await Runner.run(
            Agent("a", model=ScriptedProvider([])),
            "go",
            session=session,
            session_id="S",
            checkpoint=options,
        )
    snap = await cp.load("X")
    assert snap.status == "failed" and snap.error["type"] == "AssertionError"
    assert "hint" not in snap.error  # 0.9.119 stores {type, message}
    assert await session.segments("S") == []

    result = await Runner.run(
        Agent("a", model=ScriptedProvider([text("fixed")])),
        [],
        session=session,
        session_id="S",
        checkpoint=options,
    )
    assert result.output == "fixed" and [e.type for e in result.entries] == [
        "input",
        "assistant_text",
    ]
    assert await cp.load("X") is None
    assert [[e.type for e in s.entries] for s in await session.segments("S")] == [
        ["input", "assistant_text"]
    ]


async def test_a_replay_calls_no_hook_and_no_guardrail_and_streams_one_event(
    stores: Any,
) -> None:
    """api.md decides the one event (0.9.119 also streams RunStarted, see docs/compat.md)."""
    session, cp = stores
    options = CheckpointOptions(cp, "R")
    await Runner.run(
        Agent("a", model=ScriptedProvider([call("plain", {}), text("x")]), tools=[plain]),
        "go",
        session=session,
        session_id="S",
        checkpoint=options,
    )
    called: list[str] = []
    hooks = AgentHooks()
    hooks.on_any(lambda event, ctx: called.append(type(event).__name__))

    def trip_in(messages: Any, ctx: Any) -> str:
        called.append("input guardrail")
        return "no"

    def trip_out(output: Any, ctx: Any) -> str:
        called.append("output guardrail")
        return "no"

    agent = Agent(
        "a",
        model=ScriptedProvider([]),
        tools=[plain],
        hooks=hooks,
        input_guardrails=[trip_in],
        output_guardrails=[trip_out],
    )
    handle = Runner.stream(
        agent, "another input", session=session, session_id="S", checkpoint=options
    )
    events = [e async for e in handle]
    result = await handle.result()

    assert [type(e) for e in events] == [ev.RunCompleted] and called == []
    assert result.output == "x" and result.finish_reason is None and result.turns == 2
    assert result.entries[0].content == "go"  # the stored run, not the new input
    assert len(await session.segments("S")) == 1


async def test_trim_and_rewind_counts_on_every_store(stores: Any) -> None:
    session, _ = stores
    runs = [
        ([batch(("sized", {"n": 1000}), ("sized", {"n": 10})), text("x")], "one"),
        ([call("sized", {"n": 900}), text("y")], "two"),
        ([call("sized", {"n": 800}), text("z")], "three"),
    ]
    for script, prompt in runs:
        agent = Agent("a", model=ScriptedProvider(script), tools=[sized])
        await Runner.run(agent, prompt, session=session, session_id="S")

    assert await session.trim_tool_results("S", keep_chars=100, keep_runs=1) == 2
    outputs = [e.output for e in await session.load("S") if e.type == "tool_result"]
    assert [o[:100] for o in outputs[:3]] == ["s" * 100, "s" * 10, "s" * 100]
    assert "900" in outputs[0][100:] and "800" in outputs[2][100:]  # how many were cut
    assert outputs[3] == "s" * 800  # the last run is kept whole
    assert await session.trim_tool_results("S", keep_chars=100, keep_runs=1) == 0
    assert await session.trim_tool_results("S", keep_chars=50, keep_runs=1) == 0  # trimmed once
    assert await session.trim_tool_results("S", keep_chars=100, keep_runs=0) == 1
    assert await session.trim_tool_results("nobody") == 0

    total = len(await session.load("S"))
    assert total == 14
    assert await session.rewind("S", keep_entries=total + 5) == 0
    # keep [input, call, call]: both results are cut, so both calls go too
    assert await session.rewind("S", keep_entries=3) == 13
    assert [e.type for e in await session.load("S")] == ["input"]
    assert await session.rewind("S", keep_entries=0) == 1
    assert await session.segments("S") == []
    assert await session.rewind("nobody", keep_entries=0) == 0


@pytest.mark.parametrize("kind", ["memory", "file"])
async def test_a_huge_earlier_result_becomes_a_marker_any_later_run_can_recall(
    kind: str, tmp_path: Path
) -> None:
    """api.md: with an 8k window and a store, the huge earlier result leaves the view for a
    marker naming ``recall_tool_result("<ref>")``, with no summarizer call; the ref then
    brings the whole output back, from another agent's run too; an unknown ref is a plain
    result."""
    store = InMemoryResultStore() if kind == "memory" else FileResultStore(tmp_path / "results")
    huge = "abcdefghij" * 4000

    @tool
    def fetch() -> str:
        """A big page."""
        return huge

    policy = Compaction(context_window=8_000, reserve_output_tokens=1_000, store=store)
    model = ScriptedProvider([call("fetch", {}), call("plain", {}), text("done")])
    handle = Runner.stream(
        Agent("a", model=model, tools=[fetch, plain], context_policy=policy), "go"
    )
    events = [e async for e in handle]
    result = await handle.result()

    assert result.output == "done" and len(model.calls) == 3  # no summarizer call
    assert any(isinstance(e, ev.ContextCompacted) for e in events)
    (marker,) = [m.content for m in model.calls[2] if m.role == "tool" and m.content != "p"]
    (ref,) = re.findall(r'recall_tool_result\("([^"]+)"\)', marker)
    assert huge not in marker
    assert next(e.output for e in result.entries if e.type == "tool_result") == huge

    later = ScriptedProvider(
        [
            batch(
                ("recall_tool_result", {"ref": ref}, "r1"),
                ("recall_tool_result", {"ref": "x"}, "r2"),
            ),
            text("ok"),
        ]
    )
    other = await Runner.run(
        Agent("b", model=later, context_policy=Compaction(store=store)), "again"
    )
    results = {e.call_id: e for e in other.entries if e.type == "tool_result"}
    assert results["r1"].output == huge and not results["r1"].is_error
    assert not results["r2"].is_error and "not found" in results["r2"].output  # api.md's words


async def test_a_session_run_context_lists_system_history_then_this_run() -> None:
    session = InMemorySession()
    await Runner.run(
        Agent("a", model=ScriptedProvider([text("h")])), "hist", session=session, session_id="S"
    )
    seen: list[Any] = []

    @tool
    def look(ctx: RunContext[Any]) -> str:
        seen.append([(e.type, getattr(e, "role", None)) for e in ctx.entries])
        seen.append((ctx.session_id, ctx.turn, ctx.deps, ctx.run_id is not None))
        return "k"

    model = ScriptedProvider([call("look", {}), text("x")])
    result = await Runner.run(
        Agent("a", instructions="SYS", model=model, tools=[look]),
        "go",
        session=session,
        session_id="S",
        deps=[1],
    )
    assert seen == [
        [
            ("input", "system"),
            ("input", "user"),
            ("assistant_text", None),
            ("input", "user"),
            ("tool_call", None),
        ],
        ("S", 1, [1], True),
    ]
    assert [e.type for e in result.entries] == [
        "input",
        "tool_call",
        "tool_result",
        "assistant_text",
    ]


async def test_each_serial_call_starts_with_every_earlier_result_saved(stores: Any) -> None:
    """api.md: when a tool starts, the checkpoint holds every call of the turn and every
    result that finished before it, earlier calls of the same turn included."""
    _, cp = stores
    seen: list[tuple[int, int, list[str]]] = []

    @tool(parallel=False)
    async def step(n: int) -> str:
        snap = await cp.load("R")
        calls = sum(e.type == "tool_call" for e in snap.entries)
        seen.append((n, calls, [e.output for e in snap.entries if e.type == "tool_result"]))
        return f"s{n}"

    asked = [("step", {"n": 1}), ("plain", {}), ("step", {"n": 2}), ("step", {"n": 3})]
    model = ScriptedProvider([call("plain", {}, call_id="p0"), batch(*asked), text("ok")])
    options = CheckpointOptions(cp, "R")
    await Runner.run(Agent("a", model=model, tools=[step, plain]), "go", checkpoint=options)

    assert seen == [(1, 5, ["p"]), (2, 5, ["p", "s1", "p"]), (3, 5, ["p", "s1", "p", "s2"])]


async def test_a_trimmed_output_comes_back_through_recall_with_a_file_store(
    stores: Any, tmp_path: Path
) -> None:
    """The seed's S9: with a FileResultStore on the context policy, an output the session
    trimmed is recovered whole by the ref its marker names (0.9.119 archives only what the
    policy offloads, so there it is lost: a departure docs/compat.md records)."""
    session, _ = stores
    policy = Compaction(store=FileResultStore(tmp_path / "archive"))
    first = ScriptedProvider([call("sized", {"n": 3000}, call_id="c1"), text("a")])
    await Runner.run(
        Agent("a", model=first, tools=[sized], context_policy=policy),
        "one",
        session=session,
        session_id="S",
    )
    await Runner.run(
        Agent("a", model=ScriptedProvider([text("b")]), context_policy=policy),
        "two",
        session=session,
        session_id="S",
    )
    assert await session.trim_tool_results("S", keep_chars=10) == 1
    (trimmed,) = [e.output for e in await session.load("S") if e.type == "tool_result"]
    (ref,) = re.findall(r'recall_tool_result\("([^"]+)"\)', trimmed)

    later = ScriptedProvider([batch(("recall_tool_result", {"ref": ref}, "r1")), text("c")])
    result = await Runner.run(
        Agent("a", model=later, context_policy=policy), "three", session=session, session_id="S"
    )
    (back,) = [e for e in result.entries if e.type == "tool_result"]
    assert back.output == "s" * 3000 and not back.is_error


async def test_structured_tool_values_are_stored_in_their_json_form(stores: Any) -> None:
    """Found by this test: a tool returning a pydantic model, a dataclass or a tuple left
    ``raw`` empty in the stored result; 0.9.119 keeps their JSON form (fields, list), as it
    does for dicts and lists."""
    session, cp = stores

    asked = [("model_value", {}, "m"), ("dataclass_value", {}, "d"), ("tuple_value", {}, "t")]
    agent = Agent(
        "a",
        model=ScriptedProvider([batch(*asked), text("ok")]),
        tools=[model_value, dataclass_value, tuple_value],
    )
    result = await Runner.run(
        agent, "go", session=session, session_id="S", checkpoint=CheckpointOptions(cp, "R")
    )
    want = {"m": {"x": 1}, "d": {"a": 1, "b": "b"}, "t": [1, 2]}
    for entries in (result.entries, await session.load("S"), (await cp.load("R")).entries):
        raws = {e.call_id: entry_to_dict(e)["raw"] for e in entries if e.type == "tool_result"}
        assert raws == want
