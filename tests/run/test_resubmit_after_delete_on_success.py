"""A run whose checkpoint was deleted on success, submitted again with the same run id (the
crashed-worker pattern), is answered from its session segment: no tool runs twice and the
answer is the stored one (issue 14, item 6)."""

from __future__ import annotations

from pathlib import Path

from lovia import (
    Agent,
    CheckpointOptions,
    InMemoryCheckpointer,
    InMemorySession,
    Runner,
    events,
    tool,
)
from lovia.stores import SQLiteCheckpointer, SQLiteSession
from lovia.testing import ScriptedProvider, call, text


async def test_resubmitting_a_deleted_run_replays_it_from_the_session() -> None:
    charges: list[int] = []

    @tool
    def charge(amount: int) -> str:
        """Charge the card."""
        charges.append(amount)
        return f"charged {amount}"

    session, cp = InMemorySession(), InMemoryCheckpointer()
    opts = CheckpointOptions(cp, "order-7", delete_on_success=True)
    model = ScriptedProvider([call("charge", {"amount": 30}), text("Paid 30.")])
    agent = Agent("shop", model=model, tools=[charge])
    first = await Runner.run(agent, "pay", session=session, session_id="u1", checkpoint=opts)
    assert first.output == "Paid 30." and await cp.load("order-7") is None

    again = Agent("shop", model=ScriptedProvider([]), tools=[charge])
    handle = Runner.stream(again, "pay", session=session, session_id="u1", checkpoint=opts)
    seen = [type(e) async for e in handle]
    second = await handle.result()
    assert second.output == "Paid 30." and second.replayed
    assert seen == [events.RunCompleted]
    assert charges == [30]
    assert [s.run_id for s in await session.segments("u1")] == ["order-7"]


async def test_on_a_sqlite_file_reopened_the_deleted_run_replays_and_a_new_session_runs_anew(
    tmp_path: Path,
) -> None:
    """As the seed's crashed-worker pattern does it: the second submission comes from a new
    store on the same file. The session holding the run id replays it (no second charge); a
    session without that id gets a fresh run, stored as usual."""
    charges: list[int] = []

    @tool
    def charge(amount: int) -> str:
        """Charge the card."""
        charges.append(amount)
        return f"charged {amount}"

    def submit(model: ScriptedProvider) -> tuple[Agent, CheckpointOptions, SQLiteSession]:
        cp = SQLiteCheckpointer(tmp_path / "app.db", wal=True)
        opts = CheckpointOptions(cp, "order-7", delete_on_success=True)
        return (
            Agent("shop", model=model, tools=[charge]),
            opts,
            SQLiteSession(tmp_path / "app.db", wal=True),
        )

    agent, opts, session = submit(
        ScriptedProvider([call("charge", {"amount": 30}), text("Paid 30.")])
    )
    first = await Runner.run(agent, "pay", session=session, session_id="u1", checkpoint=opts)
    await session.close()
    await opts.checkpointer.close()  # type: ignore[attr-defined]

    agent, opts, session = submit(
        ScriptedProvider([call("charge", {"amount": 5}), text("Paid 5.")])
    )
    again = await Runner.run(agent, "pay", session=session, session_id="u1", checkpoint=opts)
    assert (first.output, again.output, again.replayed) == ("Paid 30.", "Paid 30.", True)
    assert charges == [30]
    fresh = await Runner.run(agent, "pay", session=session, session_id="u2", checkpoint=opts)
    assert (fresh.output, fresh.replayed, charges) == ("Paid 5.", False, [30, 5])
    assert [s.run_id for s in await session.segments("u2")] == ["order-7"]
    await session.close()
    await opts.checkpointer.close()  # type: ignore[attr-defined]
