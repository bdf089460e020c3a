"""Lines of an OpenAI-compatible stream that carry no chunk (compat): a keep-alive
``data: ping``, an empty ``data:`` line or a garbled one are skipped, as 0.9.119 skipped them,
instead of failing the run; a stream cut after them still fails and is retried."""

from __future__ import annotations

from lovia import Agent, RetryPolicy, Runner, events
from lovia.providers import OpenAIChatProvider

from .server import ProtocolServer, Reply, openai_chunk, openai_text_stream, sse


async def test_lines_that_are_not_json_are_skipped(
    server: ProtocolServer, openai_model: OpenAIChatProvider
) -> None:
    stream = openai_text_stream("Hello there")
    server.add(
        Reply(
            events=[
                sse("ping"),
                stream[0],
                "data: \n\n",
                stream[1],
                "data: {broken\n\n",
                *stream[2:],
            ]
        )
    )
    result = await Runner.run(Agent("a", model=openai_model, retry=None), "hi")
    assert result.output == "Hello there"
    assert result.usage.input_tokens == 10


async def test_a_stream_cut_after_a_garbled_line_is_retried(
    server: ProtocolServer, openai_model: OpenAIChatProvider
) -> None:
    server.add(
        Reply(events=[openai_chunk({"content": "par"}), "data: {broken\n\n"], cut_after=2),
        Reply(events=openai_text_stream("whole")),
    )
    agent = Agent("a", model=openai_model, retry=RetryPolicy(backoff_base=0.0, backoff_max=0.0))
    handle = Runner.stream(agent, "hi")
    seen = [type(ev).__name__ async for ev in handle if not isinstance(ev, events.TextDelta)]
    assert (await handle.result()).output == "whole"
    assert "ModelRetrying" in seen and "OutputDiscarded" in seen


async def test_a_dropped_connection_is_marked_retryable_for_a_custom_retry_on(
    server: ProtocolServer, openai_model: OpenAIChatProvider
) -> None:
    # 0.9.119 marked an interrupted stream retryable=True; a retry_on that reads the flag
    # retries it
    seen: list[object] = []

    def retry_on(exc: BaseException) -> bool:
        seen.append(getattr(exc, "retryable", None))
        return getattr(exc, "retryable", None) is True

    server.add(
        Reply(
            events=[openai_chunk({"content": "par"}), openai_chunk({"content": "t"})], cut_after=1
        ),
        Reply(events=openai_text_stream("whole")),
    )
    policy = RetryPolicy(backoff_base=0.0, backoff_max=0.0, retry_on=retry_on)
    result = await Runner.run(Agent("a", model=openai_model, retry=policy), "hi")
    assert result.output == "whole"
    assert seen == [True]
