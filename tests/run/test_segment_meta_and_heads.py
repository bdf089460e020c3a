"""What a finished run leaves behind, as lovia 0.9.119 leaves it (issue 12): a segment's meta
holds the context state and the run's timing; a plain run's head serialises with 0.9.119's
keys only; a resumed run keeps its first start."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from lovia import (
    Agent,
    CancelToken,
    CheckpointOptions,
    InMemorySession,
    RunCancelled,
    RunHead,
    Runner,
    RunSnapshot,
    SQLiteCheckpointer,
    SQLiteSession,
    tool,
)
from lovia.testing import ScriptedProvider, call, text

ZERO_NINE_KEYS = {
    "agent_name",
    "usage",
    "turns",
    "status",
    "output",
    "error",
    "last_input_tokens",
    "context_state",
    "pending_handoff",
    "updated_at",
    "started_at",
}


@pytest.fixture(params=["memory", "sqlite"])
async def session(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    if request.param == "memory":
        yield InMemorySession()
    else:
        async with SQLiteSession(tmp_path / "chat.db") as s:
            yield s


async def test_each_segment_is_timed_and_carries_the_context_state(session: Any) -> None:
    before = time.time()
    await Runner.run(
        Agent("bot", model=ScriptedProvider([text("one")])), "q", session=session, session_id="u"
    )
    after = time.time()
    (seg,) = await session.segments("u")
    assert set(seg.meta) == {"context_state", "timing"}
    assert isinstance(seg.meta["context_state"], dict)
    timing = seg.meta["timing"]
    assert before <= timing["started_at"] <= timing["finished_at"] <= after


async def test_a_resumed_run_is_timed_from_its_first_start(tmp_path: Path) -> None:
    token = CancelToken()

    @tool
    def work() -> str:
        """Work, then the operator stops the run."""
        token.cancel("operator stop")
        return "done"

    cp = SQLiteCheckpointer(tmp_path / "runs.db")
    session = SQLiteSession(tmp_path / "chat.db")
    opts = CheckpointOptions(cp, "job")
    first = Agent("bot", model=ScriptedProvider([call("work", {})]), tools=[work])
    with pytest.raises(RunCancelled) as caught:
        await Runner.run(
            first, "go", checkpoint=opts, session=session, session_id="u", cancel_token=token
        )
    assert str(caught.value).splitlines()[0] == "operator stop"
    stopped = await cp.load("job")
    assert stopped is not None and stopped.status == "interrupted"
    assert isinstance(stopped.started_at, float)
    second = Agent("bot", model=ScriptedProvider([text("finished")]), tools=[work])
    await Runner.run(second, "go", checkpoint=opts, session=session, session_id="u")
    (seg,) = await session.segments("u")
    assert seg.meta["timing"]["started_at"] == stopped.started_at
    assert seg.meta["timing"]["finished_at"] >= stopped.updated_at


async def test_a_plain_runs_head_has_0_9_119s_keys_and_round_trips(tmp_path: Path) -> None:
    cp = SQLiteCheckpointer(tmp_path / "runs.db")
    await Runner.run(
        Agent("bot", model=ScriptedProvider([text("fine")])),
        "hi",
        checkpoint=CheckpointOptions(cp, "r"),
    )
    snap = await cp.load("r")
    assert snap is not None
    data = snap.to_dict()
    # one key more than 0.9.119's, the run's timeline (docs/compat.md); 0.9.119 ignores it
    assert set(data) == ZERO_NINE_KEYS | {"run_id", "entries", "timeline"}
    assert [row[:2] for row in data["timeline"]["turns"]] == [[1, "bot"]]
    assert data["timeline"]["calls"] == []
    assert isinstance(data["started_at"], float)
    back = RunSnapshot.from_json(json.dumps(data))
    assert back.entries == snap.entries and back.head == snap.head


def test_this_projects_head_fields_are_written_only_when_set() -> None:
    head = RunHead(agent_name="bot", session_id="u", session_version=3, budget={"tool_calls": 1})
    data = head.to_dict()
    assert set(data) == ZERO_NINE_KEYS | {"session_id", "session_version", "budget"}
    assert RunHead.from_dict(data) == head
    assert set(RunHead(agent_name="bot").to_dict()) == ZERO_NINE_KEYS
