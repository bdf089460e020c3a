"""The policy's state travels with the run: session meta, checkpoints, overflow, rewind."""

from __future__ import annotations

from typing import Any

import pytest

from lovia import (
    Agent,
    CheckpointOptions,
    ContextOverflowError,
    InMemoryCheckpointer,
    InMemorySession,
    ProviderError,
    Runner,
)
from lovia.context import Compaction
from lovia.messages import user
from lovia.testing import call, text

from .support import (
    RefusingProvider,
    ScriptedProvider,
    assert_paired,
    fetch_tool,
    page,
    tool_messages,
    view_size,
)


def window() -> Compaction:
    return Compaction(context_window=4_000, reserve_output_tokens=500)


def pages_script(first: int, last: int) -> list[Any]:
    return [call("fetch", {"n": i}, call_id=f"c{i}") for i in range(first, last)]


async def test_next_run_on_a_session_starts_from_the_segment_meta() -> None:
    """The run-end state goes into meta["context_state"]; the next run renders the same
    markers from it without compacting again."""
    model = ScriptedProvider([*pages_script(0, 8), text("done"), text("sure")])
    agent = Agent("a", model=model, tools=[fetch_tool(2_000)], context_policy=window())
    session = InMemorySession()
    await Runner.run(agent, "read all pages", session=session, session_id="s")
    (segment,) = await session.segments("s")
    state = (segment.meta or {})["context_state"]
    assert state["cleared_upto"] > 0

    last_view_of_run_1 = model.calls[-1]
    handle = Runner.stream(agent, "one more thing", session=session, session_id="s")
    events = [e async for e in handle]
    await handle.result()
    assert not [e for e in events if e.type == "context_compacted"]
    first_view_of_run_2 = model.calls[-1]
    markers = [m for m in tool_messages(last_view_of_run_1) if "cleared" in m.content]
    assert markers and all(m in first_view_of_run_2 for m in markers)


async def test_a_fresh_policy_instance_renders_the_same_view_from_the_meta() -> None:
    """State is data, not memory: a new process (a new Compaction) continues from the meta."""
    model = ScriptedProvider([*pages_script(0, 8), text("done")])
    agent = Agent("a", model=model, tools=[fetch_tool(2_000)], context_policy=window())
    session = InMemorySession()
    await Runner.run(agent, "read all pages", session=session, session_id="s")

    fresh_model = ScriptedProvider([text("ok")])
    fresh = Agent("a", model=fresh_model, tools=[fetch_tool(2_000)], context_policy=window())
    await Runner.run(fresh, "and now?", session=session, session_id="s")
    first = tool_messages(fresh_model.calls[0])
    before = tool_messages(model.calls[-1])
    assert first[: len(before)] == before


async def test_resumed_checkpoint_starts_from_the_head_context_state() -> None:
    """C3: RunHead.context_state is saved at each step; a resumed run renders the same
    compacted view as the crashed one did, without compacting anew."""
    cp = InMemoryCheckpointer()
    crash = ProviderError("connection reset")
    model = ScriptedProvider([*pages_script(0, 7), crash])
    agent = Agent("a", model=model, tools=[fetch_tool(2_000)], context_policy=window(), retry=None)
    with pytest.raises(ProviderError):
        await Runner.run(agent, "read all pages", checkpoint=CheckpointOptions(cp, "r1"))
    snap = await cp.load("r1")
    assert snap is not None and snap.context_state.get("cleared_upto", 0) > 0
    crashed_view = model.calls[-1]

    resumed_model = ScriptedProvider([text("done")])
    resumed = Agent("a", model=resumed_model, tools=[fetch_tool(2_000)], context_policy=window())
    handle = Runner.stream(resumed, [], checkpoint=CheckpointOptions(cp, "r1"))
    events = [e async for e in handle]
    result = await handle.result()
    assert result.output == "done"
    assert not [e for e in events if e.type == "context_compacted"]
    assert resumed_model.calls[0] == crashed_view


async def test_overflow_gets_one_more_aggressive_attempt_with_a_smaller_view() -> None:
    """On ContextOverflowError the loop asks again with attempt=1: the retry is smaller,
    even with the default policy (unknown window), and the run succeeds."""
    inner = ScriptedProvider([*pages_script(0, 4), text("done")])
    refusing = RefusingProvider(inner, refusals=0)
    agent = Agent("a", model=refusing, tools=[fetch_tool(3_000)])
    session = InMemorySession()
    await Runner.run(agent, "read four pages", session=session, session_id="s")
    full = view_size(inner.calls[-1])

    inner.extend([text("here you go")])
    refusing.refusals = 1
    result = await Runner.run(agent, "summarize them", session=session, session_id="s")
    assert result.output == "here you go"
    assert len(refusing.refused_sizes) == 1
    retried = inner.calls[-1]
    assert view_size(retried) < full
    assert_paired(retried)
    assert retried[-1] == user("summarize them")
    stored = [e.output for e in await session.load("s") if e.type == "tool_result"]
    assert stored == [page(i, 3_000) for i in range(4)]


async def test_a_second_overflow_fails_the_run_with_the_error() -> None:
    """Only one more attempt: a provider that refuses twice fails the run."""
    inner = ScriptedProvider([text("never")])
    agent = Agent("a", model=RefusingProvider(inner, refusals=2))
    with pytest.raises(ContextOverflowError):
        await Runner.run(agent, "hello")
    assert inner.calls == []


async def test_after_a_rewind_the_policy_re_derives_its_state() -> None:
    """S10: rewind clears the cut run's meta; the next run starts from {} without error and
    compacts again when it needs to."""
    model = ScriptedProvider([*pages_script(0, 8), text("done")])
    agent = Agent("a", model=model, tools=[fetch_tool(2_000)], context_policy=window())
    session = InMemorySession()
    await Runner.run(agent, "read all pages", session=session, session_id="s")
    await session.rewind("s", keep_entries=13)  # inside the run, after six results
    (segment,) = await session.segments("s")
    assert "context_state" not in (segment.meta or {})

    model.extend([*pages_script(8, 10), text("done again")])
    handle = Runner.stream(agent, "continue", session=session, session_id="s")
    events = [e async for e in handle]
    result = await handle.result()
    assert result.output == "done again"
    assert [e for e in events if e.type == "context_compacted"]
    for messages in model.calls[-3:]:
        assert_paired(messages)


async def test_a_state_from_another_transcript_is_ignored_not_trusted() -> None:
    """Decisions whose fingerprint does not match the transcript are dropped (re-derived)."""
    policy = window()
    model = ScriptedProvider([text("fine")])
    agent = Agent("a", model=model, context_policy=policy)
    session = InMemorySession()
    await Runner.run(agent, "hi", session=session, session_id="s")
    bogus = {"v": 1, "cleared_upto": 2, "cleared_anchor": "tool_result:zzz:1", "hold": 99}
    from lovia.context import ContextRequest

    view = await policy.prepare(ContextRequest(await session.load("s"), bogus, ScriptedProvider()))
    assert [e.type for e in view.entries] == ["input", "assistant_text"]
    assert "cleared_upto" not in view.state


async def test_overflow_with_a_known_window_compacts_below_what_was_refused() -> None:
    """The estimate said the view fits, the provider disagreed: the retry halves it."""
    inner = ScriptedProvider([*pages_script(0, 4), text("done"), text("again")])
    refusing = RefusingProvider(inner, refusals=0)
    policy = Compaction(context_window=100_000, reserve_output_tokens=1_000)
    agent = Agent("a", model=refusing, tools=[fetch_tool(3_000)], context_policy=policy)
    session = InMemorySession()
    await Runner.run(agent, "read four pages", session=session, session_id="s")
    full = view_size(inner.calls[-1])

    refusing.refusals = 1
    handle = Runner.stream(agent, "once more", session=session, session_id="s")
    events = [e async for e in handle]
    assert (await handle.result()).output == "again"
    (compacted,) = [e for e in events if e.type == "context_compacted"]
    assert compacted.to_dict()["reason"].startswith("reactive_")
    assert compacted.notice is not None and compacted.notice.reactive
    assert view_size(inner.calls[-1]) < full / 2
    assert_paired(inner.calls[-1])


def test_impossible_settings_are_refused_with_a_hint() -> None:
    from lovia import UserError

    for kwargs in (
        {"compact_at": 0.5, "compact_to": 0.7},
        {"compact_to": 0.0},
        {"compact_at": True},
        {"context_window": 0},
    ):
        with pytest.raises(UserError) as info:
            Compaction(**kwargs)
        assert info.value.hint
