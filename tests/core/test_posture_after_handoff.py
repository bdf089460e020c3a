"""Posture lives on the agent a run starts with (compat): 0.9.119's retries and running pages
say the entry agent's ``retry`` and ``context_policy`` govern the whole run, handoffs
included; the agent handed to does not bring its own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lovia import Agent, OpenAIChatProvider, ProviderError, RetryPolicy, Runner
from lovia.context import CompactionRequest, ContextResult
from lovia.testing import ScriptedProvider, call, text

from ..providers.server import (
    ProtocolServer,
    Reply,
    openai_chunk,
    openai_error,
    openai_text_stream,
    sse,
)

FAST = RetryPolicy(max_attempts=3, backoff_base=0.0, backoff_max=0.0)


class Named:
    """A context policy that notes its name at each model call."""

    def __init__(self, name: str, log: list[str]) -> None:
        self.name, self.log = name, log

    async def compact(self, req: CompactionRequest) -> ContextResult:
        self.log.append(self.name)
        return ContextResult(entries=list(req.entries))


def test_the_entry_agents_context_policy_shapes_every_turn() -> None:
    log: list[str] = []
    b = Agent("b", model=ScriptedProvider([text("from b")]), context_policy=Named("B", log))
    a = Agent(
        "a",
        model=ScriptedProvider([call("transfer_to_b", {})]),
        handoffs=[b],
        context_policy=Named("A", log),
    )
    assert Runner.run_sync(a, "hi").output == "from b"
    assert log == ["A", "A"]

    log.clear()
    b2 = b.clone(model=ScriptedProvider([text("from b")]))
    a2 = a.clone(model=ScriptedProvider([call("transfer_to_b", {})]), handoffs=[b2])
    Runner.run_sync(a2, "hi", context_policy=Named("run", log))
    assert log == ["run", "run"]


@pytest.fixture
def server() -> Iterator[ProtocolServer]:
    srv = ProtocolServer().start()
    try:
        yield srv
    finally:
        srv.close()


def handoff_then_rate_limited(server: ProtocolServer) -> None:
    transfer = openai_chunk(
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "index": 0,
                    "id": "h1",
                    "type": "function",
                    "function": {"name": "transfer_to_b", "arguments": "{}"},
                }
            ],
        }
    )
    server.add(
        Reply(events=[transfer, openai_chunk({}, finish="tool_calls"), sse("[DONE]")]),
        openai_error(429, "slow down", "rate_limit_error"),
        Reply(events=openai_text_stream("from b")),
    )


async def test_the_entry_agents_retry_policy_covers_the_agent_handed_to(
    server: ProtocolServer,
) -> None:
    handoff_then_rate_limited(server)
    async with OpenAIChatProvider("m", base_url=f"{server.url}/v1", api_key="k") as model:
        await _check_retry_posture(server, model)


async def _check_retry_posture(server: ProtocolServer, model: OpenAIChatProvider) -> None:
    b = Agent("b", model=model, retry=None)
    a = Agent("a", model=model, handoffs=[b], retry=FAST)
    assert (await Runner.run(a, "hi")).output == "from b"
    assert len(server.requests) == 3

    handoff_then_rate_limited(server)
    strict = a.clone(retry=None, handoffs=[b.clone(retry=FAST)])
    with pytest.raises(ProviderError) as caught:
        await Runner.run(strict, "hi")
    assert caught.value.status_code == 429
    assert len(server.requests) == 5
