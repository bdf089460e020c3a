"""Property: after any sequence of appends, deletes and reopens, the SQLite checkpointer holds
exactly what the in-memory one holds (C2, C3): entries concatenated in order, the last head."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lovia import (
    AssistantTextEntry,
    InMemoryCheckpointer,
    RunHead,
    SQLiteCheckpointer,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
)

RUNS = ["a", "b", "c"]

entries = st.lists(
    st.one_of(
        st.builds(AssistantTextEntry, content=st.text(max_size=30)),
        st.builds(
            ToolCallEntry,
            call_id=st.text(min_size=1, max_size=8),
            name=st.sampled_from(["read", "write"]),
            arguments=st.just("{}"),
        ),
        st.builds(
            ToolResultEntry,
            call_id=st.text(min_size=1, max_size=8),
            output=st.text(max_size=40),
            is_error=st.booleans(),
        ),
    ),
    max_size=4,
)
heads = st.builds(
    RunHead,
    agent_name=st.sampled_from(["x", "y"]),
    turns=st.integers(0, 50),
    status=st.sampled_from(["running", "interrupted", "completed", "failed"]),
    output=st.one_of(st.none(), st.text(max_size=10)),
    context_state=st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
    updated_at=st.floats(0, 2e9),
)
operations = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.sampled_from(RUNS), entries, heads),
        st.tuples(st.just("delete"), st.sampled_from(RUNS)),
        st.tuples(st.just("reopen")),
    ),
    max_size=25,
)


async def apply(ops: list[tuple[Any, ...]], path: Path) -> None:
    model = InMemoryCheckpointer()
    store = SQLiteCheckpointer(path)
    try:
        for op in ops:
            if op[0] == "append":
                batch: list[TranscriptEntry] = op[2]
                await model.append(op[1], batch, op[3])
                await store.append(op[1], batch, op[3])
            elif op[0] == "delete":
                await model.delete(op[1])
                await store.delete(op[1])
            else:
                await store.close()
                store = SQLiteCheckpointer(path)
        for run in RUNS:
            assert await store.load(run) == await model.load(run)
        ids = [s.run_id for s in await store.list_runs()]
        assert sorted(ids) == sorted(s.run_id for s in await model.list_runs())
    finally:
        await store.close()


@settings(max_examples=40, deadline=None)
@given(operations)
def test_sqlite_holds_what_the_in_memory_model_holds(ops: list[tuple[Any, ...]]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        asyncio.run(apply(ops, Path(directory) / "cp.db"))
