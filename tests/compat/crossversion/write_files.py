"""Run under lovia 0.9.119: leave behind the SQLite files a user of it would have.

``chat.db``: a session ``u1`` with two finished runs (one with a tool call).
``runs.db``: a completed run ``done`` and a run ``stopped`` cancelled after its first tool
result (status ``interrupted``).
"""

import asyncio

from lovia import (
    Agent,
    CancelToken,
    CheckpointOptions,
    RunCancelled,
    Runner,
    SQLiteCheckpointer,
    SQLiteSession,
    tool,
)
from lovia.testing import ScriptedProvider, call, text


@tool
def add(a: int, b: int) -> int:
    """Add."""
    return a + b


async def main() -> None:
    session = SQLiteSession("chat.db")
    cp = SQLiteCheckpointer("runs.db")
    agent = Agent(
        name="calc",
        instructions="Add.",
        model=ScriptedProvider([call("add", {"a": 2, "b": 3}, call_id="c1"), text("5")]),
        tools=[add],
    )
    await Runner.run(
        agent, "2+3?", session=session, session_id="u1", checkpoint=CheckpointOptions(cp, "done")
    )
    agent = Agent(
        name="calc", instructions="Add.", model=ScriptedProvider([text("Still 5.")]), tools=[add]
    )
    await Runner.run(agent, "and again?", session=session, session_id="u1")

    token = CancelToken()

    @tool
    def add_then_stop(a: int, b: int) -> int:
        """Add, then the operator stops the run."""
        token.cancel("operator stop")
        return a + b

    agent = Agent(
        name="calc",
        model=ScriptedProvider(
            [call("add_then_stop", {"a": 1, "b": 1}, call_id="s1"), text("never")]
        ),
        tools=[add_then_stop],
    )
    try:
        await Runner.run(
            agent,
            "1+1?",
            session=session,
            session_id="u2",
            checkpoint=CheckpointOptions(cp, "stopped"),
            cancel_token=token,
        )
    except RunCancelled:
        pass


asyncio.run(main())
