"""What compaction must be able to fold away, and what its estimate must count.

An earlier user message is history like any other: only the latest one stays verbatim, so a
huge paste from a past turn can be summarized. And the tool schemas sent with every call take
room in the window, so a large catalogue counts towards the budget.
"""

from __future__ import annotations

from typing import Any

from lovia import Agent, InMemorySession, Runner, tool
from lovia.context import Compaction
from lovia.events import ContextCompacted
from lovia.testing import text

from .support import ScriptedProvider

WINDOW = 32_000


class Summarizer:
    def __init__(self) -> None:
        self.spans: list[list[Any]] = []

    async def summarize(self, entries: Any, *, req: Any, prior_summary: Any = None) -> str:
        self.spans.append(list(entries))
        return "the user pasted a long document and it was acknowledged"


def sent_text(model: ScriptedProvider) -> str:
    return "\n".join(m.text for m in model.calls[-1])


async def test_a_huge_earlier_user_message_is_summarized_when_a_later_one_follows() -> None:
    paste = "lorem ipsum " * 12_000  # ~36k tokens: more than the window on its own
    summarizer = Summarizer()
    model = ScriptedProvider([text("noted"), text("glad to help")])
    agent = Agent(
        "a",
        model=model,
        context_policy=Compaction(context_window=WINDOW, summarizer=summarizer),
    )
    session = InMemorySession()
    # The first run sends the paste as the latest user message: it stays verbatim.
    await Runner.run(agent, paste, session=session, session_id="s")
    assert paste in sent_text(model)

    events: list[ContextCompacted] = []
    handle = Runner.stream(agent, "thanks, that is all", session=session, session_id="s")
    events = [e async for e in handle if isinstance(e, ContextCompacted)]
    result = await handle.result()

    assert result.output == "glad to help"
    assert len(events) == 1 and "summary" in events[0].notice.reason
    assert summarizer.spans and any(
        getattr(e, "content", None) == paste for e in summarizer.spans[0]
    )
    view = sent_text(model)
    assert paste not in view
    assert "thanks, that is all" in view
    assert "acknowledged" in view
    # The session keeps the whole conversation; only the view was compacted.
    assert any(getattr(e, "content", None) == paste for e in await session.load("s"))


async def test_the_latest_user_message_stays_verbatim_even_when_huge() -> None:
    paste = "lorem ipsum " * 12_000
    summarizer = Summarizer()
    model = ScriptedProvider([text("noted")])
    agent = Agent(
        "a",
        model=model,
        context_policy=Compaction(context_window=WINDOW, summarizer=summarizer),
    )
    await Runner.run(agent, paste)
    assert summarizer.spans == []
    assert paste in sent_text(model)


def catalogue(n: int) -> list[Any]:
    """``n`` tools with long descriptions: a big schema payload on every call."""
    tools = []
    for i in range(n):

        def body(query: str) -> str:
            return query

        body.__name__ = f"lookup_{i}"
        body.__doc__ = f"Look up records of kind {i}. " + "Details of the record format. " * 60
        tools.append(tool(body))
    return tools


async def test_tool_schemas_count_towards_the_budget() -> None:
    history = [text("noted"), text("noted"), text("noted"), text("done")]
    turns = ["first question " + "x" * 24_000, "second", "third " + "y" * 24_000, "fourth"]

    async def compactions(tools: list[Any]) -> int:
        model = ScriptedProvider(list(history))
        agent = Agent(
            "a",
            model=model,
            tools=tools,
            context_policy=Compaction(context_window=WINDOW, summarizer=Summarizer()),
        )
        session = InMemorySession()
        seen = 0
        for turn in turns:
            handle = Runner.stream(agent, turn, session=session, session_id="s")
            seen += len([e async for e in handle if isinstance(e, ContextCompacted)])
            await handle.result()
        return seen

    # ~12k tokens of conversation fits a 32k window on its own; with ~20k tokens of
    # schemas on top, the same conversation is over the trigger and gets compacted.
    assert await compactions([]) == 0
    assert await compactions(catalogue(40)) >= 1
