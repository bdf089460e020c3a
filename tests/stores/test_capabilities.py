"""Issue 28: a store's optional methods are declared capabilities (lovia.stores.capabilities),
and callers ask for a capability, never probe a method name."""

from __future__ import annotations

import ast
import inspect
import pathlib
from typing import Any

import pytest

from lovia.stores import InMemoryCheckpointer, InMemorySession, SQLiteCheckpointer, SQLiteSession
from lovia.stores import capabilities as caps
from lovia.stores.postgres_checkpoint import PostgresCheckpointer

SRC = pathlib.Path(__file__).resolve().parents[2] / "src" / "lovia"

SESSION_CAPS = {
    caps.VersionedSession,
    caps.ListsSessions,
    caps.TrimsToolResults,
    caps.RewindsSessions,
    caps.RewindsRuns,
    caps.ForksSessions,
}
CHECKPOINTER_CAPS = {
    caps.LeaseStore,
    caps.ListsRuns,
    caps.ListsRunHeads,
    caps.LoadsFirstEntries,
    caps.UpdatesHeads,
    caps.PrunesRuns,
    caps.ForksRuns,
    caps.AppendsNow,
}


def _store_methods() -> set[str]:
    names: set[str] = set()
    for capability in SESSION_CAPS | CHECKPOINTER_CAPS | {caps.Closes, caps.ReadsOldFiles}:
        names.update(caps.capability_methods(capability))
    names.discard("append")  # the core method VersionedSession extends
    return names | {"_append_now"}


def test_no_caller_probes_an_optional_store_method_by_name() -> None:
    methods = _store_methods()
    offenders = []
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith("testing/conformance/"):  # the kit names what a store lacks
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr")
                and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and node.args[1].value in methods
            ):
                offenders.append(f"{rel}:{node.lineno} {node.func.id}(..., {node.args[1].value!r})")
    assert offenders == [], offenders


@pytest.mark.parametrize("make", [InMemorySession, lambda p: SQLiteSession(p / "s.db")])
async def test_the_built_in_session_stores_declare_every_session_capability(
    make: Any, tmp_path: pathlib.Path
) -> None:
    store = make(tmp_path) if make is not InMemorySession else make()
    try:
        missing = [c.__name__ for c in SESSION_CAPS if not caps.has_capability(store, c)]
        assert missing == []
    finally:
        if caps.has_capability(store, caps.Closes):
            await store.close()


@pytest.mark.parametrize("sqlite", [False, True])
async def test_the_built_in_checkpointers_declare_every_run_capability(
    sqlite: bool, tmp_path: pathlib.Path
) -> None:
    store: Any = SQLiteCheckpointer(tmp_path / "c.db") if sqlite else InMemoryCheckpointer()
    try:
        missing = [c.__name__ for c in CHECKPOINTER_CAPS if not caps.has_capability(store, c)]
        assert missing == []
    finally:
        if caps.has_capability(store, caps.Closes):
            await store.close()


class FourMethodSession:
    """A third-party store with the core alone and one capability, as docs/stores.md says."""

    def __init__(self) -> None:
        self.rows: dict[str, list[Any]] = {}

    async def segments(self, session_id: str) -> list[Any]:
        return list(self.rows.get(session_id, []))

    async def load(self, session_id: str) -> list[Any]:
        return [e for s in await self.segments(session_id) for e in s.entries]

    async def append(
        self, session_id: str, entries: Any, *, run_id: Any = None, meta: Any = None
    ) -> str:
        raise NotImplementedError

    async def clear(self, session_id: str) -> None:
        self.rows.pop(session_id, None)

    async def list_sessions(self) -> list[Any]:
        return []


def test_a_store_declares_a_capability_by_having_its_methods() -> None:
    store = FourMethodSession()
    assert caps.has_capability(store, caps.ListsSessions)
    assert not caps.has_capability(store, caps.VersionedSession)
    assert not caps.has_capability(store, caps.RewindsRuns)
    assert caps.capability_methods(caps.RewindsRuns) == ("rewind_runs",)


async def test_a_store_that_reads_old_files_declares_it_with_a_property(
    tmp_path: pathlib.Path,
) -> None:
    assert caps.capability_methods(caps.ReadsOldFiles) == ("needs_migration",)
    assert not caps.has_capability(InMemorySession(), caps.ReadsOldFiles)
    assert not caps.has_capability(FourMethodSession(), caps.ReadsOldFiles)
    async with SQLiteSession(tmp_path / "s.db") as session:
        await session.append("s1", [])
    for store in (
        SQLiteSession(tmp_path / "s.db", read_only=True),
        SQLiteCheckpointer(tmp_path / "s.db"),
    ):
        try:
            assert caps.has_capability(store, caps.ReadsOldFiles)
            assert store.needs_migration is False  # a file this lovia wrote
        finally:
            await store.close()


@pytest.mark.parametrize("store", [SQLiteCheckpointer, PostgresCheckpointer, InMemoryCheckpointer])
def test_forks_runs_declares_the_fork_the_stores_take(store: type) -> None:
    """``ForksRuns.fork`` takes what ``fork_run`` and the built-in stores take: the edits
    at the fork point (``ForkEdits``) as keywords, not the cut alone."""

    def params(method: Any) -> list[tuple[str, Any, Any]]:
        signature = inspect.signature(method)
        return [(p.name, p.kind, p.annotation) for p in signature.parameters.values()]

    assert params(caps.ForksRuns.fork) == params(store.fork)
