"""The checkpointer contract, one coroutine per promise (docs/stores.md lists them)."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable
from typing import Any, TypeVar

from ...errors import RunCancelled, UserError
from ...stores.checkpoint import Checkpointer, IfRunExists, PendingApproval, RunHead
from ...transcript import (
    AssistantTextEntry,
    InputEntry,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
)
from ...usage import Usage
from ._capability_checks import CHECKPOINTER_CAPABILITY_CHECKS
from ._kit import Check, Kit
from ._lease_checks import LEASE_CHECKS
from ._worker import crash_batch, run_entries

__all__ = ["CHECKPOINT_CHECKS"]

T = TypeVar("T")


def user(text: str) -> InputEntry:
    return InputEntry(role="user", content=text)


def head(**overrides: Any) -> RunHead:
    values: dict[str, Any] = {"agent_name": "worker"}
    values.update(overrides)
    return RunHead(**values)


async def protocol(kit: Kit) -> None:
    kit.expect(
        isinstance(kit.store, Checkpointer),
        "protocol: the store has async append, load and delete",
        got=type(kit.store).__name__,
    )
    kit.expect(
        await kit.store.load("never-stored") is None,
        "a new store is empty: an unknown run id loads as None",
    )


async def append_order(kit: Kit) -> None:
    expected: list[TranscriptEntry] = []
    for i in range(40):
        pair: list[TranscriptEntry] = [
            ToolCallEntry(call_id=f"c{i}", name="step", arguments=f'{{"i": {i}}}'),
            ToolResultEntry(call_id=f"c{i}", output=f"done {i}"),
        ]
        batch = pair[: 1 + i % 2]
        expected.extend(batch)
        await kit.store.append("long", batch, head(turns=i))
    snap = await kit.store.load("long")
    kit.expect(snap is not None, "append: a saved run loads")
    got = snap.entries
    if got != expected and sorted(map(repr, got)) == sorted(map(repr, expected)):
        kit.expect(False, "append-only: entries were reordered")
    kit.expect(len(got) >= len(expected), "append-only: saved entries were lost", got=len(got))
    kit.expect(
        got == expected,
        "append-only: a run is every save's entries, in order",
        expected=expected[:6],
        got=got[:6],
    )
    kit.expect(snap.turns == 39, "append: the head is the latest one saved", got=snap.turns)


async def head_round_trip(kit: Kit) -> None:
    stored = head(
        usage=Usage(input_tokens=30, output_tokens=7),
        turns=3,
        status="interrupted",
        output={"answer": ["ü", 1.5, None]},
        error={"type": "X", "message": "m"},
        last_input_tokens=12,
        context_state={"k": [1]},
        updated_at=1234.5,
        pending_handoff="other",
        started_at=1000.0,
        session_id="chat-1",
        started_calls=("c1",),
        session_version=4,
        turn_agent="worker",
        pending_approvals=(
            PendingApproval("c2", "delete", '{"id": 1}', "d1", "worker", 1200.0, None, None),
        ),
        budget={"spent": 1},
        trace={"traceparent": "00-x"},
    )
    await kit.store.append("r", [user("hi")], head())
    await kit.store.append("r", [AssistantTextEntry(content="yo")], stored)
    snap = await kit.store.load("r")
    kit.expect(
        snap is not None and snap.head == stored,
        "round trip: the head comes back as saved (every field)",
        expected=stored,
        got=None if snap is None else snap.head,
    )
    kit.expect(
        snap is not None and snap.run_id == "r" and len(snap.entries) == 2,
        "round trip: load returns the run id and every entry",
    )


async def delete(kit: Kit) -> None:
    await kit.store.append("r", [user("a")], head())
    await kit.store.append("other", [user("b")], head())
    await kit.store.delete("r")
    kit.expect(await kit.store.load("r") is None, "delete: a deleted run loads as None")
    kit.expect(await kit.store.load("other") is not None, "isolation: delete removed another run")
    await kit.store.append("r", [user("fresh")], head(turns=9))
    snap = await kit.store.load("r")
    kit.expect(
        snap is not None and snap.entries == [user("fresh")],
        "delete: an append after delete starts the run afresh",
        got=None if snap is None else snap.entries,
    )
    await kit.store.delete("never-stored")  # deleting an unknown id is fine


async def copies(kit: Kit) -> None:
    entries: list[TranscriptEntry] = [user("hi")]
    await kit.store.append("r", entries, head(context_state={"n": [1]}))
    entries.append(user("sneaked"))
    snap = await kit.store.load("r")
    snap.entries.append(user("also"))
    snap.context_state["n"].append(2)
    again = await kit.store.load("r")
    kit.expect(
        again.entries == [user("hi")] and again.context_state == {"n": [1]},
        "copies: mutating what went in or came out changed the store",
        got=(again.entries, again.context_state),
    )


async def reopen_sees_the_data(kit: Kit) -> None:
    await kit.store.append("r", [user("hi")], head(turns=1))
    again = await kit.reopen()
    snap = await again.load("r")
    kit.require(
        again is kit.store or snap is not None,
        "the store keeps nothing between opens (in memory): nothing to reopen",
    )
    kit.expect(
        snap is not None and snap.entries == [user("hi")] and snap.turns == 1,
        "durability: a store opened again on the same directory sees what was saved",
    )


async def concurrent_appends(kit: Kit) -> None:
    """Saves of eight runs at once, and two saves of one run at once: none is lost."""
    await asyncio.gather(
        *(kit.store.append(f"w{i}", run_entries(f"w{i}"), head(turns=i)) for i in range(8))
    )
    for i in range(8):
        snap = await kit.store.load(f"w{i}")
        kit.expect(
            snap is not None and snap.entries == run_entries(f"w{i}"),
            "concurrent appends: a save made while others were saving was lost",
        )
    await kit.store.append("one", [user("start")], head())
    await asyncio.gather(
        kit.store.append("one", [user("x")], head(turns=1)),
        kit.store.append("one", [user("y")], head(turns=1)),
    )
    snap = await kit.store.load("one")
    got = [] if snap is None else snap.entries
    kit.expect(
        len(got) == 3,
        f"concurrent appends: {3 - len(got)} of 2 concurrent appends to one run were lost",
        got=got,
    )


async def concurrent_processes(kit: Kit) -> None:
    """Three processes save their own runs 10 times each into one store."""
    await kit.require_shared()
    tags, count = ("p0", "p1", "p2"), 10
    await kit.run_together("write", tags, count)
    store = await kit.reopen()
    for tag in tags:
        snap = await store.load(tag)
        want = [e for k in range(count) for e in run_entries(f"{tag}-{k}", 2)]
        got = [] if snap is None else snap.entries
        kit.expect(
            len(got) == len(want),
            "concurrent writers: saves from several processes were lost",
            expected=len(want),
            got=len(got),
        )
        kit.expect(got == want, "append-only: entries were reordered among concurrent writers")


async def crash_mid_append(kit: Kit) -> None:
    """A process killed (SIGKILL) while saving leaves the run at one whole save: its head
    and its entries agree, and the store takes saves afterwards."""
    await kit.require_shared()
    proc = kit.spawn("forever")
    assert proc.stdout is not None
    for _ in range(5):
        if not await asyncio.to_thread(proc.stdout.readline):
            break
    proc.send_signal(signal.SIGKILL)
    await asyncio.to_thread(proc.communicate)  # reaps it and closes its pipes
    after = await kit.reopen()
    snap = await after.load("crash")
    kit.expect(snap is not None, "crash: saves made before a crash were lost")
    want = [e for k in range(snap.turns + 1) for e in crash_batch(k)]
    kit.expect(
        snap.entries == want,
        "crash: a save is all or nothing (after a crash the head and the entries disagree)",
        expected=f"{len(want)} entries for head.turns={snap.turns}",
        got=f"{len(snap.entries)} entries",
    )
    await after.append("crash", crash_batch(snap.turns + 1), head(turns=snap.turns + 1))
    again = await after.load("crash")
    kit.expect(
        again is not None and len(again.entries) == len(want) + 3,
        "crash: the store takes saves after a crash",
    )


# -- if_run_exists, through the runner -------------------------------------------------------


async def _run(kit: Kit, run_id: str, policy: IfRunExists, answer: str) -> Any:
    from ...agent import Agent
    from ...runner import Runner
    from ...stores.run_options import CheckpointOptions
    from .. import ScriptedProvider, text

    model = ScriptedProvider([text(answer)])
    agent = Agent("kit", model=model)
    options = CheckpointOptions(kit.store, run_id, if_run_exists=policy)
    result = await Runner.run(agent, "question", checkpoint=options)
    return result, len(model.calls)


async def _refused(call: Awaitable[Any]) -> bool:
    try:
        await call
    except UserError:
        return True
    return False


async def if_run_exists(kit: Kit) -> None:
    """Every policy on a stored and an unknown run id, driven by the runner."""
    first, calls = await _run(kit, "job", "resume", "first")
    kit.expect(first.output == "first" and calls == 1, "resume: a new run id starts a run")
    again, calls = await _run(kit, "job", "resume", "never")
    kit.expect(
        again.output == "first" and calls == 0 and again.replayed,
        "if_run_exists='resume': a completed run is replayed, with no model call",
        got=(again.output, calls),
    )
    only, calls = await _run(kit, "job", "resume_only", "never")
    kit.expect(only.output == "first" and calls == 0, "if_run_exists='resume_only' replays")
    before = await kit.store.load("job")
    kit.expect(
        await _refused(_run(kit, "job", "fail", "never")),
        "if_run_exists='fail': a stored run id raises UserError",
    )
    kit.expect(
        await kit.store.load("job") == before,
        "if_run_exists='fail': the stored run is left unchanged",
    )
    restarted, calls = await _run(kit, "job", "restart", "second")
    snap = await kit.store.load("job")
    kit.expect(
        restarted.output == "second" and calls == 1,
        "if_run_exists='restart': the run starts again",
    )
    answers = [e.content for e in snap.entries if isinstance(e, AssistantTextEntry)]
    kit.expect(
        answers == ["second"],
        "if_run_exists='restart': the old run's entries were kept",
        got=answers,
    )
    kit.expect(
        await _refused(_run(kit, "nobody", "resume_only", "never")),
        "if_run_exists='resume_only': an unknown run id raises UserError",
    )
    kit.expect(
        await kit.store.load("nobody") is None,
        "if_run_exists='resume_only': a refused run stores nothing",
    )
    fresh, calls = await _run(kit, "new-fail", "fail", "third")
    kit.expect(fresh.output == "third", "if_run_exists='fail': an unknown run id starts a run")


async def resume(kit: Kit) -> None:
    """A run stopped inside a tool resumes from its checkpoint, each entry once."""
    from ...agent import Agent
    from ...runner import Runner
    from ...stores.run_options import CheckpointOptions
    from ...tools import tool
    from .. import ScriptedProvider, call, text

    stops = ["stop"]

    @tool
    def export() -> str:
        """Export."""
        if stops:
            raise RunCancelled(stops.pop())
        return "exported"

    model = ScriptedProvider([call("export", call_id="e1"), text("done")])
    agent = Agent("kit", model=model, tools=[export])
    options = CheckpointOptions(kit.store, "stopped")
    try:
        await Runner.run(agent, "go", checkpoint=options)
    except RunCancelled:
        pass
    snap = await kit.store.load("stopped")
    kit.expect(
        snap is not None and snap.status == "interrupted",
        "resume: a stopped run is stored as interrupted",
        got=None if snap is None else snap.status,
    )
    result = await Runner.run(agent, [], checkpoint=CheckpointOptions(kit.store, "stopped"))
    done = await kit.store.load("stopped")
    calls = [e.call_id for e in done.entries if isinstance(e, ToolCallEntry)]
    kit.expect(
        result.output == "done" and done.status == "completed" and calls == ["e1"],
        "resume: the run continued from its checkpoint, each entry once",
        got=(result.output, done.status, calls),
    )


CHECKPOINT_CHECKS: tuple[Check, ...] = (
    tuple(
        Check(fn.__name__, fn, (fn.__doc__ or "").strip())
        for fn in (
            protocol,
            append_order,
            head_round_trip,
            delete,
            copies,
            reopen_sees_the_data,
            concurrent_appends,
            concurrent_processes,
            crash_mid_append,
            if_run_exists,
            resume,
        )
    )
    + LEASE_CHECKS
    + CHECKPOINTER_CAPABILITY_CHECKS
)
