"""``list_runs(session_id=...)``: one conversation's runs, without reading the others'
(the web page asks for one chat's unfinished run on every chat request; issue 14, item 13)."""

from __future__ import annotations

from lovia import InputEntry, RunHead

from .backends import Backend, checkpoint_backend, checkpointer

__all__ = ["checkpoint_backend", "checkpointer"]


async def test_list_runs_filters_by_session_and_status(
    checkpoint_backend: Backend,
) -> None:
    cp = checkpoint_backend.open()
    for i, (session, status) in enumerate(
        [("a", "failed"), ("b", "failed"), ("a", "completed"), (None, "failed"), ("a", "running")]
    ):
        head = RunHead("w", status=status, session_id=session, updated_at=1000.0 + i)
        await cp.append(f"r{i}", [InputEntry(content=f"m{i}")], head)
    mine = await cp.list_runs(statuses=["failed", "running"], session_id="a")  # type: ignore[attr-defined]
    assert [r.run_id for r in mine] == ["r4", "r0"]  # newest first
    assert [e.text for e in mine[1].entries] == ["m0"]
    every = await cp.list_runs(session_id="a")  # type: ignore[attr-defined]
    assert sorted(r.run_id for r in every) == ["r0", "r2", "r4"]
    assert await cp.list_runs(session_id="nobody") == []  # type: ignore[attr-defined]
    assert len(await cp.list_runs(statuses=["failed"])) == 3  # type: ignore[attr-defined]
