"""The user's page (sessions-and-checkpoints, Chinese): every example runs as it says.

ScriptedProvider stands in for the model; SQLite files live in tmp_path.
"""

from __future__ import annotations

import asyncio
import logging
import pathlib
import sys
import textwrap
from typing import Any
from uuid import uuid4

import pytest

from lovia import (
    Agent,
    AgentHooks,
    CheckpointOptions,
    Compaction,
    FileResultStore,
    InMemoryCheckpointer,
    InMemorySession,
    InputEntry,
    RunCancelled,
    RunContext,
    Runner,
    SQLiteCheckpointer,
    SQLiteSession,
    UserError,
    tool,
)
from lovia import events as ev
from lovia.messages import AssistantTurn, Message, Usage
from lovia.testing import ScriptedProvider, call, text
from lovia.transcript import drop_dangling_tool_calls

from .support import events_of, tool_results


async def run_child(code: str, cwd: pathlib.Path) -> int:
    """Run ``code`` in a fresh Python process (a real second process) and return its exit code."""
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", code, cwd=cwd)
    return await asyncio.wait_for(proc.wait(), timeout=120)


@pytest.fixture
def in_tmp(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    """The page uses relative file names ("chat.db", "runs.db"): run them inside tmp_path."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


async def test_page_session_example_second_run_sees_first_run(in_tmp: pathlib.Path) -> None:
    """Seed "Session" example: the second run loads the first run's transcript (S1, S2)."""

    def answer(messages: list[dict[str, Any]]) -> str:
        said = " ".join(str(m.content) for m in messages if m.role == "user")
        return "Atlas" if "Atlas" in said and "叫什么" in said else "好的"

    agent = Agent("assistant", model=ScriptedProvider([answer, answer]))
    session = SQLiteSession("chat.db")

    await Runner.run(agent, "我的项目叫 Atlas。", session=session, session_id="u1")
    result = await Runner.run(agent, "我的项目叫什么？", session=session, session_id="u1")
    assert result.output == "Atlas"
    assert (in_tmp / "chat.db").exists()
    segs = await session.segments("u1")
    assert len(segs) == 2 and segs[1].run_id == result.run_id
    await session.close()


async def test_page_session_ids_are_chosen_by_caller_and_separate(in_tmp: pathlib.Path) -> None:
    """Seed "Session": session_id is the caller's; different ids never see each other (S7)."""
    session = SQLiteSession("chat.db")
    m = ScriptedProvider([text("a"), text("b")])
    agent = Agent("assistant", model=m)
    await Runner.run(agent, "secret for u1", session=session, session_id="u1")
    await Runner.run(agent, "hello", session=session, session_id="ticket-7")
    assert all("secret" not in str(x.content) for x in m.calls[1])
    assert len(await session.load("u1")) == 2 and len(await session.load("ticket-7")) == 2
    await session.close()


async def test_page_sqlite_session_survives_the_process(in_tmp: pathlib.Path) -> None:
    """Seed "Session"/S7: an SQLite session written by another process is seen here."""
    child = textwrap.dedent("""
        import asyncio
        from lovia import InputEntry, SQLiteSession

        async def main():
            s = SQLiteSession("chat.db")
            await s.append("u1", [InputEntry(role="user", content="from child")], run_id="c1")
            await s.close()

        asyncio.run(main())
    """)
    assert await run_child(child, in_tmp) == 0
    s = SQLiteSession("chat.db")
    assert await s.load("u1") == [InputEntry(role="user", content="from child")]
    await s.close()
    assert await InMemorySession().load("u1") == []


async def test_page_append_is_idempotent_by_run_id(in_tmp: pathlib.Path) -> None:
    """Seed "契约": appending a saved run_id again does nothing (S4, S5)."""
    s = SQLiteSession("chat.db")
    first = [InputEntry(role="user", content="one")]
    await s.append("u1", first, run_id="r1", meta={"m": 1})
    await s.append("u1", [InputEntry(role="user", content="two")], run_id="r1", meta={"m": 2})
    segs = await s.segments("u1")
    assert len(segs) == 1 and segs[0].entries == first and segs[0].meta == {"m": 1}
    await s.close()


async def test_page_interrupted_run_stays_in_checkpoint_not_session(in_tmp: pathlib.Path) -> None:
    """Seed "契约": an interrupted run is not written to the session; the caller may (S6)."""

    @tool
    def stopper(ctx: RunContext[Any]) -> str:
        """Stop."""
        ctx.cancel_token.cancel()
        return "stopped"

    session = SQLiteSession("chat.db")
    cp = SQLiteCheckpointer("runs.db")
    m = ScriptedProvider(
        [
            call("stopper", {}, call_id="c1"),
        ]
    )
    agent = Agent("assistant", model=m, tools=[stopper])
    with pytest.raises(RunCancelled):
        await Runner.run(
            agent, "go", session=session, session_id="u1", checkpoint=CheckpointOptions(cp, "r1")
        )
    assert await session.load("u1") == []
    snap = await cp.load("r1")
    assert snap is not None and snap.status == "interrupted"
    # the caller's choice: write the abandoned partial, minus calls without a result
    from lovia import ToolCallEntry

    partial = [*snap.entries, ToolCallEntry(call_id="c2", name="stopper", arguments="{}")]
    await session.append("u1", drop_dangling_tool_calls(partial), run_id="r1")
    loaded = await session.load("u1")
    assert [e.type for e in loaded] == ["input", "tool_call", "tool_result"]
    await session.close()
    await cp.close()


async def _session_with_old_big_results(s: Any, agent: Any) -> str:
    await Runner.run(agent, "first", session=s, session_id="u1")
    await Runner.run(agent, "second", session=s, session_id="u1")
    return "done"


async def test_page_trim_tool_results_example_with_file_result_store(in_tmp: pathlib.Path) -> None:
    """Seed "维护": trim_tool_results(...); archived outputs recall in full (S8, S9)."""
    outputs = {"c_first": "first report line\n" * 500, "c_second": "second report\n" * 500}

    @tool
    def fetch(which: str) -> str:
        """Fetch the report."""
        return outputs[which]

    store = FileResultStore(in_tmp / "archive")
    m = ScriptedProvider(
        [
            call("fetch", {"which": "c_first"}, call_id="c_first"),
            text("ok1"),
            call("fetch", {"which": "c_second"}, call_id="c_second"),
            text("ok2"),
        ]
    )
    agent = Agent("assistant", model=m, tools=[fetch], context_policy=Compaction(store=store))
    session = SQLiteSession("chat.db")
    await _session_with_old_big_results(session, agent)

    trimmed = await session.trim_tool_results("u1", keep_chars=400, keep_runs=1)
    assert trimmed == 1
    results = [e for e in await session.load("u1") if e.type == "tool_result"]
    first = outputs["c_first"]
    assert len(results[0].output) < len(first) and results[0].output.startswith(first[:400])
    assert results[0].call_id == "c_first"
    assert results[1].output == outputs["c_second"]
    assert [e.type for e in await session.load("u1")] == [
        "input",
        "tool_call",
        "tool_result",
        "assistant_text",
    ] * 2
    assert await session.trim_tool_results("u1", keep_chars=400, keep_runs=1) == 0

    m2 = ScriptedProvider([call("recall_tool_result", {"ref": "c_first"}), text("back")])
    r = await Runner.run(
        agent.clone(model=m2), "recall the first report", session=session, session_id="u1"
    )
    assert tool_results(r.entries)[0].output == first
    await session.close()


async def test_page_trim_without_archive_loses_the_output(in_tmp: pathlib.Path) -> None:
    """Seed "维护": without an archive a trimmed output cannot be recovered (S9)."""
    big = "x" * 5000

    @tool
    def fetch() -> str:
        """Fetch."""
        return big

    m = ScriptedProvider([call("fetch", {}), text("a"), text("b")])
    agent = Agent("assistant", model=m, tools=[fetch], context_policy=Compaction())
    session = SQLiteSession("chat.db")
    await Runner.run(agent, "one", session=session, session_id="u1")
    await Runner.run(agent, "two", session=session, session_id="u1")
    assert await session.trim_tool_results("u1", keep_chars=400, keep_runs=1) == 1
    again = SQLiteSession("chat.db")
    outs = [e.output for e in await again.load("u1") if e.type == "tool_result"]
    assert big not in outs and len(outs[0]) < 1000
    await session.close()
    await again.close()


async def test_page_rewind_example_keep_entries_12(in_tmp: pathlib.Path) -> None:
    """Seed "维护": removed = await session.rewind("u1", keep_entries=12) (S10)."""

    @tool
    def look(n: int) -> str:
        """Look."""
        return f"seen {n}"

    script: list[Any] = []
    for i in range(4):
        script += [call("look", {"n": i}, call_id=f"c{i}"), text(f"answer {i}")]
    agent = Agent("assistant", model=ScriptedProvider(script), tools=[look])
    session = SQLiteSession("chat.db")
    for i in range(4):
        await Runner.run(agent, f"question {i}", session=session, session_id="u1")
    assert len(await session.load("u1")) == 16  # 4 runs x (input, call, result, text)

    # entry 12 is run 3's input; cut inside run 2 first to see the orphan rule
    removed = await session.rewind("u1", keep_entries=10)
    assert removed == 7  # run 2's result + text, run 3 whole (4), and run 2's orphaned call
    loaded = await session.load("u1")
    assert [e.type for e in loaded[-2:]] == ["assistant_text", "input"]
    segs = await session.segments("u1")
    assert len(segs) == 3 and segs[2].meta is None

    assert await session.rewind("u1", keep_entries=12) == 0  # at or past the end: nothing
    removed = await session.rewind("u1", keep_entries=0)
    assert removed == 9 and await session.load("u1") == []
    await session.close()


async def test_page_rewound_run_checkpoint_must_be_deleted_or_resume_writes_back(
    in_tmp: pathlib.Path,
) -> None:
    """Seed "维护": delete the rewound run's checkpoint too (S11)."""
    session = SQLiteSession("chat.db")
    cp = SQLiteCheckpointer("runs.db")
    agent = Agent("assistant", model=ScriptedProvider([text("a"), text("b")]))
    await Runner.run(
        agent, "q", session=session, session_id="u1", checkpoint=CheckpointOptions(cp, "r1")
    )
    await session.rewind("u1", keep_entries=0)
    await cp.delete("r1")
    r = await Runner.run(
        agent, "q again", session=session, session_id="u1", checkpoint=CheckpointOptions(cp, "r1")
    )
    assert r.output == "b"
    assert [e.content for e in await session.load("u1")] == ["q again", "b"]
    await session.close()
    await cp.close()


async def test_page_checkpoint_example_runs_and_saves_completed_snapshot(
    in_tmp: pathlib.Path,
) -> None:
    """Seed "Checkpoint" example: CheckpointOptions(cp, f"report-migration-{uuid4().hex}")."""
    agent = Agent("migrator", model=ScriptedProvider([text("迁移完成")]))
    cp = SQLiteCheckpointer("runs.db")
    rid = f"report-migration-{uuid4().hex}"

    result = await Runner.run(
        agent,
        "迁移报告格式。",
        checkpoint=CheckpointOptions(cp, rid),
    )
    assert result.output == "迁移完成" and result.run_id == rid
    snap = await cp.load(rid)
    assert snap is not None and snap.status == "completed" and snap.output == "迁移完成"
    assert snap.entries[0] == InputEntry(role="user", content="迁移报告格式。")
    assert snap.agent_name == "migrator" and snap.turns == 1 and snap.usage == result.usage
    await cp.close()


async def test_page_snapshot_saved_after_model_turn_and_each_tool_result(
    in_tmp: pathlib.Path,
) -> None:
    """Seed "Checkpoint": saved after model turns and each tool result (C2, C3)."""
    cp = SQLiteCheckpointer("runs.db")
    seen: list[list[str]] = []

    @tool
    async def step(n: int) -> str:
        """Step."""
        snap = await cp.load("r")
        assert snap is not None and snap.status == "running"
        seen.append([e.type for e in snap.entries])
        return str(n)

    m = ScriptedProvider(
        [call("step", {"n": 1}, call_id="a"), call("step", {"n": 2}, call_id="b"), text("done")]
    )
    await Runner.run(Agent("w", model=m, tools=[step]), "go", checkpoint=CheckpointOptions(cp, "r"))
    assert seen == [["input", "tool_call"], ["input", "tool_call", "tool_result", "tool_call"]]
    await cp.close()


async def test_page_context_object_is_not_snapshotted_pass_it_again(in_tmp: pathlib.Path) -> None:
    """Seed "Checkpoint": your context object is not snapshotted; pass it again (C4)."""

    class Deps:
        def __init__(self, name: str) -> None:
            self.name = name

    seen: list[str] = []

    @tool
    def who(ctx: RunContext[Deps]) -> str:
        """Who."""
        seen.append(ctx.deps.name)
        ctx.cancel_token.cancel() if len(seen) == 1 else None
        return ctx.deps.name

    cp = SQLiteCheckpointer("runs.db")
    m = ScriptedProvider([call("who", {}), call("who", {}, call_id="w2"), text("ok")])
    agent = Agent("a", model=m, tools=[who])
    with pytest.raises(RunCancelled):
        await Runner.run(agent, "q", deps=Deps("first"), checkpoint=CheckpointOptions(cp, "r"))
    r = await Runner.run(
        agent,
        [],
        deps=Deps("second"),
        checkpoint=CheckpointOptions(cp, "r", if_run_exists="resume_only"),
    )
    assert seen == ["first", "second"] and r.output == "ok"
    await cp.close()


@pytest.mark.parametrize("policy", ["resume", "restart", "fail", "resume_only"])
async def test_page_if_run_exists_table_when_run_exists(policy: str, in_tmp: pathlib.Path) -> None:
    """Seed "run_id 是幂等键" table, column "已存在运行" (C5)."""
    cp = SQLiteCheckpointer("runs.db")
    await Runner.run(
        Agent("a", model=ScriptedProvider([text("stored")])),
        "q",
        checkpoint=CheckpointOptions(cp, "r"),
    )
    m = ScriptedProvider([text("fresh")])
    opts = CheckpointOptions(cp, "r", if_run_exists=policy)
    if policy == "fail":
        with pytest.raises(UserError):
            await Runner.run(Agent("a", model=m), "q2", checkpoint=opts)
        assert m.calls == []
    else:
        r = await Runner.run(
            Agent("a", model=m), "q2" if policy != "resume_only" else [], checkpoint=opts
        )
        expected = "fresh" if policy == "restart" else "stored"
        assert r.output == expected
        assert (m.calls == []) == (policy != "restart")
    await cp.close()


@pytest.mark.parametrize("policy", ["resume", "restart", "fail", "resume_only"])
async def test_page_if_run_exists_table_when_no_run(policy: str, in_tmp: pathlib.Path) -> None:
    """Seed "run_id 是幂等键" table, column "没有已存运行" (C5)."""
    cp = SQLiteCheckpointer("runs.db")
    m = ScriptedProvider([text("new")])
    opts = CheckpointOptions(cp, "r", if_run_exists=policy)
    if policy == "resume_only":
        with pytest.raises(UserError):
            await Runner.run(Agent("a", model=m), [], checkpoint=opts)
        assert await cp.load("r") is None
    else:
        assert (await Runner.run(Agent("a", model=m), "q", checkpoint=opts)).output == "new"
    await cp.close()


async def test_page_resume_ignores_new_input_and_resume_only_example(in_tmp: pathlib.Path) -> None:
    """Seed: new input ignored on resume; Runner.run(agent, [], ... "resume_only") (C7, E1)."""

    @tool
    def pause(ctx: RunContext[Any]) -> str:
        """Pause."""
        ctx.cancel_token.cancel()
        return "paused"

    cp = SQLiteCheckpointer("runs.db")
    rid = uuid4().hex
    m = ScriptedProvider([call("pause", {}), text("finished")])
    agent = Agent("a", model=m, tools=[pause])
    with pytest.raises(RunCancelled):
        await Runner.run(agent, "original", checkpoint=CheckpointOptions(cp, rid))

    result = await Runner.run(
        agent, [], checkpoint=CheckpointOptions(cp, rid, if_run_exists="resume_only")
    )
    assert result.output == "finished"
    users = [x.content for x in m.calls[1] if x.role == "user"]
    assert users == ["original"]
    replay = await Runner.run(agent, "brand new input", checkpoint=CheckpointOptions(cp, rid))
    assert replay.output == "finished" and len(m.calls) == 2
    await cp.close()


async def test_page_replay_sends_only_terminal_event_no_hooks_usage_no_finish_reason(
    in_tmp: pathlib.Path,
) -> None:
    """Seed "重放只会再次发送终止事件" (C8)."""
    hooks = AgentHooks()
    fired: list[str] = []
    hooks.on_any(lambda e, c: fired.append(type(e).__name__))

    def guard(output: Any, ctx: Any) -> None:
        fired.append("guard")

    cp = SQLiteCheckpointer("runs.db")
    m = ScriptedProvider([AssistantTurn("answer", usage=Usage(3, 2), finish_reason="stop")])
    agent = Agent("a", model=m, hooks=hooks, output_guardrails=[guard])
    first = await Runner.run(agent, "q", checkpoint=CheckpointOptions(cp, "r"))
    assert "guard" in fired and first.finish_reason == "stop"
    fired.clear()
    events, handle = await events_of(agent, "q", checkpoint=CheckpointOptions(cp, "r"))
    replay = await handle.result()
    assert [type(e) for e in events] == [ev.RunCompleted]
    assert fired == []
    assert replay.usage == first.usage and replay.finish_reason is None
    assert replay.output == "answer" and len(m.calls) == 1
    await cp.close()


async def test_page_replay_repairs_missing_session_append(in_tmp: pathlib.Path) -> None:
    """Seed: session persistence re-applied on replay repairs the crash window (C8, C12)."""
    cp = SQLiteCheckpointer("runs.db")
    agent = Agent("a", model=ScriptedProvider([text("answer")]))
    await Runner.run(agent, "q", checkpoint=CheckpointOptions(cp, "r"))  # no session: "crashed"
    session = SQLiteSession("chat.db")
    await Runner.run(
        agent, "q", session=session, session_id="u1", checkpoint=CheckpointOptions(cp, "r")
    )
    await Runner.run(
        agent, "q", session=session, session_id="u1", checkpoint=CheckpointOptions(cp, "r")
    )
    segs = await session.segments("u1")
    assert [g.run_id for g in segs] == ["r"]
    assert [e.type for e in segs[0].entries] == ["input", "assistant_text"]
    await session.close()
    await cp.close()


async def test_page_delete_on_success_and_resume_from(in_tmp: pathlib.Path) -> None:
    """Seed: delete_on_success=True and resume_from= (C9)."""
    cp = SQLiteCheckpointer("runs.db")
    session = SQLiteSession("chat.db")
    agent = Agent("a", model=ScriptedProvider([text("x")]))
    await Runner.run(
        agent,
        "q",
        session=session,
        session_id="u1",
        checkpoint=CheckpointOptions(cp, "r", delete_on_success=True),
    )
    assert await cp.load("r") is None and len(await session.load("u1")) == 2

    @tool
    def pause(ctx: RunContext[Any]) -> str:
        """Pause."""
        ctx.cancel_token.cancel()
        return "p"

    m = ScriptedProvider([call("pause", {}), text("resumed")])
    a2 = Agent("a", model=m, tools=[pause])
    with pytest.raises(RunCancelled):
        await Runner.run(a2, "q", checkpoint=CheckpointOptions(cp, "r2"))
    held = await cp.load("r2")
    assert held is not None
    r = await Runner.run(
        a2, [], checkpoint=CheckpointOptions(InMemoryCheckpointer(), "r2", resume_from=held)
    )
    assert r.output == "resumed"
    await cp.close()
    await session.close()


async def test_page_resume_rebuilds_run_reruns_dangling_call_same_turn(
    in_tmp: pathlib.Path,
) -> None:
    """Seed "恢复运行的过程": a crashed process's dangling call runs again, same turn (C10, E2)."""
    child = textwrap.dedent("""
        import asyncio, os
        from lovia import Agent, CheckpointOptions, InMemorySession, Runner, SQLiteCheckpointer
        from lovia import SQLiteSession, tool
        from lovia.testing import ScriptedProvider, batch, text

        @tool(parallel=False)
        def safe(n: int) -> str:
            \"\"\"Safe.\"\"\"
            return f"safe {n}"

        @tool(parallel=False)
        def crash() -> str:
            \"\"\"Crash the process.\"\"\"
            os._exit(3)

        async def main():
            cp = SQLiteCheckpointer("runs.db")
            session = SQLiteSession("chat.db")
            model = ScriptedProvider([batch(("safe", {"n": 1}), ("crash", {}))])
            agent = Agent("a", instructions="v1", model=model, tools=[safe, crash])
            await Runner.run(agent, "go", session=session, session_id="u1",
                             checkpoint=CheckpointOptions(cp, "job-1"))

        asyncio.run(main())
    """)
    assert await run_child(child, in_tmp) == 3

    runs: list[tuple[str, int]] = []

    @tool(parallel=False)
    def safe(n: int, ctx: RunContext[Any]) -> str:
        """Safe."""
        runs.append(("safe", ctx.turn))
        return f"safe {n}"

    @tool(parallel=False)
    def crash(ctx: RunContext[Any]) -> str:
        """Now fine."""
        runs.append(("crash", ctx.turn))
        return "recovered"

    session = SQLiteSession("chat.db")
    await session.append("u1", [InputEntry(role="user", content="earlier")], run_id="old")
    cp = SQLiteCheckpointer("runs.db")
    m = ScriptedProvider([text("all done")])
    agent = Agent("a", instructions="v2", model=m, tools=[safe, crash])
    r = await Runner.run(
        agent, "go", session=session, session_id="u1", checkpoint=CheckpointOptions(cp, "job-1")
    )
    assert r.output == "all done"
    assert runs == [("crash", 1)]  # the finished call is not re-run; the dangling one is
    prompt = m.calls[0]
    assert prompt[0] == Message(role="system", content="v2")
    assert prompt[1] == Message(role="user", content="earlier")
    assert [x.content for x in prompt if x.role == "tool"] == ["safe 1", "recovered"]
    await session.close()
    await cp.close()


async def test_page_resume_across_handoff_and_renamed_agent(
    in_tmp: pathlib.Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Seed: resume across handoffs; renamed in-flight agent errors; replay warns (C11)."""

    @tool
    def pause(ctx: RunContext[Any]) -> str:
        """Pause."""
        ctx.cancel_token.cancel()
        return "p"

    cp = SQLiteCheckpointer("runs.db")
    m = ScriptedProvider([call("transfer_to_billing", {}), call("pause", {}), text("billed")])
    billing = Agent("billing", instructions="billing", model=m, tools=[pause])
    front = Agent("front", instructions="front", model=m, handoffs=[billing])
    with pytest.raises(RunCancelled):
        await Runner.run(front, "refund", checkpoint=CheckpointOptions(cp, "r"))
    snap = await cp.load("r")
    assert snap is not None and snap.agent_name == "billing"

    renamed = Agent("front", model=m, handoffs=[Agent("invoices", model=m, tools=[pause])])
    with pytest.raises(UserError):
        await Runner.run(renamed, [], checkpoint=CheckpointOptions(cp, "r"))
    assert await cp.load("r") == snap

    r = await Runner.run(front, [], checkpoint=CheckpointOptions(cp, "r"))
    assert r.output == "billed" and r.final_agent.name == "billing"
    assert m.calls[-1][0].content == "billing"

    with caplog.at_level(logging.WARNING, logger="lovia"):
        again = await Runner.run(renamed, [], checkpoint=CheckpointOptions(cp, "r"))
    assert again.output == "billed" and again.final_agent.name == "front"
    assert any(x.levelno == logging.WARNING for x in caplog.records)
    await cp.close()


async def test_page_success_order_checkpoint_completed_before_session_append(
    in_tmp: pathlib.Path,
) -> None:
    """Seed "两个存储的关系": first the checkpoint completes, then the session append (C12)."""
    cp = SQLiteCheckpointer("runs.db")
    status_at_append: list[str | None] = []

    class WatchingSession(InMemorySession):
        async def append(
            self, session_id: str, entries: Any, *, run_id: str | None = None, meta: Any = None
        ) -> str:
            snap = await cp.load("r")
            status_at_append.append(snap.status if snap else None)
            return await super().append(session_id, entries, run_id=run_id, meta=meta)

    s = WatchingSession()
    await Runner.run(
        Agent("a", model=ScriptedProvider([text("x")])),
        "q",
        session=s,
        session_id="u1",
        checkpoint=CheckpointOptions(cp, "r"),
    )
    assert status_at_append == ["completed"]
    full = await s.load("u1")
    assert [e.type for e in full] == ["input", "assistant_text"]
    await cp.close()


async def test_page_whole_transcript_is_session_plus_snapshot(in_tmp: pathlib.Path) -> None:
    """Seed: 完整 transcript = session.load(session_id) + snapshot.entries."""

    @tool
    def pause(ctx: RunContext[Any]) -> str:
        """Pause."""
        ctx.cancel_token.cancel()
        return "p"

    session = SQLiteSession("chat.db")
    cp = SQLiteCheckpointer("runs.db")
    seen: list[list[str]] = []

    @tool
    def look(ctx: RunContext[Any]) -> str:
        """Look."""
        seen.append([e.type for e in ctx.entries if not (e.type == "input" and e.role == "system")])
        return "l"

    m = ScriptedProvider([text("one"), call("pause", {}), call("look", {}), text("done")])
    agent = Agent("a", instructions="sys", model=m, tools=[pause, look])
    await Runner.run(agent, "first", session=session, session_id="u1")
    with pytest.raises(RunCancelled):
        await Runner.run(
            agent,
            "second",
            session=session,
            session_id="u1",
            checkpoint=CheckpointOptions(cp, "r2"),
        )
    snap = await cp.load("r2")
    assert snap is not None
    whole = [e.type for e in await session.load("u1")] + [e.type for e in snap.entries]
    await Runner.run(
        agent,
        [],
        session=session,
        session_id="u1",
        checkpoint=CheckpointOptions(cp, "r2", if_run_exists="resume_only"),
    )
    assert seen[0] == [*whole, "tool_call"]
    await session.close()
    await cp.close()


async def test_page_wal_true_lets_two_stores_share_one_file(in_tmp: pathlib.Path) -> None:
    """Seed: both SQLite stores accept wal=True and can share one database file (S12, C13)."""
    session = SQLiteSession("app.db", wal=True)
    cp = SQLiteCheckpointer("app.db", wal=True)
    m = ScriptedProvider([text("a"), text("b")])
    agent = Agent("a", model=m)
    await Runner.run(
        agent, "q1", session=session, session_id="u1", checkpoint=CheckpointOptions(cp, "r1")
    )
    await Runner.run(
        agent, "q2", session=session, session_id="u1", checkpoint=CheckpointOptions(cp, "r2")
    )
    assert [g.run_id for g in await session.segments("u1")] == ["r1", "r2"]
    assert (await cp.load("r2")) is not None
    await session.close()
    await cp.close()
    import sqlite3

    con = sqlite3.connect(in_tmp / "app.db")
    try:
        assert con.execute("PRAGMA journal_mode").fetchone()[0].lower() == "wal"
    finally:
        con.close()


async def test_page_sqlite_default_is_not_wal(in_tmp: pathlib.Path) -> None:
    """Seed: wal is off by default (S12)."""
    session = SQLiteSession("chat.db")
    await session.append("u1", [InputEntry(role="user", content="x")])
    await session.close()
    import sqlite3

    con = sqlite3.connect(in_tmp / "chat.db")
    try:
        assert con.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal"
    finally:
        con.close()


async def test_page_run_id_collision_is_one_run_to_the_checkpointer(in_tmp: pathlib.Path) -> None:
    """Seed "注意事项": the checkpointer is global; two runs sharing an id are one run (E3)."""
    cp = SQLiteCheckpointer("runs.db")
    m = ScriptedProvider([text("for alice")])
    agent = Agent("a", model=m)
    s = InMemorySession()
    await Runner.run(
        agent, "alice asks", session=s, session_id="alice", checkpoint=CheckpointOptions(cp, "same")
    )
    r = await Runner.run(
        agent, "bob asks", session=s, session_id="bob", checkpoint=CheckpointOptions(cp, "same")
    )
    assert r.output == "for alice" and len(m.calls) == 1
    assert len(await s.load("alice")) == 2
    await cp.close()


async def test_page_non_idempotent_tool_dedups_on_run_id_and_arguments(
    in_tmp: pathlib.Path,
) -> None:
    """Seed "注意事项": a dangling call runs again; charging dedups on run_id + arguments (E2)."""
    receipts: dict[tuple[str, int], str] = {}
    executions: list[int] = []

    @tool
    def charge(amount: int, ctx: RunContext[Any]) -> str:
        """Charge."""
        executions.append(amount)
        key = (ctx.run_id, amount)
        receipts.setdefault(key, f"receipt-{len(receipts)}")
        if len(executions) == 1:
            raise RunCancelled("worker stopped after charging")  # call left without a result
        return receipts[key]

    cp = SQLiteCheckpointer("runs.db")
    m = ScriptedProvider([call("charge", {"amount": 5}), text("paid")])
    agent = Agent("a", model=m, tools=[charge])
    with pytest.raises(RunCancelled):
        await Runner.run(agent, "pay", checkpoint=CheckpointOptions(cp, "pay-1"))
    r = await Runner.run(
        agent, [], checkpoint=CheckpointOptions(cp, "pay-1", if_run_exists="resume_only")
    )
    assert r.output == "paid"
    assert executions == [5, 5]  # at-least-once: the dangling call ran again
    assert receipts == {("pay-1", 5): "receipt-0"}  # but charged once
    assert tool_results(r.entries)[0].output == "receipt-0"
    await cp.close()
