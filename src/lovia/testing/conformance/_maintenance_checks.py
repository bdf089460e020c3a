"""The session store's optional capabilities: trim, rewind and the session version."""

from __future__ import annotations

from ...context import content_digest
from ...errors import SessionConflict
from ...stores.capabilities import RewindsSessions, TrimsToolResults, VersionedSession
from ...stores.session_protocol import Segment
from ...transcript import ToolResultEntry
from ._kit import Check, Kit
from ._session_data import ids, three_runs, tool_run, user

__all__ = ["MAINTENANCE_CHECKS"]


# -- maintenance (capabilities) --------------------------------------------------------------


async def trim(kit: Kit) -> None:
    kit.require_capability(TrimsToolResults)
    big = "".join(chr(ord("a") + i % 26) for i in range(1000))
    for n in (1, 2, 3):
        await kit.store.append("s", tool_run(n, big), run_id=f"r{n}", meta={"n": n})
    trimmed = await kit.store.trim_tool_results("s", keep_chars=400, keep_runs=1)
    kit.expect(trimmed == 2, "trim: returns the number of outputs it cut", expected=2, got=trimmed)
    segments = await kit.store.segments("s")
    marker = (
        "\n[lovia: trimmed 600 of 1000 characters; "
        f'recall_tool_result("{content_digest(big)}") returns the '
        "whole output if a result store archived it]"
    )
    for seg in segments[:2]:
        out = seg.entries[2]
        kit.expect(
            isinstance(out, ToolResultEntry) and out.output == big[:400] + marker,
            "trim: an old output keeps its first keep_chars characters, then the marker",
            got=getattr(out, "output", out),
        )
    kit.expect(
        segments[2:] == [Segment("r3", tool_run(3, big), {"n": 3})],
        "trim: the last keep_runs runs are left whole",
    )
    kit.expect(
        ids(segments) == ["r1", "r2", "r3"]
        and [s.meta for s in segments[:2]] == [{"n": 1}, {"n": 2}],
        "trim: order, run ids and meta stay",
        got=[(s.run_id, s.meta) for s in segments],
    )
    again = await kit.store.trim_tool_results("s", keep_chars=400, keep_runs=1)
    kit.expect(
        again == 0 and await kit.store.segments("s") == segments,
        "trim: a second trim with the same arguments changes nothing",
        got=again,
    )


async def rewind(kit: Kit) -> None:
    kit.require_capability(RewindsSessions)
    await three_runs(kit.store)
    other = await three_runs(kit.store, "other")
    removed = await kit.store.rewind("s", keep_entries=6)  # A + B's input and call
    kit.expect(removed == 5, "rewind: returns the entries removed", expected=5, got=removed)
    got = await kit.store.segments("s")
    want = [
        Segment("A", tool_run(1), {"context_state": {"a": 1}}),
        Segment("B", [user("question 2")], None),
    ]
    kit.expect(
        got == want,
        "rewind: later runs go, a cut run loses its tail, its orphaned call and its meta",
        expected=want,
        got=got,
    )
    kit.expect(
        await kit.store.rewind("s", keep_entries=100) == 0 and await kit.store.segments("s") == got,
        "rewind: a cut at or past the end changes nothing",
    )
    kit.expect(await kit.store.load("other") == other, "isolation: rewind touched another session")
    await kit.store.append("s", [user("edited")], run_id="C")  # deleted ids are free again
    kit.expect(
        ids(await kit.store.segments("s")) == ["A", "B", "C"],
        "rewind: new runs append after the cut, and removed run ids are free again",
        got=ids(await kit.store.segments("s")),
    )
    kit.expect(await kit.store.rewind("s", keep_entries=0) == 6, "rewind: to 0 removes all")
    kit.expect(await kit.store.segments("s") == [], "rewind: keep_entries=0 empties the session")


async def version(kit: Kit) -> None:
    kit.require_capability(VersionedSession)
    await kit.store.append("s", tool_run(1), run_id="A")
    loaded = (await kit.store.history("s")).version
    await kit.store.append("s", tool_run(2), run_id="B", expected_version=loaded)
    try:
        await kit.store.append("s", tool_run(3), run_id="C", expected_version=loaded)
        conflict = False
    except SessionConflict:
        conflict = True
    kit.expect(conflict, "session version: an append at a stale version raises SessionConflict")
    kit.expect(
        ids(await kit.store.segments("s")) == ["A", "B"],
        "session version: a refused append wrote nothing",
        got=ids(await kit.store.segments("s")),
    )
    replay = await kit.store.append("s", tool_run(1), run_id="A", expected_version=0)
    kit.expect(replay == "A", "run_id idempotency: a stored run id returns whatever the version")


MAINTENANCE_CHECKS: tuple[Check, ...] = tuple(
    Check(fn.__name__, fn, (fn.__doc__ or "").strip()) for fn in (trim, rewind, version)
)
