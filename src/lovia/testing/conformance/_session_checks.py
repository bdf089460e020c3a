"""The session contract, one coroutine per promise (docs/stores.md lists them)."""

from __future__ import annotations

import asyncio
import signal
from typing import Any

from ...stores.session_protocol import Segment, Session
from ...transcript import (
    ReasoningEntry,
    TranscriptEntry,
)
from ._capability_checks import SESSION_CAPABILITY_CHECKS
from ._kit import Check, Kit
from ._maintenance_checks import MAINTENANCE_CHECKS
from ._session_data import ids, say, three_runs, tool_run, user
from ._worker import run_entries

__all__ = ["SESSION_CHECKS"]


def check_order(kit: Kit, segments: list[Segment], expected: list[Segment]) -> None:
    """Name what differs: a run stored twice, one lost, runs or entries out of order."""
    got, want = ids(segments), ids(expected)
    twice = sorted({r for r in got if got.count(r) > 1})
    kit.expect(not twice, f"run_id idempotency: run {twice} was stored twice", got=got)
    lost = [r for r in want if r not in got]
    kit.expect(not lost, f"append-only: appended run {lost} was lost", expected=want, got=got)
    kit.expect(got == want, "append-only: runs were reordered", expected=want, got=got)
    for seg, exp in zip(segments, expected, strict=True):
        if seg.entries != exp.entries and sorted(map(repr, seg.entries)) == sorted(
            map(repr, exp.entries)
        ):
            kit.expect(False, f"append-only: entries of run {seg.run_id!r} were reordered")
        kit.expect(
            seg.entries == exp.entries,
            f"round trip: run {seg.run_id!r} came back with other entries",
            expected=exp.entries,
            got=seg.entries,
        )


# -- the protocol ----------------------------------------------------------------------------


async def protocol(kit: Kit) -> None:
    kit.expect(
        isinstance(kit.store, Session),
        "protocol: the store has async segments, load, append and clear",
        got=type(kit.store).__name__,
    )
    kit.expect(
        await kit.store.segments("nobody") == [] and await kit.store.load("nobody") == [],
        "a new store is empty: an unknown session has no segments",
    )


async def round_trip(kit: Kit) -> None:
    entries: list[TranscriptEntry] = [
        user("héllo ☃ \x01 ' \" ; DROP TABLE x; --"),
        ReasoningEntry(content="think"),
        *tool_run(1, "out\nput \u2028 ✓"),
    ]
    meta = {"context_state": {"k": [1, 2.5, None, "ü"]}, "timing": {"started_at": 1.0}}
    rid = await kit.store.append("s", entries, run_id="r1", meta=meta)
    kit.expect(rid == "r1", "append returns the run id it stored", expected="r1", got=rid)
    got = await kit.store.segments("s")
    kit.expect(
        got == [Segment("r1", entries, meta)],
        "round trip: a segment comes back with the entries and meta appended",
        expected=[Segment("r1", entries, meta)],
        got=got,
    )


async def append_order(kit: Kit) -> None:
    expected = [Segment(f"r{n}", tool_run(n), {"n": n}) for n in (3, 1, 2, 5, 4)]
    for seg in expected:
        await kit.store.append("s", seg.entries, run_id=seg.run_id, meta=seg.meta)
    check_order(kit, await kit.store.segments("s"), expected)
    loaded = await kit.store.load("s")
    flat = [e for seg in expected for e in seg.entries]
    kit.expect(
        loaded == flat,
        "append-only: load() is every segment's entries in append order",
        expected=flat,
        got=loaded,
    )


async def stored_runs_never_change(kit: Kit) -> None:
    await kit.store.append("s", tool_run(1), run_id="A", meta={"a": 1})
    first = await kit.store.segments("s")
    for n in range(2, 6):
        await kit.store.append("s", tool_run(n), run_id=f"r{n}")
    kit.expect(
        (await kit.store.segments("s"))[:1] == first,
        "append-only: a stored segment changed after later appends",
        expected=first,
        got=(await kit.store.segments("s"))[:1],
    )


async def generated_run_ids(kit: Kit) -> None:
    first = await kit.store.append("s", [user("a")])
    second = await kit.store.append("s", [user("b")])
    kit.expect(
        isinstance(first, str) and bool(first) and first != second,
        "run_id=None: each append gets a fresh run id",
        got=(first, second),
    )
    got = ids(await kit.store.segments("s"))
    kit.expect(got == [first, second], "run_id=None: both runs are stored", got=got)


async def idempotent_run_id(kit: Kit) -> None:
    await kit.store.append("s", [user("original")], run_id="r1", meta={"v": 1})
    again = await kit.store.append("s", [user("replayed"), say("x")], run_id="r1", meta={"v": 2})
    segments = await kit.store.segments("s")
    kit.expect(
        len(segments) == 1,
        "run_id idempotency: a re-submitted run was stored twice",
        expected=["r1"],
        got=ids(segments),
    )
    kit.expect(
        segments == [Segment("r1", [user("original")], {"v": 1})],
        "run_id idempotency: a re-submitted run replaced the stored one",
        expected=[Segment("r1", [user("original")], {"v": 1})],
        got=segments,
    )
    kit.expect(again == "r1", "run_id idempotency: a re-append returns the stored id", got=again)


async def isolation(kit: Kit) -> None:
    await kit.store.append("a", [user("in a")], run_id="r1")
    b = await three_runs(kit.store, "b")
    await kit.store.append("b", [user("in b")], run_id="r1")  # r1 is b's own run id too
    kit.expect(
        await kit.store.load("a") == [user("in a")],
        "isolation: sessions never see each other (a run id is scoped to its session)",
        got=await kit.store.load("a"),
    )
    await kit.store.clear("a")
    got = await kit.store.load("b")
    kit.expect(
        got == [*b, user("in b")],
        "isolation: clearing one session leaves the others",
        expected=[*b, user("in b")],
        got=got,
    )


async def clear(kit: Kit) -> None:
    await three_runs(kit.store)
    await kit.store.clear("s")
    kit.expect(await kit.store.segments("s") == [], "clear: a cleared session is empty")
    await kit.store.append("s", [user("again")], run_id="A")
    kit.expect(
        await kit.store.load("s") == [user("again")],
        "clear: a cleared session's run ids are free again",
        got=await kit.store.load("s"),
    )
    await kit.store.clear("nobody")  # clearing an unknown session is fine


async def copies(kit: Kit) -> None:
    entries: list[TranscriptEntry] = [user("hi")]
    meta: dict[str, Any] = {"context_state": {"n": [1]}}
    await kit.store.append("s", entries, run_id="r1", meta=meta)
    entries.append(say("sneaked in"))
    meta["context_state"]["n"].append(2)
    loaded = await kit.store.load("s")
    loaded.append(say("also sneaked"))
    seg = (await kit.store.segments("s"))[0]
    seg.entries.append(say("and this"))
    if seg.meta is not None:
        seg.meta["context_state"]["n"].append(3)
    got = await kit.store.segments("s")
    want = [Segment("r1", [user("hi")], {"context_state": {"n": [1]}})]
    kit.expect(
        got == want,
        "copies: mutating what went in or came out changed the store",
        expected=want,
        got=got,
    )


async def reopen_sees_the_data(kit: Kit) -> None:
    await kit.store.append("s", tool_run(1), run_id="r1", meta={"m": 1})
    again = await kit.reopen()
    kit.require(
        again is kit.store or bool(await again.segments("s")),
        "the store keeps nothing between opens (in memory): nothing to reopen",
    )
    got = await again.segments("s")
    kit.expect(
        got == [Segment("r1", tool_run(1), {"m": 1})],
        "durability: a store opened again on the same directory sees what was appended",
        got=got,
    )


# -- concurrency and crashes -----------------------------------------------------------------


async def concurrent_appends(kit: Kit) -> None:
    """Two appends at once on one store, then eight; none is lost."""
    for width in (2, 8):
        sid = f"c{width}"
        runs = [Segment(f"w{i}", run_entries(f"w{i}"), None) for i in range(width)]
        await asyncio.gather(
            *(kit.store.append(sid, s.entries, run_id=s.run_id) for s in runs),
        )
        got = await kit.store.segments(sid)
        lost = [s.run_id for s in runs if s.run_id not in ids(got)]
        kit.expect(
            not lost,
            f"concurrent appends: {len(lost)} of {width} concurrent appends were lost",
            expected=sorted(ids(runs)),
            got=ids(got),
        )
        kit.expect(
            len(got) == width,
            "run_id idempotency: concurrent appends stored a run twice",
            got=ids(got),
        )
        for seg in got:
            kit.expect(
                seg.entries == run_entries(seg.run_id),
                f"concurrent appends: run {seg.run_id!r} came back with other entries",
                got=seg.entries,
            )


async def concurrent_processes(kit: Kit) -> None:
    """Three processes append 10 runs each to one session, and each the same shared run."""
    await kit.require_shared()
    count, tags = 10, ("p0", "p1", "p2")
    await kit.run_together("write", tags, count)
    got = await (await kit.reopen()).segments("s")
    seen = ids(got)
    expected = [f"{t}-{k}" for t in tags for k in range(count)]
    lost = [r for r in expected if r not in seen]
    kit.expect(
        not lost,
        f"concurrent writers: {len(lost)} of {len(expected)} appends from several processes "
        "were lost",
        got=lost[:10],
    )
    kit.expect(
        seen.count("shared") == 1,
        "run_id idempotency: a run three processes submitted was stored "
        f"{seen.count('shared')} times",
    )
    for tag in tags:
        own = [r for r in seen if r.startswith(f"{tag}-")]
        kit.expect(
            own == [f"{tag}-{k}" for k in range(count)],
            "append-only: one writer's runs were reordered among concurrent writers",
            got=own,
        )
    for seg in got:
        kit.expect(
            seg.entries == run_entries(seg.run_id),
            f"concurrent writers: run {seg.run_id!r} came back with other entries",
        )


async def crash_mid_append(kit: Kit) -> None:
    """A process killed (SIGKILL) while appending leaves every run whole or absent, and the
    store opens and takes appends afterwards."""
    await kit.require_shared()
    proc = kit.spawn("forever")
    assert proc.stdout is not None
    for _ in range(5):  # let it store a few runs, then kill it mid-write
        line = await asyncio.to_thread(proc.stdout.readline)
        if not line:
            break
    proc.send_signal(signal.SIGKILL)
    await asyncio.to_thread(proc.communicate)  # reaps it and closes its pipes
    after = await kit.reopen()
    got = await after.segments("s")
    kit.expect(len(got) >= 1, "crash: runs stored before a crash were lost", got=ids(got))
    kit.expect(
        ids(got) == [f"r{k}" for k in range(len(got))],
        "crash: the runs before the crash are not the ones appended, in order",
        got=ids(got),
    )
    for seg in got:
        kit.expect(
            seg.entries == run_entries(seg.run_id, 20),
            f"crash: run {seg.run_id!r} was stored partly (an append is all or nothing)",
            got=len(seg.entries),
        )
    await after.append("s", [user("after the crash")], run_id="later")
    kit.expect(
        ids(await after.segments("s"))[-1] == "later",
        "crash: the store takes appends after a crash",
    )


SESSION_CHECKS: tuple[Check, ...] = (
    tuple(
        Check(fn.__name__, fn, (fn.__doc__ or "").strip())
        for fn in (
            protocol,
            round_trip,
            append_order,
            stored_runs_never_change,
            generated_run_ids,
            idempotent_run_id,
            isolation,
            clear,
            copies,
            reopen_sees_the_data,
            concurrent_appends,
            concurrent_processes,
            crash_mid_append,
        )
    )
    + MAINTENANCE_CHECKS
    + SESSION_CAPABILITY_CHECKS
)
