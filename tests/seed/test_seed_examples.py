"""The seed page's code, line for line (its `agent` is a ScriptedProvider agent; the page's
relative file names live in a temporary folder), with what the page says about each."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from lovia import Agent, Handoff, InMemorySession, RunContext, SQLiteSession, UserError, tool
from lovia.testing import ScriptedProvider, call, text
from lovia.transcript import drop_dangling_tool_calls


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


@tool
def fetch(n: int) -> str:
    """Fetch a long report."""
    return f"report {n}: " + "x" * 1000


async def test_session_example() -> None:
    from lovia import Runner, SQLiteSession

    model = ScriptedProvider([text("好的。"), text("Atlas")])
    agent = Agent("assistant", model=model)

    session = SQLiteSession("chat.db")

    await Runner.run(agent, "我的项目叫 Atlas。", session=session, session_id="u1")
    result = await Runner.run(agent, "我的项目叫什么？", session=session, session_id="u1")
    # "Atlas"：第二次运行把第一次运行的 transcript 加载为历史
    assert result.output == "Atlas"
    second = [(m.role, m.content) for m in model.calls[1] if m.role != "system"]
    assert second == [
        ("user", "我的项目叫 Atlas。"),
        ("assistant", "好的。"),
        ("user", "我的项目叫什么？"),
    ]
    segments = await session.segments("u1")
    assert [s.run_id for s in segments][1] == result.run_id and len(segments) == 2
    assert await session.load("u1") == [e for s in segments for e in s.entries]
    assert all(isinstance(s.meta, dict) for s in segments)  # opaque per-run meta
    await session.close()
    reopened = SQLiteSession("chat.db")  # it survives the process's store object
    assert len(await reopened.load("u1")) == 4 and await reopened.load("u2") == []
    await reopened.close()


async def test_a_session_without_a_session_id_is_refused_with_a_hint() -> None:
    from lovia import Runner

    agent = Agent("assistant", model=ScriptedProvider([text("x")]))
    with pytest.raises(UserError) as refused:
        await Runner.run(agent, "hi", session=InMemorySession())
    assert refused.value.hint


async def test_maintenance_examples_trim_and_rewind() -> None:
    from lovia import Runner

    session = SQLiteSession("chat.db")
    script = []
    for n in range(4):
        script += [call("fetch", {"n": n}, call_id=f"c{n}"), text(f"answer {n}")]
    agent = Agent("assistant", model=ScriptedProvider(script), tools=[fetch])
    for n in range(4):
        await Runner.run(agent, f"report {n}?", session=session, session_id="u1")

    trimmed = await session.trim_tool_results("u1", keep_chars=400, keep_runs=1)
    assert trimmed == 3
    outputs = [e.output for e in await session.load("u1") if e.type == "tool_result"]
    assert [o.startswith(f"report {n}: " + "x" * (400 - 11)) for n, o in enumerate(outputs)] == [
        True
    ] * 4
    assert [len(o) < 1000 for o in outputs] == [True, True, True, False]
    assert await session.trim_tool_results("u1", keep_chars=400, keep_runs=1) == 0

    before = await session.load("u1")
    assert len(before) == 16
    removed = await session.rewind("u1", keep_entries=12)
    assert removed == 4 and await session.load("u1") == before[:12]
    assert len(await session.segments("u1")) == 3
    assert await session.rewind("u1", keep_entries=12) == 0  # at the end: nothing to do
    removed = await session.rewind("u1", keep_entries=10)  # cuts run 3 after its tool call
    segments = await session.segments("u1")
    assert removed == 3 and [e.type for e in segments[-1].entries] == ["input"]
    assert segments[-1].meta is None and segments[0].meta is not None
    assert await session.rewind("u1", keep_entries=0) == 9 and await session.segments("u1") == []
    await session.close()


async def test_drop_dangling_tool_calls_before_writing_an_abandoned_run() -> None:
    from lovia import CancelToken, CheckpointOptions, InMemoryCheckpointer, RunCancelled, Runner

    @tool
    def stop(ctx: RunContext[None]) -> str:
        """Stop here."""
        ctx.cancel_token.cancel()
        return "stopping"

    cp, session = InMemoryCheckpointer(), InMemorySession()
    model = ScriptedProvider([call("stop", {}, call_id="s1"), call("fetch", {"n": 1})])
    agent = Agent("assistant", model=model, tools=[stop, fetch])
    with pytest.raises(RunCancelled):
        await Runner.run(
            agent,
            "go",
            session=session,
            session_id="u1",
            cancel_token=CancelToken(),
            checkpoint=CheckpointOptions(cp, "r1"),
        )
    assert await session.load("u1") == []  # an interrupted run is not written (S6)
    snap = await cp.load("r1")
    assert snap is not None and snap.status == "interrupted"
    kept = drop_dangling_tool_calls(snap.entries)
    await session.append("u1", kept, run_id="r1")
    assert [e.type for e in await session.load("u1")] == ["input", "tool_call", "tool_result"]


async def test_checkpoint_example_and_resume_only_line(caplog: pytest.LogCaptureFixture) -> None:
    from uuid import uuid4

    from lovia import CheckpointOptions, Runner, SQLiteCheckpointer

    agent = Agent("assistant", model=ScriptedProvider([text("已迁移。")]))

    cp = SQLiteCheckpointer("runs.db")

    result = await Runner.run(
        agent,
        "迁移报告格式。",
        checkpoint=CheckpointOptions(cp, f"report-migration-{uuid4().hex}"),
    )
    assert result.output == "已迁移。"
    rid = result.run_id
    snap = await cp.load(rid)
    assert snap is not None and snap.status == "completed" and snap.head.status == "completed"
    assert snap.agent_name == "assistant" and snap.turns == 1
    assert [e.type for e in snap.entries] == ["input", "assistant_text"]

    again = Runner.run(
        agent, [], checkpoint=CheckpointOptions(cp, rid, if_run_exists="resume_only")
    )
    replayed = await again
    assert replayed.output == "已迁移。" and replayed.finish_reason is None
    assert replayed.usage == result.usage and replayed.entries == result.entries
    await cp.close()


async def test_handoff_resume_and_a_renamed_agent(caplog: pytest.LogCaptureFixture) -> None:
    """C11: the snapshot names the active agent; an in-flight run whose agent is gone is a
    hard error; a completed run replays under the entry agent with a warning."""
    from lovia import CancelToken, CheckpointOptions, InMemoryCheckpointer, RunCancelled, Runner

    @tool
    def pause(ctx: RunContext[None]) -> str:
        """Pause."""
        ctx.cancel_token.cancel()
        return "paused"

    billing = Agent("billing", model=ScriptedProvider([call("pause", {})]), tools=[pause])
    triage = Agent("triage", model=ScriptedProvider([call("transfer_to_billing", {})]))
    triage = triage.clone(handoffs=[Handoff(billing)])
    cp = InMemoryCheckpointer()
    with pytest.raises(RunCancelled):
        await Runner.run(
            triage, "refund", cancel_token=CancelToken(), checkpoint=CheckpointOptions(cp, "h")
        )
    snap = await cp.load("h")
    assert snap is not None and snap.agent_name == "billing" and snap.status == "interrupted"

    renamed = triage.clone(handoffs=[Agent("payments", model=ScriptedProvider([]))])
    with pytest.raises(UserError):
        await Runner.run(renamed, "refund", checkpoint=CheckpointOptions(cp, "h"))
    assert await cp.load("h") == snap  # nothing executed, snapshot unchanged

    billing2 = billing.clone(model=ScriptedProvider([text("refunded")]))
    result = await Runner.run(
        triage.clone(handoffs=[billing2]), "refund", checkpoint=CheckpointOptions(cp, "h")
    )
    assert result.output == "refunded" and result.final_agent.name == "billing"

    with caplog.at_level(logging.WARNING, logger="lovia"):
        replay = await Runner.run(renamed, "refund", checkpoint=CheckpointOptions(cp, "h"))
    assert replay.output == "refunded" and replay.final_agent.name == "triage"
    assert any(r.levelno == logging.WARNING and r.name.startswith("lovia") for r in caplog.records)


@pytest.mark.parametrize("store", ["session", "checkpointer"])
async def test_a_sqlite_file_that_cannot_be_opened_is_a_store_error_with_a_hint(
    tmp_path: Path, store: str
) -> None:
    from lovia import SQLiteCheckpointer, StoreError

    path = tmp_path / "no-such-folder" / "chat.db"
    with pytest.raises(StoreError) as refused:
        if store == "session":
            await SQLiteSession(path).load("u1")
        else:
            await SQLiteCheckpointer(path).load("r1")
    assert str(path) in str(refused.value) and refused.value.hint
    assert not path.parent.exists()
