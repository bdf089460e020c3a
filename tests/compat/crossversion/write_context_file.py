"""Run under lovia 0.9.119: leave a session file whose segments carry compaction decisions.

``context.db`` holds two sessions read by a provider that reports no usage, each one run of
sixteen page fetches under ``Compaction``: ``cleared`` (window 9,000: results cleared and
large ones offloaded) and ``summarized`` (window 5,000: large results offloaded and the
oldest turns summarized). Their segment meta holds 0.9.119's ``context_state`` record.
"""

import asyncio

from lovia import Agent, Runner, SQLiteSession, tool
from lovia.context import Compaction
from lovia.transcript import FinishDelta, TextDelta, ToolCallDelta

SUMMARY = (
    "## Session intent\nRead pages.\n## Current state\nPages 0-5 read.\n## Key facts\nlorem.\n"
    "## Artifacts\nnone\n## Constraints\nnone\n## Next steps\nread more"
)


class Reader:
    """Fetches pages 0-15, then answers; a call without tools is a summary request."""

    name = "reader"
    model = None
    supports_json_schema = False

    def __init__(self):
        self.turns = 0

    async def stream(self, entries, *, tools=None, response_format=None, settings=None):
        if not tools:
            yield TextDelta(text=SUMMARY)
        elif self.turns < 16:
            n = self.turns
            yield ToolCallDelta(index=0, call_id=f"c{n}", name="fetch", arguments=f'{{"n": {n}}}')
        else:
            yield TextDelta(text="done")
        if tools:
            self.turns += 1
        yield FinishDelta(reason="tool_calls" if tools and self.turns <= 16 else "stop")


@tool
def fetch(n: int) -> str:
    """Fetch page n."""
    return f"page {n}: " + "lorem ipsum dolor sit amet " * (200 if n % 3 == 0 else 60)


async def main() -> None:
    session = SQLiteSession("context.db")
    for session_id, window in (("cleared", 9_000), ("summarized", 5_000)):
        policy = Compaction(context_window=window, reserve_output_tokens=1_000)
        agent = Agent(name="a", model=Reader(), tools=[fetch], context_policy=policy)
        await Runner.run(agent, "read pages 0-15", session=session, session_id=session_id)


asyncio.run(main())
