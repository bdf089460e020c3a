"""HTTP errors, retries, cut streams and cancellation, for both providers.

Every test runs against the OpenAI-compatible and the Anthropic dialect of the test server.
"""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from lovia import (
    Agent,
    CheckpointOptions,
    ContextOverflowError,
    InMemoryCheckpointer,
    InMemorySession,
    InputEntry,
    Provider,
    ProviderError,
    RetryPolicy,
    RunCancelled,
    Runner,
)
from lovia.events import TextDelta

from .common import add
from .dialects import ANTHROPIC, OPENAI, Dialect
from .server import (
    ProtocolServer,
    Reply,
    anthropic_event,
    anthropic_start,
    openai_chunk,
    sse,
)

FAST_RETRY = RetryPolicy(initial_delay=0.01)


def agent(model: Provider, *, retry: RetryPolicy | None = None) -> Agent:
    return Agent("helper", instructions="Be brief.", model=model, tools=[add], retry=retry)


def first_events(reply: Reply, n: int, **changes: object) -> Reply:
    return dataclasses.replace(reply, events=reply.events[:n], **changes)  # type: ignore[arg-type]


async def test_rejected_key_is_a_provider_error_naming_the_variable_and_is_not_retried(
    dialect: Dialect, server: ProtocolServer, model: Provider
) -> None:
    server.add(dialect.auth_error)

    with pytest.raises(ProviderError) as info:
        await Runner.run(agent(model, retry=FAST_RETRY), "hi")

    assert info.value.status_code == 401
    assert info.value.hint is not None and dialect.key_variable in info.value.hint
    assert len(server.requests) == 1


@pytest.mark.parametrize("failure", ["rate_limited", "server_error"])
async def test_rate_limit_or_server_error_is_retried_once_by_the_agents_policy(
    dialect: Dialect, server: ProtocolServer, model: Provider, failure: str
) -> None:
    server.add(getattr(dialect, failure), dialect.text("recovered"))

    result = await Runner.run(agent(model, retry=FAST_RETRY), "hi")

    assert result.output == "recovered"
    assert len(server.requests) == 2  # the SDK's own retries are off: exactly one retry


async def test_without_a_retry_policy_a_rate_limit_fails_the_run_after_one_request(
    dialect: Dialect, server: ProtocolServer, model: Provider
) -> None:
    server.add(dialect.rate_limited, dialect.text("never sent"))

    with pytest.raises(ProviderError) as info:
        await Runner.run(agent(model), "hi")

    assert info.value.status_code == 429
    assert not isinstance(info.value, ContextOverflowError)
    assert len(server.requests) == 1


async def test_context_length_rejection_is_a_context_overflow_error(
    dialect: Dialect, server: ProtocolServer, model: Provider
) -> None:
    # The loop gives the context policy one more try after an overflow, so answer twice.
    server.add(dialect.overflow, dialect.overflow)

    with pytest.raises(ContextOverflowError) as info:
        await Runner.run(agent(model, retry=FAST_RETRY), "a very long prompt")

    assert info.value.status_code == 400
    assert info.value.hint is not None and "context" in info.value.hint


async def test_vllm_style_overflow_without_a_code_is_recognised_by_its_message(
    server: ProtocolServer,
) -> None:
    from .dialects import OPENAI
    from .server import openai_error

    message = (
        "This model's maximum context length is 4096 tokens. However, you requested "
        "5000 tokens (4000 in the messages, 1000 in the completion)."
    )
    server.add(*[openai_error(400, message, "BadRequestError")] * 2)
    async with OPENAI.make(server) as model:
        with pytest.raises(ContextOverflowError):
            await Runner.run(agent(model), "hi")


@pytest.mark.parametrize("how", ["connection_dropped", "body_ended_early"])
async def test_cut_stream_fails_the_run_with_nothing_half_written(
    dialect: Dialect, server: ProtocolServer, model: Provider, how: str
) -> None:
    """C-requirements: a failed call leaves no partial assistant entry in the checkpoint."""
    full = dialect.text("Hello there, my friend, how are you?")
    cut = {"cut_after": 4} if how == "connection_dropped" else {"end_early_after": 4}
    server.add(dataclasses.replace(full, **cut))  # type: ignore[arg-type]
    cp = InMemoryCheckpointer()
    session = InMemorySession()

    with pytest.raises(ProviderError) as info:
        await Runner.run(
            agent(model),
            "hi",
            session=session,
            session_id="chat",
            checkpoint=CheckpointOptions(cp, run_id="run-cut"),
        )

    assert info.value.status_code is None  # retryable: nothing the server said was final
    snap = await cp.load("run-cut")
    assert snap is not None
    assert snap.entries == [InputEntry(role="user", content="hi")]
    assert await session.load("chat") == []


async def test_cut_stream_retried_gives_one_clean_answer(
    dialect: Dialect, server: ProtocolServer, model: Provider
) -> None:
    full = dialect.text("Hello there, my friend.")
    server.add(dataclasses.replace(full, cut_after=4), full)

    result = await Runner.run(agent(model, retry=FAST_RETRY), "hi")

    assert result.output == "Hello there, my friend."
    assert [e.type for e in result.entries] == ["input", "assistant_text"]


async def test_anthropic_error_event_mid_stream_is_retried_as_overloaded(
    server: ProtocolServer,
) -> None:
    overloaded = Reply(
        events=[
            anthropic_start(),
            anthropic_event(
                "error", {"error": {"type": "overloaded_error", "message": "Overloaded"}}
            ),
        ]
    )
    server.add(overloaded, overloaded, ANTHROPIC.text("fine now"))
    async with ANTHROPIC.make(server) as model:
        with pytest.raises(ProviderError) as info:
            await Runner.run(agent(model), "hi")
        assert info.value.status_code == 529

        result = await Runner.run(agent(model, retry=FAST_RETRY), "hi")
    assert result.output == "fine now"
    assert len(server.requests) == 3


async def test_openai_error_object_mid_stream_is_a_provider_error_with_its_message(
    server: ProtocolServer,
) -> None:
    failed = Reply(events=[openai_chunk({"content": "Hel"}), sse({"error": {"message": "boom"}})])
    server.add(failed)
    async with OPENAI.make(server) as model:
        with pytest.raises(ProviderError) as info:
            await Runner.run(agent(model), "hi")
    assert "reported an error mid-stream: boom" in str(info.value)


async def test_cancelling_the_run_mid_stream_closes_the_connection(
    dialect: Dialect, server: ProtocolServer, model: Provider
) -> None:
    server.add(first_events(dialect.text("Hello there, my friend."), 4, hold_open=True))

    handle = Runner.stream(agent(model), "hi")
    async for event in handle:
        if isinstance(event, TextDelta):
            handle.cancel("user pressed stop")
    with pytest.raises(RunCancelled):
        await handle.result()

    # The server holds the stream open until the client leaves; it must see it leave.
    assert await asyncio.to_thread(server.disconnected.wait, 10)


async def test_cancelling_the_awaiting_task_mid_stream_closes_the_connection(
    dialect: Dialect, server: ProtocolServer, model: Provider
) -> None:
    server.add(first_events(dialect.text("Hello there, my friend."), 4, hold_open=True))

    task = asyncio.ensure_future(Runner.run(agent(model), "hi"))
    assert await asyncio.to_thread(server.holding.wait, 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert await asyncio.to_thread(server.disconnected.wait, 10)


def test_one_provider_serves_runs_on_separate_event_loops(
    dialect: Dialect, server: ProtocolServer
) -> None:
    """run_sync twice means two event loops; no idle connection may outlive the first."""
    server.add(dialect.text("one"), dialect.text("two"))
    helper = agent(dialect.provider(server))

    outputs = [helper.run_sync("hi").output, helper.run_sync("again").output]

    assert outputs == ["one", "two"]


@pytest.mark.parametrize(("failure", "status"), [("auth_error", 401), ("rate_limited", 429)])
async def test_a_failed_runs_stored_error_says_its_status_and_whether_to_retry(
    dialect: Dialect, server: ProtocolServer, model: Provider, failure: str, status: int
) -> None:
    """The head of a run failed by the provider keeps ``status_code`` and ``retryable``,
    so a page (or a script) can tell a passing failure from one a retry cannot fix."""
    server.add(getattr(dialect, failure))
    cp = InMemoryCheckpointer()

    with pytest.raises(ProviderError) as info:
        await Runner.run(agent(model), "hi", checkpoint=CheckpointOptions(cp, "r1"))

    snap = await cp.load("r1")
    assert snap is not None and snap.error is not None
    assert snap.error["type"] == "ProviderError"
    assert snap.error["status_code"] == status
    assert snap.error["retryable"] == info.value.retryable
    assert snap.error["retryable"] is (status == 429)
