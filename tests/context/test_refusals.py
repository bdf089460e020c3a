"""When the provider refuses a view, and when the result store cannot be read."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from lovia import Agent, ContextOverflowError, Runner, tool
from lovia.context import Compaction
from lovia.events import ContextCompacted
from lovia.testing import call, text

from .support import RefusingProvider, ScriptedProvider


class NamingProvider(RefusingProvider):
    """Refuses the calls numbered in ``refuse`` (from 1), naming an 8,192-token window."""

    def __init__(self, inner: ScriptedProvider, refuse: set[int]) -> None:
        super().__init__(inner, refusals=0)
        self.refuse = refuse
        self.count = 0

    async def stream(self, entries: Any, **kwargs: Any) -> Any:
        self.count += 1
        if self.count in self.refuse:
            raise ContextOverflowError("prompt is too long", reported_window=8_192)
        async for delta in self.inner.stream(entries, **kwargs):
            yield delta


@tool
def dump() -> str:
    """Return a huge payload."""
    return "x" * 40_000


async def test_a_refused_view_whose_newest_result_is_too_big_is_retried_with_a_preview(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The default policy with no window: the model's own latest tool result is what
    overflows. The named window reaches the policy, the result loses its protection as a
    preview, and the retry succeeds."""
    inner = ScriptedProvider([call("dump", call_id="d1"), text("recovered")])
    model = NamingProvider(inner, refuse={2})  # the call after the tool result
    agent = Agent("a", model=model, tools=[dump], context_policy=Compaction())
    handle = Runner.stream(agent, "go")
    with caplog.at_level(logging.INFO, logger="lovia.context"):
        events = [event async for event in handle]
        result = await handle.result()
    assert result.output == "recovered"
    (compacted,) = [e for e in events if isinstance(e, ContextCompacted)]
    assert compacted.notice.reactive
    retry = inner.calls[-1]
    (shown,) = [m.content for m in retry if m.role == "tool"]
    assert len(shown) < 1_000 and 'recall_tool_result("' in shown
    assert any("8192" in r.getMessage() for r in caplog.records)
    stored = [e.output for e in result.entries if e.type == "tool_result"]
    assert stored == ["x" * 40_000]  # the transcript keeps it whole


async def test_a_refusal_with_nothing_to_shrink_surfaces_the_providers_error() -> None:
    inner = ScriptedProvider([text("never")])
    model = NamingProvider(inner, refuse={1, 2})
    agent = Agent("a", model=model, context_policy=Compaction())
    with pytest.raises(ContextOverflowError):
        await Runner.run(agent, "hello")


async def test_recall_reads_the_transcript_when_the_store_is_down() -> None:
    class DownStore:
        def put(self, key: str, content: str) -> None:
            raise OSError("disk gone")

        def get(self, key: str) -> str | None:
            raise OSError("disk gone")

    @tool
    def fetch() -> str:
        """Fetch the page."""
        return "the page " * 20

    model = ScriptedProvider(
        [call("fetch", call_id="f1"), call("recall_tool_result", {"ref": "f1"}), text("ok")]
    )
    # The policy's own archiving also fails here; neither may fail the run.
    policy = Compaction(store=DownStore())  # type: ignore[arg-type]
    agent = Agent("a", model=model, tools=[fetch], context_policy=policy)
    result = await Runner.run(agent, "fetch, then look again")
    recalled = [e for e in result.entries if e.type == "tool_result" and e.call_id != "f1"]
    assert [e.output for e in recalled] == ["the page " * 20]
