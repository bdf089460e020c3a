"""Sessions inside runs: history in, one segment out, nothing for unfinished runs (S2, S6)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from lovia import (
    Agent,
    AssistantTextEntry,
    CheckpointOptions,
    InMemoryCheckpointer,
    InMemorySession,
    InputEntry,
    MaxTurnsExceeded,
    ProviderError,
    RunCancelled,
    RunContext,
    RunHead,
    Runner,
    Segment,
    SessionConflict,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
    UserError,
    drop_dangling_tool_calls,
    tool,
)
from lovia.context import ContextRequest, ContextView
from lovia.stores.sqlite_checkpoint import SQLiteCheckpointer
from lovia.stores.sqlite_session import SQLiteSession
from lovia.testing import ScriptedProvider, batch, call, text
from tests.stores.backends import session, session_backend

__all__ = ["session", "session_backend"]  # fixtures used by name


def agent(model: ScriptedProvider, **kwargs: Any) -> Agent:
    kwargs.setdefault("instructions", "You are terse.")
    return Agent("assistant", model=model, **kwargs)


def answer_from_history(messages: list[dict[str, Any]]) -> str:
    """A scripted turn that can only answer if an earlier run is in the prompt."""
    said = " ".join(str(m.content or "") for m in messages if m.role == "user")
    return "Atlas" if "Atlas" in said else "I don't know"


@tool
def lookup(q: str) -> str:
    """Look something up."""
    return f"found {q}"


@tool
def stop_here(ctx: RunContext[None]) -> str:
    """Ask the run to stop after this tool."""
    ctx.cancel_token.cancel("user pressed stop")
    return "stopping"


@tool(parallel=False)  # after the calls before it: one still on its thread would be cut off
def crash_out() -> str:
    """End the run the way a stop in the middle of a tool does."""
    raise RunCancelled("stopped inside the tool")


async def test_the_model_sees_earlier_runs(session: Any) -> None:
    """S2: history is loaded at the start, so the second run's prompt holds the first run."""
    model = ScriptedProvider([text("Noted."), answer_from_history])
    a = agent(model)
    await Runner.run(a, "My project is called Atlas.", session=session, session_id="u1")
    second = await Runner.run(a, "What is my project called?", session=session, session_id="u1")
    assert second.output == "Atlas"
    assert [(m.role, m.content) for m in model.calls[1]] == [
        ("system", "You are terse."),
        ("user", "My project is called Atlas."),
        ("assistant", "Noted."),
        ("user", "What is my project called?"),
    ]
    # another session id starts from nothing
    model.extend([answer_from_history])
    other = await Runner.run(a, "What is my project called?", session=session, session_id="u2")
    assert other.output == "I don't know"


async def test_the_system_prompt_is_never_stored(session: Any) -> None:
    """S2: the system prompt is rendered per run, never written to the session."""
    model = ScriptedProvider([text("one"), text("two")])
    a = agent(model)
    await Runner.run(a, "hi", session=session, session_id="u1")
    await Runner.run(a, "again", session=session, session_id="u1")
    stored = await session.load("u1")
    assert not [e for e in stored if isinstance(e, InputEntry) and e.role == "system"]
    assert [m.role for m in model.calls[1]].count("system") == 1


async def test_a_run_is_appended_as_one_segment_under_its_run_id(session: Any) -> None:
    """S2: the run's own entries, in order, as one segment keyed by result.run_id."""
    model = ScriptedProvider([batch(("lookup", {"q": "a"}), ("lookup", {"q": "b"})), text("done")])
    result = await Runner.run(
        agent(model, tools=[lookup]), "look twice", session=session, session_id="u1"
    )
    segments = await session.segments("u1")
    assert len(segments) == 1
    assert segments[0].run_id == result.run_id
    assert segments[0].entries == result.entries
    assert [type(e).__name__ for e in result.entries] == [
        "InputEntry",
        "ToolCallEntry",
        "ToolCallEntry",
        "ToolResultEntry",
        "ToolResultEntry",
        "AssistantTextEntry",
    ]


class CountingPolicy:
    """A context policy that carries a counter from call to call and run to run."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    def tools(self) -> Sequence[Any]:
        return ()

    async def prepare(self, request: ContextRequest) -> ContextView:
        self.seen.append(dict(request.state))
        calls = int(request.state.get("calls", 0)) + 1
        return ContextView(entries=list(request.entries), state={"calls": calls})


async def test_the_context_state_goes_into_meta_and_comes_back(session: Any) -> None:
    """S2: meta["context_state"] holds the policy's state; the next run starts from it."""
    policy = CountingPolicy()
    model = ScriptedProvider([call("lookup", {"q": "x"}), text("first"), text("second")])
    a = agent(model, tools=[lookup], context_policy=policy)
    await Runner.run(a, "one", session=session, session_id="u1")
    assert (await session.segments("u1"))[0].meta["context_state"] == {"calls": 2}
    await Runner.run(a, "two", session=session, session_id="u1")
    assert policy.seen == [{}, {"calls": 1}, {"calls": 2}]
    assert (await session.segments("u1"))[1].meta["context_state"] == {"calls": 3}


@pytest.mark.parametrize(
    ("script", "tools", "error"),
    [
        ([ProviderError("the endpoint is down")], [], ProviderError),
        ([call("stop_here", {}), text("never")], [stop_here], RunCancelled),
        ([call("lookup", {"q": "a"})], [lookup], MaxTurnsExceeded),
    ],
)
async def test_a_run_that_does_not_complete_is_not_appended(
    session: Any, script: list[Any], tools: list[Any], error: type[Exception]
) -> None:
    """S6: failed, cancelled and out-of-turns runs leave the session as it was."""
    model = ScriptedProvider([text("kept"), *script])
    a = agent(model, tools=tools, retry=None)  # a scripted model error fails the run at once
    await Runner.run(a, "first", session=session, session_id="u1")
    before = await session.segments("u1")
    with pytest.raises(error):
        await Runner.run(a, "second", session=session, session_id="u1", max_turns=1)
    assert await session.segments("u1") == before


class FourMethodSession:
    """A user's own store: only the protocol's four methods, on a plain dict."""

    def __init__(self) -> None:
        self.data: dict[str, list[Segment]] = {}

    async def segments(self, session_id: str) -> list[Segment]:
        return list(self.data.get(session_id, []))

    async def load(self, session_id: str) -> list[TranscriptEntry]:
        return [e for s in self.data.get(session_id, []) for e in s.entries]

    async def append(
        self,
        session_id: str,
        entries: Sequence[TranscriptEntry],
        *,
        run_id: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> str:
        rid = run_id or f"run-{sum(len(v) for v in self.data.values())}"
        stored = self.data.setdefault(session_id, [])
        if all(s.run_id != rid for s in stored):
            stored.append(Segment(rid, list(entries), meta))
        return rid

    async def clear(self, session_id: str) -> None:
        self.data.pop(session_id, None)


async def test_a_user_class_with_the_four_methods_works_as_a_session() -> None:
    """S3: a custom store needs only segments/load/append/clear."""
    store = FourMethodSession()
    model = ScriptedProvider([text("Noted."), answer_from_history])
    a = agent(model)
    await Runner.run(a, "My project is called Atlas.", session=store, session_id="u1")
    result = await Runner.run(a, "And its name?", session=store, session_id="u1")
    assert result.output == "Atlas"
    assert len(store.data["u1"]) == 2
    assert (store.data["u1"][1].run_id, store.data["u1"][1].entries) == (
        result.run_id,
        result.entries,
    )


async def test_a_session_without_a_session_id_is_refused(session: Any) -> None:
    model = ScriptedProvider([text("never")])
    with pytest.raises(UserError):
        await Runner.run(agent(model), "hi", session=session)
    assert model.calls == []


async def test_a_checkpointed_run_is_stored_once_under_the_checkpoint_run_id(
    session: Any,
) -> None:
    """S5/C8/C12: the segment has the checkpoint's run_id, and a replay does not duplicate it."""
    cp = InMemoryCheckpointer()
    model = ScriptedProvider([text("the answer")])
    a = agent(model)
    opts = CheckpointOptions(cp, "job-42")
    first = await Runner.run(a, "question", session=session, session_id="u1", checkpoint=opts)
    again = await Runner.run(a, "ignored", session=session, session_id="u1", checkpoint=opts)
    assert (first.output, again.output) == ("the answer", "the answer")
    assert [s.run_id for s in await session.segments("u1")] == ["job-42"]


async def test_a_stopped_run_can_be_saved_as_a_partial_without_dangling_calls(
    session: Any,
) -> None:
    """S6: the caller may store an abandoned run, after drop_dangling_tool_calls."""
    cp = InMemoryCheckpointer()
    model = ScriptedProvider(
        [batch(("lookup", {"q": "a"}), ("crash_out", {})), answer_from_history]
    )
    a = agent(model, tools=[lookup, crash_out])
    opts = CheckpointOptions(cp, "stopped-run")
    with pytest.raises(RunCancelled):
        await Runner.run(a, "Atlas is the name", session=session, session_id="u1", checkpoint=opts)
    assert await session.segments("u1") == []  # not written by the runner (S6)
    snapshot = await cp.load("stopped-run")
    assert snapshot is not None and snapshot.status == "interrupted"
    calls = [e.call_id for e in snapshot.entries if isinstance(e, ToolCallEntry)]
    answered = {e.call_id for e in snapshot.entries if isinstance(e, ToolResultEntry)}
    assert set(calls) - answered == {"call_1_crash_out"}  # the partial has a dangling call

    partial = drop_dangling_tool_calls(snapshot.entries)
    await session.append("u1", partial, run_id=snapshot.run_id)
    await cp.delete(snapshot.run_id)

    result = await Runner.run(a, "what was the name?", session=session, session_id="u1")
    assert result.output == "Atlas"
    prompt = model.calls[-1]
    sent_calls = [c.id for m in prompt for c in m.tool_calls or ()]
    sent_results = [m.tool_call_id for m in prompt if m.role == "tool"]
    assert sent_calls == sent_results == ["call_0_lookup"]


async def test_rewound_runs_lose_their_checkpoints_and_start_afresh(tmp_path: Path) -> None:
    """S10/S11: rewind_runs names the rewound runs; with their checkpoints deleted, the same
    run id runs again instead of replaying the undone answer. Both stores share one file."""
    path = tmp_path / "app.db"
    async with SQLiteSession(path, wal=True) as session, SQLiteCheckpointer(path, wal=True) as cp:
        model = ScriptedProvider([text("first answer"), text("second answer"), text("redone")])
        a = agent(model)
        await Runner.run(
            a, "q1", session=session, session_id="u1", checkpoint=CheckpointOptions(cp, "run-1")
        )
        opts = CheckpointOptions(cp, "run-2")
        await Runner.run(a, "q2", session=session, session_id="u1", checkpoint=opts)

        # regenerate: cut before run-2's question, then send the question again
        done = await session.rewind_runs("u1", keep_entries=2)
        assert (done.removed, done.affected_run_ids) == (2, ("run-2",))
        for run_id in done.affected_run_ids:
            await cp.delete(run_id)
        assert await cp.load("run-2") is None and await cp.load("run-1") is not None

        again = await Runner.run(a, "q2", session=session, session_id="u1", checkpoint=opts)
        assert again.output == "redone" and model.remaining == 0
        assert [s.run_id for s in await session.segments("u1")] == ["run-1", "run-2"]
        assert (await session.load("u1"))[-1] == AssistantTextEntry(content="redone")


# -- the session version (issue 9: no silent fork) -----------------------------------------


async def test_a_run_records_the_session_version_it_loaded(session: Any) -> None:
    """The head keeps the version the history was read at, so a replay checks it too."""
    cp = InMemoryCheckpointer()
    await session.append("u1", [InputEntry(role="user", content="earlier")], run_id="r0")
    model = ScriptedProvider([text("ok")])
    await Runner.run(
        agent(model), "hi", session=session, session_id="u1", checkpoint=CheckpointOptions(cp, "r1")
    )
    snap = await cp.load("r1")
    assert snap is not None and snap.session_version == 1
    assert (await session.history("u1")).version == 2


async def test_a_resumed_run_reloads_the_history_and_its_version(session: Any) -> None:
    """C10 + issue 9: a run that failed midway and resumes after another run landed reads
    the new history (its version replaces the old one), so its append lands."""
    cp = InMemoryCheckpointer()
    model = ScriptedProvider([call("lookup", {"q": "x"}, call_id="c1"), ProviderError("down")])
    opts = CheckpointOptions(cp, "r1")
    with pytest.raises(ProviderError):
        await Runner.run(
            agent(model, tools=[lookup], retry=None),
            "q1",
            session=session,
            session_id="u1",
            checkpoint=opts,
        )
    snap = await cp.load("r1")
    assert snap is not None and snap.session_version == 0
    await session.append("u1", [InputEntry(role="user", content="meanwhile")], run_id="other")
    model.extend([text("done")])
    result = await Runner.run(
        agent(model, tools=[lookup]), "q1", session=session, session_id="u1", checkpoint=opts
    )
    assert result.output == "done"
    assert "meanwhile" in str(model.calls[-1])  # the resumed turn saw the other run
    assert [s.run_id for s in await session.segments("u1")] == ["other", "r1"]
    snap = await cp.load("r1")
    assert snap is not None and snap.session_version == 1


async def test_a_custom_session_keeps_appending_without_versions() -> None:
    """S3: a four-method store is never asked for history() or expected_version."""
    store = FourMethodSession()
    cp = InMemoryCheckpointer()
    await Runner.run(
        agent(ScriptedProvider([text("ok")])),
        "hi",
        session=store,
        session_id="u1",
        checkpoint=CheckpointOptions(cp, "r1"),
    )
    snap = await cp.load("r1")
    assert snap is not None and snap.session_version is None
    assert [s.run_id for s in store.data["u1"]] == ["r1"]


def test_a_head_stored_before_session_versions_still_loads() -> None:
    """Old heads have no session_version: they load with None (replay appends unchecked)."""
    old = RunHead(agent_name="a", session_version=2).to_dict()
    del old["session_version"]
    assert RunHead.from_dict(old).session_version is None
    assert RunHead.from_dict({**old, "session_version": 3}).session_version == 3
    with pytest.raises(ValueError):
        RunHead.from_dict({**old, "session_version": "3"})


async def test_a_subclass_with_the_protocols_append_signature_works_and_is_still_checked() -> None:
    """Code written before session versions keeps running: a built-in store subclassed with
    its own four-argument append works unchanged (S3), and the version check still happens
    in the built-in store underneath, so the subclass cannot fork a conversation."""
    calls: list[str | None] = []

    class Logged(InMemorySession):
        async def append(  # type: ignore[override]
            self,
            session_id: str,
            entries: Sequence[TranscriptEntry],
            *,
            run_id: str | None = None,
            meta: dict[str, Any] | None = None,
        ) -> str:
            calls.append(run_id)
            return await super().append(session_id, entries, run_id=run_id, meta=meta)

    store = Logged()
    cp = InMemoryCheckpointer()
    opts = CheckpointOptions(cp, "r1")
    await Runner.run(
        agent(ScriptedProvider([text("ok")])), "hi", session=store, session_id="u1", checkpoint=opts
    )
    snap = await cp.load("r1")
    assert calls == ["r1"] and snap is not None and snap.session_version == 0

    async def meanwhile(messages: Any) -> Any:
        await store.append("u1", [InputEntry(content="someone else")], run_id="other")
        return text("late")

    with pytest.raises(SessionConflict):
        await Runner.run(
            agent(ScriptedProvider([meanwhile])),
            "again",
            session=store,
            session_id="u1",
            checkpoint=CheckpointOptions(cp, "r2"),
        )
    assert [s.run_id for s in await store.segments("u1")] == ["r1", "other"]
    assert await store.append("u1", [InputEntry(content="direct")], run_id="r3") == "r3"
