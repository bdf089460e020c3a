"""A run whose checkpoint was deleted on success, submitted again with the same run id (the
crashed-worker pattern), is answered from its session segment: no tool runs twice and the
answer is the stored one (issue 14, item 6)."""

from __future__ import annotations

from lovia import (
    Agent,
    CheckpointOptions,
    InMemoryCheckpointer,
    InMemorySession,
    Runner,
    events,
    tool,
)
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
