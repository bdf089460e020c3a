"""Nothing lost, nothing duplicated, when what the run is given is wrong: malformed input,
tools that return odd values or raise what no tool should, on every built-in store."""

from __future__ import annotations

from typing import Any

import pytest

from lovia import Agent, CheckpointOptions, Runner, UserError, tool
from lovia.testing import ScriptedProvider, call, text
from lovia.transcript import InputEntry, ToolCallEntry, ToolResultEntry


def _well_formed(entries: list[Any]) -> bool:
    calls = [e.call_id for e in entries if isinstance(e, ToolCallEntry)]
    results = [e.call_id for e in entries if isinstance(e, ToolResultEntry)]
    return sorted(calls) == sorted(results)


ANSWERED_CALL = ["input", "tool_call", "tool_result", "assistant_text"]


class _FailsOnce(ScriptedProvider):
    """The model is down for its first call (the run fails after its input was saved)."""

    down = True

    def stream(self, *args: Any, **kwargs: Any) -> Any:
        if self.down:
            self.down = False
            raise ConnectionError("model down")
        return super().stream(*args, **kwargs)


async def test_an_input_call_without_its_result_is_refused_before_anything_runs(
    stores: Any,
) -> None:
    """Found by this test: such a call went to the model unanswered and into the session
    that way, and ran (a charge!) only when the same submission was resumed after a
    failure. Now both attempts are refused alike, and nothing runs or lands."""
    session, cp = stores
    charged: list[int] = []

    @tool
    def charge(cents: int) -> str:
        """Charge the customer."""
        charged.append(cents)
        return "charged"

    given = [
        InputEntry(role="user", content="refund me"),
        ToolCallEntry(call_id="c1", name="charge", arguments='{"cents": 500}'),
    ]
    for model in (ScriptedProvider([text("ok")]), _FailsOnce([text("ok"), text("ok")])):
        agent = Agent("a", model=model, tools=[charge], retry=None)
        for _ in range(2):  # the first submission and the worker's re-submission
            with pytest.raises(UserError) as caught:
                await Runner.run(
                    agent,
                    given,
                    session=session,
                    session_id="u1",
                    checkpoint=CheckpointOptions(cp, "job-1"),
                )
            assert "drop_dangling_tool_calls" in (caught.value.hint or "")
        assert model.calls == []
    assert charged == []
    assert await session.segments("u1") == []
    # the caller fixes the input: the same run id starts from it
    fixed = Agent("a", model=ScriptedProvider([text("fixed")]), tools=[charge])
    result = await Runner.run(
        fixed,
        [*given, ToolResultEntry(call_id="c1", output="charged earlier")],
        session=session,
        session_id="u1",
        checkpoint=CheckpointOptions(cp, "job-1"),
    )
    assert result.output == "fixed" and charged == []
    (segment,) = await session.segments("u1")
    assert segment.run_id == "job-1" and _well_formed(segment.entries)
    assert [e.type for e in segment.entries] == ANSWERED_CALL


@pytest.mark.parametrize("bad", [None, 7, ["hi", 3], [{"foo": 1}]])
async def test_bad_input_then_the_right_input_under_the_same_run_id(stores: Any, bad: Any) -> None:
    """A refused input leaves no entries behind: re-submitting the run id with the input the
    caller meant answers that input, once."""
    session, cp = stores
    model = ScriptedProvider([text("answered")])
    agent = Agent("a", model=model)
    with pytest.raises((UserError, TypeError)):
        await Runner.run(
            agent, bad, session=session, session_id="u", checkpoint=CheckpointOptions(cp, "r")
        )
    assert model.calls == [] and await session.segments("u") == []
    snapshot = await cp.load("r")
    assert snapshot is None or snapshot.entries == []
    result = await Runner.run(
        agent, "meant", session=session, session_id="u", checkpoint=CheckpointOptions(cp, "r")
    )
    assert result.output == "answered"
    assert [m.content for m in model.calls[0] if m.role == "user"] == ["meant"]
    (segment,) = await session.segments("u")
    assert [e.type for e in segment.entries] == ["input", "assistant_text"]


class _Odd:
    def __repr__(self) -> str:
        return "<odd>"


@pytest.mark.parametrize("bad", [None, 7, [{"foo": 1}]])
async def test_a_refused_input_stores_nothing_so_fail_and_restart_stay_usable(
    stores: Any, bad: Any
) -> None:
    """A refused request changes nothing: the input is read before the run's first save (it
    left a "failed" snapshot, so the right input under ``if_run_exists="fail"`` was refused
    as "already exists"), and before a restart deletes the stored run."""
    _session, cp = stores
    agent = Agent("a", model=ScriptedProvider([text("never")]))
    with pytest.raises((UserError, TypeError)):
        await Runner.run(agent, bad, checkpoint=CheckpointOptions(cp, "job", if_run_exists="fail"))
    assert await cp.load("job") is None
    agent = Agent("a", model=ScriptedProvider([text("first")]))
    done = await Runner.run(
        agent, "q", checkpoint=CheckpointOptions(cp, "job", if_run_exists="fail")
    )
    assert done.output == "first"
    before = await cp.load("job")
    agent = Agent("a", model=ScriptedProvider([text("never")]))
    with pytest.raises((UserError, TypeError)):
        await Runner.run(
            agent, bad, checkpoint=CheckpointOptions(cp, "job", if_run_exists="restart")
        )
    after = await cp.load("job")
    assert after is not None and before is not None
    assert (after.status, after.output, after.entries) == ("completed", "first", before.entries)


@pytest.mark.parametrize(
    ("value", "expected"),
    [({"a": [1, 2]}, '{"a": [1, 2]}'), (None, "null"), ([1, "x"], '[1, "x"]'), (_Odd(), "<odd>")],
)
async def test_a_tool_returning_an_odd_value_is_stored_as_the_text_the_model_saw(
    stores: Any, value: Any, expected: str
) -> None:
    session, cp = stores

    @tool
    def odd() -> Any:
        """Return something that is not a string."""
        return value

    model = ScriptedProvider([call("odd", {}), text("done")])
    agent = Agent("a", model=model, tools=[odd])
    result = await Runner.run(
        agent, "go", session=session, session_id="u", checkpoint=CheckpointOptions(cp, "r")
    )
    seen = [m.content for m in model.calls[1] if m.role == "tool"]
    assert seen == [expected]
    (segment,) = await session.segments("u")
    stored = [e.output for e in segment.entries if isinstance(e, ToolResultEntry)]
    assert stored == [expected] and segment.entries == result.entries
    snapshot = await cp.load("r")
    assert snapshot is not None and snapshot.entries == result.entries


@pytest.mark.parametrize("escape", [KeyboardInterrupt, SystemExit])
async def test_a_tool_that_raises_past_exception_leaves_a_run_the_next_submission_finishes(
    stores: Any, escape: type[BaseException]
) -> None:
    """KeyboardInterrupt or SystemExit inside a tool ends the process's run: it propagates,
    nothing lands in the session, the call stays dangling in the checkpoint, and the same
    submission later runs that call again and lands the run once."""
    session, cp = stores
    attempts: list[str] = []

    @tool
    def fragile(n: int) -> str:
        """Work that the process may be stopped in."""
        attempts.append(f"{n}")
        if len(attempts) == 1:
            raise escape()
        return f"done {n}"

    first = Agent(
        "a", model=ScriptedProvider([call("fragile", {"n": 1}), text("x")]), tools=[fragile]
    )
    with pytest.raises(escape):
        await Runner.run(
            first, "go", session=session, session_id="u", checkpoint=CheckpointOptions(cp, "r")
        )
    assert await session.segments("u") == []
    snapshot = await cp.load("r")
    assert snapshot is not None and snapshot.status != "completed"
    assert [e.type for e in snapshot.entries] == ["input", "tool_call"]
    model = ScriptedProvider([text("finished")])  # the saved turn is not asked again
    second = Agent("a", model=model, tools=[fragile])
    resumed = await Runner.run(
        second, "ignored", session=session, session_id="u", checkpoint=CheckpointOptions(cp, "r")
    )
    assert resumed.output == "finished" and attempts == ["1", "1"]
    assert len(model.calls) == 1
    assert [m.content for m in model.calls[0] if m.role == "tool"] == ["done 1"]
    (segment,) = await session.segments("u")
    assert _well_formed(segment.entries)
    assert [e.type for e in segment.entries] == ANSWERED_CALL
    assert segment.entries[0] == InputEntry(role="user", content="go")


NOT_ENTRIES = {
    "None in the list": [None],
    "a string": "hello",
    "one entry, not in a list": InputEntry(role="user", content="alone"),
    "a number in the list": [InputEntry(role="user", content="x"), 3],
    "a dict that is no entry": [{"foo": 1}],
}


@pytest.mark.parametrize("bad", list(NOT_ENTRIES))
async def test_appending_what_is_not_entries_is_refused_and_the_session_stays_readable(
    stores: Any, bad: str
) -> None:
    """Found by this test: the SQL stores wrote such a call as a row no read could decode,
    so every later read of the whole session (or run) raised StoreError: one bad call lost
    the conversation. Now it is a UserError that writes nothing, on every store."""
    session, cp = stores
    good = [
        InputEntry(role="user", content="kept"),
        ToolCallEntry(call_id="c", name="t", arguments="{}"),
        ToolResultEntry(call_id="c", output="o"),
    ]
    await session.append("s", good, run_id="r1")
    with pytest.raises(UserError) as caught:
        await session.append("s", NOT_ENTRIES[bad], run_id="r2")
    assert caught.value.hint
    (segment,) = await session.segments("s")
    assert segment.run_id == "r1" and segment.entries == good
    assert await session.load("s") == good
    # the refused run id was not taken: the right call under it is stored
    assert await session.append("s", good[:1], run_id="r2") == "r2"
    assert [s.run_id for s in await session.segments("s")] == ["r1", "r2"]

    from lovia import RunHead

    await cp.append("run", good, RunHead(agent_name="a"))
    with pytest.raises(UserError):
        await cp.append("run", NOT_ENTRIES[bad], RunHead(agent_name="a", turns=1))
    snapshot = await cp.load("run")
    assert snapshot is not None and snapshot.entries == good and snapshot.turns == 0


async def test_entry_dicts_are_read_as_entries_on_every_store(stores: Any) -> None:
    session, cp = stores
    from lovia import RunHead
    from lovia.transcript import entry_to_dict

    entries = [
        InputEntry(role="user", content="d"),
        ToolCallEntry(call_id="c", name="t", arguments="{}"),
    ]
    await session.append("s", [entry_to_dict(e) for e in entries], run_id="r")
    assert await session.load("s") == entries
    await cp.append("run", [entry_to_dict(e) for e in entries], RunHead(agent_name="a"))
    snapshot = await cp.load("run")
    assert snapshot is not None and snapshot.entries == entries
