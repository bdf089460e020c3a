"""Hostile input: odd ids, huge entries, tools returning what JSON cannot hold, a model
sending broken tool calls. Each ends in a clear error or a stored, readable result, and never
changes what was stored before (issue 9; S3, S7, C1, C5)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from lovia import (
    Agent,
    CheckpointOptions,
    InMemoryCheckpointer,
    InMemorySession,
    InputEntry,
    ProviderError,
    RunHead,
    Runner,
    SQLiteCheckpointer,
    SQLiteSession,
    ToolCallEntry,
    ToolResultEntry,
    UserError,
    tool,
)
from lovia.testing import ScriptedProvider, call, text
from lovia.transcript import FinishDelta, ModelDelta, ToolCallDelta

from .files import ENTRIES, file_bytes, filled, rows
from .stores import assert_well_formed

BAD_IDS = {"empty": "", "huge": "x" * (1 << 20), "nul": "a\x00b"}
ODD_IDS = {
    "sql": "'; DROP TABLE lovia_session_segments; --",
    "path": "../../etc/passwd",
    "quotes": "\"'`\\%_*?[]{}$(rm -rf /)",
    "unicode": "用户-42 🚀 \u202e",
}


@pytest.mark.parametrize("bad", list(BAD_IDS.values()), ids=list(BAD_IDS))
async def test_an_empty_huge_or_nul_id_is_refused_and_nothing_changes(
    tmp_path: Path, bad: str
) -> None:
    path = tmp_path / "s.db"
    await filled(path)
    before = file_bytes(path)
    async with SQLiteSession(path) as s, SQLiteCheckpointer(path) as cp:
        for attempt in (
            s.append(bad, ENTRIES),
            s.append("u1", ENTRIES, run_id=bad),
            s.load(bad),
            s.clear(bad),
            cp.append(bad, ENTRIES, RunHead(agent_name="a")),
            cp.load(bad),
            cp.delete(bad),
        ):
            with pytest.raises(UserError) as info:
                await attempt
            assert info.value.hint
            assert len(str(info.value)) < 500  # a 1 MB id is not echoed back
    assert file_bytes(path) == before


@pytest.mark.parametrize("bad", list(BAD_IDS.values()), ids=list(BAD_IDS))
async def test_a_run_with_a_bad_session_or_run_id_fails_before_any_work(bad: str) -> None:
    model = ScriptedProvider([text("never")])
    session, cp = InMemorySession(), InMemoryCheckpointer()
    with pytest.raises(UserError):
        await Runner.run(Agent("a", model=model), "hi", session=session, session_id=bad)
    with pytest.raises(UserError):
        await Runner.run(Agent("a", model=model), "hi", checkpoint=CheckpointOptions(cp, bad))
    assert model.calls == []


@pytest.mark.parametrize("odd", list(ODD_IDS.values()), ids=list(ODD_IDS))
async def test_ids_full_of_sql_and_path_characters_are_only_data(tmp_path: Path, odd: str) -> None:
    """Stored and read back verbatim, isolated from other ids; no table dropped, no file made."""
    path = tmp_path / "s.db"
    await filled(path)
    model = ScriptedProvider([text("stored")])
    async with SQLiteSession(path) as s, SQLiteCheckpointer(path) as cp:
        result = await Runner.run(
            Agent("a", model=model),
            "hi",
            session=s,
            session_id=odd,
            checkpoint=CheckpointOptions(cp, odd),
        )
        assert [seg.run_id for seg in await s.segments(odd)] == [odd]
        assert await s.load(odd) == result.entries
        assert await s.load("u1") == ENTRIES
        snap = await cp.load(odd)
        assert snap is not None and snap.run_id == odd and snap.status == "completed"
        assert (await cp.load("r1")) is not None
    tables = {r[0] for r in rows(path, "SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"lovia_session_segments", "checkpoint_runs", "checkpoint_batches"} <= tables
    assert [n for n in os.listdir(tmp_path) if not n.startswith("s.db")] == []


async def test_a_50_mb_entry_is_stored_and_read_back_whole(tmp_path: Path) -> None:
    """Decision: lovia stores big entries (SQLite allows up to 1 GB per value); the run's
    input goes through the checkpoint and the session and comes back byte for byte."""
    path = tmp_path / "big.db"
    big = "0123456789abcdef" * (50 * (1 << 20) // 16)
    model = ScriptedProvider([text("read it")])
    async with SQLiteSession(path) as s, SQLiteCheckpointer(path) as cp:
        await Runner.run(
            Agent("a", model=model),
            big,
            session=s,
            session_id="u1",
            checkpoint=CheckpointOptions(cp, "r1"),
        )
        loaded = await s.load("u1")
        snap = await cp.load("r1")
    assert loaded[0] == InputEntry(role="user", content=big)
    assert snap is not None and snap.entries[0] == loaded[0]
    assert rows(path, "PRAGMA integrity_check") == [("ok",)]


async def test_a_50_mb_tool_output_is_cut_to_the_agents_limit_with_a_marker() -> None:
    """A huge tool output never reaches the store whole: max_tool_output_chars cuts it."""

    @tool
    def dump() -> str:
        """Return a lot."""
        return "y" * (50 * (1 << 20))

    cp = InMemoryCheckpointer()
    model = ScriptedProvider([call("dump", {}), text("ok")])
    result = await Runner.run(
        Agent("a", model=model, tools=[dump]), "go", checkpoint=CheckpointOptions(cp, "r1")
    )
    out = next(e for e in result.entries if isinstance(e, ToolResultEntry))
    assert len(out.output) < 200_200
    assert "tool output truncated" in out.output


class Weird:
    def __repr__(self) -> str:
        return "<weird>"


@pytest.mark.parametrize(
    ("value", "is_error", "shown"),
    [
        (Weird(), False, "<weird>"),
        ({"k": Weird()}, False, "<weird>"),
        ({1, 2}, False, "[1, 2]"),
        ("lone \udcff surrogate", False, "lone \\udcff surrogate"),
    ],
    ids=["object", "dict-with-object", "set", "lone-surrogate"],
)
async def test_a_tool_returning_what_json_cannot_hold_gives_a_stored_result(
    tmp_path: Path, value: Any, is_error: bool, shown: str
) -> None:
    """The model sees a safe rendering (a value JSON cannot hold as its str(), as lovia
    0.9.119 did) and the run goes on to the end; the checkpoint and session hold it and read
    back."""

    @tool
    def odd() -> Any:
        """Return something odd."""
        return value

    path = tmp_path / "t.db"
    model = ScriptedProvider([call("odd", {}), text("carried on")])
    async with SQLiteSession(path) as s, SQLiteCheckpointer(path) as cp:
        result = await Runner.run(
            Agent("a", model=model, tools=[odd]),
            "go",
            session=s,
            session_id="u1",
            checkpoint=CheckpointOptions(cp, "r1"),
        )
        stored = await s.load("u1")
        snap = await cp.load("r1")
    assert result.output == "carried on"
    out = next(e for e in stored if isinstance(e, ToolResultEntry))
    assert out.is_error is is_error
    assert shown in out.output
    assert snap is not None and snap.entries == stored


async def test_a_model_sending_malformed_tool_call_json_gets_an_error_result() -> None:
    """Arguments that are not JSON are stored verbatim; the tool does not run; the model
    is told and may try again."""
    ran: list[int] = []

    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        ran.append(a + b)
        return a + b

    model = ScriptedProvider(
        [call("add", '{"a": 1, "b": ', call_id="c1"), call("add", {"a": 1, "b": 2}), text("3")]
    )
    result = await Runner.run(Agent("a", model=model, tools=[add]), "add")
    assert result.output == "3"
    assert ran == [3]
    first = next(e for e in result.entries if isinstance(e, ToolResultEntry))
    assert first.is_error and "Invalid JSON in tool arguments" in first.output
    assert_well_formed(result.entries)
    told = model.calls[1][-1]
    assert told.role == "tool" and told.tool_call_id == "c1"
    stored_call = next(e for e in result.entries if isinstance(e, ToolCallEntry))
    assert stored_call.arguments == '{"a": 1, "b": '


async def test_a_model_calling_an_unknown_tool_gets_an_error_result_naming_the_tools() -> None:
    model = ScriptedProvider([call("launch_missiles", {}), text("sorry")])

    @tool
    def safe() -> str:
        """Harmless."""
        return "ok"

    result = await Runner.run(Agent("a", model=model, tools=[safe]), "go")
    out = next(e for e in result.entries if isinstance(e, ToolResultEntry))
    assert out.is_error
    assert out.output == "Tool 'launch_missiles' is not available."
    assert result.output == "sorry"


class NamelessCall:
    """A provider whose model streams a tool call without a name."""

    name = "broken"
    model = "broken"
    supports_json_schema = False

    async def stream(self, entries: Sequence[Any], **kwargs: Any) -> AsyncIterator[ModelDelta]:
        yield ToolCallDelta(0, "c1", "", '{"x": 1}')
        yield FinishDelta("tool_calls")


async def test_a_tool_call_without_a_name_fails_the_run_and_stores_no_half_turn() -> None:
    cp = InMemoryCheckpointer()
    with pytest.raises(ProviderError, match="no name"):
        await Runner.run(
            Agent("a", model=NamelessCall(), retry=None),  # fails at once, no backoff
            "go",
            checkpoint=CheckpointOptions(cp, "r"),
        )
    snap = await cp.load("r")
    # the error names no status, so a new model call may well do better: interrupted
    assert snap is not None and snap.status == "interrupted"
    assert snap.entries == [InputEntry(role="user", content="go")]


async def test_a_model_reply_with_lone_surrogates_is_stored_escaped(tmp_path: Path) -> None:
    """A model may send a lone ``\\ud83d`` escape in its JSON; the turn is saved with it
    escaped instead of failing the save (and every retry) with a serialization error."""
    model = ScriptedProvider([call("echo", {"x": "a\ud83d"}), text("half an emoji: \ud83d")])

    @tool
    def echo(x: str) -> str:
        """Echo."""
        return x

    path = tmp_path / "s.db"
    async with SQLiteSession(path) as s, SQLiteCheckpointer(path) as cp:
        result = await Runner.run(
            Agent("a", model=model, tools=[echo]),
            "go",
            session=s,
            session_id="u1",
            checkpoint=CheckpointOptions(cp, "r1"),
        )
        stored = await s.load("u1")
    assert result.output == "half an emoji: \\ud83d"
    assert stored == result.entries
    assert_well_formed(stored)
