"""The optional capabilities of ``lovia.stores.capabilities`` that callers use for listing,
inspecting and changing stored runs and sessions; each check runs only on a store that
declares its capability (has its methods) and is skipped, with the reason, otherwise."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from ...stores.capabilities import (
    AppendsNow,
    ListsRunHeads,
    ListsRuns,
    ListsSessions,
    LoadsFirstEntries,
    PrunesRuns,
    RewindsRuns,
    UpdatesHeads,
)
from ...stores.checkpoint import RunHead
from ._kit import Check, Kit
from ._session_data import ids, three_runs, tool_run, user

__all__ = ["CHECKPOINTER_CAPABILITY_CHECKS", "SESSION_CAPABILITY_CHECKS"]


def head(**overrides: Any) -> RunHead:
    return RunHead(**{"agent_name": "worker", **overrides})


# -- session stores --------------------------------------------------------------------------


async def list_sessions(kit: Kit) -> None:
    kit.require_capability(ListsSessions)
    await kit.store.append("empty", [user("gone")], run_id="x")
    await kit.store.clear("empty")
    await kit.store.append("s1", tool_run(1), run_id="A")
    await kit.store.append("s2", tool_run(2), run_id="B")
    await kit.store.append("s2", tool_run(3), run_id="C")
    infos = {i.session_id: i for i in await kit.store.list_sessions()}
    kit.expect(
        set(infos) == {"s1", "s2"},
        "list_sessions: every non-empty session, and no other",
        expected={"s1", "s2"},
        got=set(infos),
    )
    kit.expect(
        (infos["s2"].runs, infos["s2"].entries) == (2, 8),
        "list_sessions: a session's runs and entries are counted",
        expected=(2, 8),
        got=(infos["s2"].runs, infos["s2"].entries),
    )


async def rewind_runs(kit: Kit) -> None:
    kit.require_capability(RewindsRuns)
    await three_runs(kit.store)
    result = await kit.store.rewind_runs("s", keep_entries=6)  # A + B's input and call
    kit.expect(
        result.removed == 5 and set(result.affected_run_ids) == {"B", "C"},
        "rewind_runs: the entries removed, and the runs cut (B) or dropped (C)",
        expected=(5, {"B", "C"}),
        got=(result.removed, set(result.affected_run_ids)),
    )
    kit.expect(ids(await kit.store.segments("s")) == ["A", "B"], "rewind_runs: the cut holds")


# -- checkpointers ---------------------------------------------------------------------------


async def _two_runs(kit: Kit) -> None:
    await kit.store.append("done", [user("a"), user("b")], head(status="completed"))
    await kit.store.append("live", [user("c")], head(status="running", session_id="s"))


async def list_runs(kit: Kit) -> None:
    kit.require_capability(ListsRuns)
    await _two_runs(kit)
    every = {s.run_id: s for s in await kit.store.list_runs()}
    kit.expect(set(every) == {"done", "live"}, "list_runs: every stored run", got=set(every))
    kit.expect(
        every["done"].entries == [user("a"), user("b")],
        "list_runs: a run comes with its entries",
        got=every["done"].entries,
    )
    running = [s.run_id for s in await kit.store.list_runs(statuses=["running"])]
    kit.expect(running == ["live"], "list_runs: statuses= filters", got=running)


async def list_run_heads(kit: Kit) -> None:
    kit.require_capability(ListsRunHeads)
    await _two_runs(kit)
    every = {i.run_id: i for i in await kit.store.list_run_heads()}
    kit.expect(set(every) == {"done", "live"}, "list_run_heads: every stored run")
    kit.expect(
        (every["done"].entry_count, every["done"].status) == (2, "completed"),
        "list_run_heads: each run's entry count and head",
        got=(every["done"].entry_count, every["done"].status),
    )
    of_s = [i.run_id for i in await kit.store.list_run_heads(session_id="s")]
    kit.expect(of_s == ["live"], "list_run_heads: session_id= filters", got=of_s)
    done = [i.run_id for i in await kit.store.list_run_heads(statuses=["completed"])]
    kit.expect(done == ["done"], "list_run_heads: statuses= filters", got=done)


async def load_first_entries(kit: Kit) -> None:
    kit.require_capability(LoadsFirstEntries)
    await _two_runs(kit)
    got = await kit.store.load_first_entries(["done", "live", "unknown"], limit=1)
    want = {"done": [user("a")], "live": [user("c")]}
    kit.expect(
        got == want,
        "load_first_entries: the first entries of each run; an unknown id is left out",
        expected=want,
        got=got,
    )


async def update_head(kit: Kit) -> None:
    kit.require_capability(UpdatesHeads)
    await kit.store.append("r", [user("a")], head(turns=1))
    stored = await kit.store.update_head("r", lambda h: replace(h, turns=h.turns + 1))
    snap = await kit.store.load("r")
    kit.expect(
        stored is not None and stored.turns == 2 and snap is not None and snap.turns == 2,
        "update_head: the new head is stored and returned",
        got=None if snap is None else snap.turns,
    )
    kept = await kit.store.update_head("r", lambda h: None)
    kit.expect(kept is not None and kept.turns == 2, "update_head: None from fn keeps the head")
    snap = await kit.store.load("r")
    kit.expect(
        snap is not None and snap.entries == [user("a")],
        "update_head: the entries are untouched",
    )
    kit.expect(
        await kit.store.update_head("nobody", lambda h: h) is None,
        "update_head: an unknown run gives None and creates nothing",
    )
    kit.expect(await kit.store.load("nobody") is None, "update_head: creates no run")


async def prune(kit: Kit) -> None:
    kit.require_capability(PrunesRuns)
    await _two_runs(kit)
    gone = await kit.store.prune(statuses=["completed"])
    kit.expect(gone == 1, "prune: returns how many runs it deleted", expected=1, got=gone)
    kit.expect(
        await kit.store.load("done") is None and await kit.store.load("live") is not None,
        "prune: only runs with those statuses go",
    )


async def append_now(kit: Kit) -> None:
    kit.require_capability(AppendsNow)
    await kit.store.append("r", [user("a")], head(turns=1))
    saved = kit.store.append_now("r", [user("b")], head(turns=2))
    snap = await kit.store.load("r")
    want = [user("a"), user("b")] if saved else [user("a")]
    kit.expect(
        snap is not None and snap.entries == want and snap.turns == (2 if saved else 1),
        "append_now: True means saved as append saves; False means nothing was written",
        expected=want,
        got=None if snap is None else snap.entries,
    )


def _checks(*fns: Callable[[Kit], Awaitable[None]]) -> tuple[Check, ...]:
    return tuple(Check(f.__name__, f, (f.__doc__ or "").strip()) for f in fns)


SESSION_CAPABILITY_CHECKS = _checks(list_sessions, rewind_runs)
CHECKPOINTER_CAPABILITY_CHECKS = _checks(
    list_runs, list_run_heads, load_first_entries, update_head, prune, append_now
)
