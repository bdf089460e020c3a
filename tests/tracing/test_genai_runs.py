"""Real runs against real OpenAI- and Anthropic-protocol servers on 127.0.0.1, traced with the
OpenTelemetry SDK: the spans carry the GenAI attributes a trace viewer groups by."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from lovia import (
    Agent,
    ApprovalPending,
    CheckpointOptions,
    ProviderError,
    Runner,
    SQLiteCheckpointer,
    approvals,
    tool,
)
from lovia.testing import ScriptedProvider, call, text
from lovia.tracing import InMemoryTracer, OpenTelemetryTracer

from ..providers.dialects import ANTHROPIC, OPENAI, Dialect
from ..providers.server import ProtocolServer, openai_error


@pytest.fixture
def server() -> ProtocolServer:
    srv = ProtocolServer().start()
    yield srv  # type: ignore[misc]
    srv.close()
    assert not srv.errors, srv.errors


def traced(exporter: InMemorySpanExporter) -> OpenTelemetryTracer:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return OpenTelemetryTracer(provider)


def named(spans: tuple[ReadableSpan, ...], prefix: str) -> ReadableSpan:
    (found,) = [s for s in spans if s.name.startswith(prefix)]
    return found


@pytest.mark.parametrize(
    ("dialect", "model", "provider_name"),
    [(OPENAI, "test-model", "openai"), (ANTHROPIC, "claude-test", "anthropic")],
    ids=["openai", "anthropic"],
)
async def test_the_run_and_its_model_call_name_the_model_and_a_well_known_provider(
    server: ProtocolServer, dialect: Dialect, model: str, provider_name: str
) -> None:
    exporter = InMemorySpanExporter()
    server.add(dialect.text("hello"))
    llm = dialect.provider(server)
    await Runner.run(Agent("greeter", model=llm), "hi", tracer=traced(exporter))

    spans = exporter.get_finished_spans()
    run, chat = named(spans, "invoke_agent"), named(spans, "chat")
    assert run.name == "invoke_agent greeter"
    assert chat.name == f"chat {model}"
    assert chat.parent is not None and chat.parent.span_id == run.context.span_id
    for span, operation in ((run, "invoke_agent"), (chat, "chat")):
        attrs = dict(span.attributes or {})
        assert attrs["gen_ai.operation.name"] == operation
        assert attrs["gen_ai.request.model"] == model
        assert attrs["gen_ai.provider.name"] == provider_name
        assert attrs["gen_ai.usage.input_tokens"] == 10
        assert attrs["gen_ai.usage.output_tokens"] == 5


async def test_a_failed_model_call_marks_both_spans_and_still_names_the_model(
    server: ProtocolServer,
) -> None:
    exporter = InMemorySpanExporter()
    server.add(openai_error(500, "the model is down", "server_error"))
    llm = OPENAI.provider(server)
    with pytest.raises(ProviderError):
        await Runner.run(Agent("a", model=llm, retry=None), "hi", tracer=traced(exporter))

    spans = exporter.get_finished_spans()
    for span in (named(spans, "invoke_agent"), named(spans, "chat")):
        assert span.status.status_code is StatusCode.ERROR
        attrs = dict(span.attributes or {})
        assert attrs["error.type"] == "ProviderError"
        assert attrs["gen_ai.request.model"] == "test-model"


async def test_a_detailed_tracer_of_lovias_own_sees_the_runs_model_and_provider(
    server: ProtocolServer,
) -> None:
    detailed, plain = InMemoryTracer(detailed=True), InMemoryTracer()
    for tracer in (detailed, plain):
        server.add(OPENAI.text("hello"))
        await Runner.run(Agent("a", model=OPENAI.provider(server)), "hi", tracer=tracer)

    (run,) = detailed.named("run")
    assert run.attrs["model"] == "test-model"
    assert run.attrs["provider"] == "openai-chat"  # lovia's name; OpenTelemetry gets "openai"
    (run,) = plain.named("run")
    assert "model" not in run.attrs  # lovia 0.9.119's attribute set, unchanged


async def test_a_run_parked_for_approval_is_not_an_error_and_its_resume_links_back(
    tmp_path: Path,
) -> None:
    exporter = InMemorySpanExporter()
    tracer = traced(exporter)
    paid: list[int] = []

    @tool(needs_approval=True)
    def pay(cents: int) -> str:
        """Pay."""
        paid.append(cents)
        return "paid"

    model = ScriptedProvider([call("pay", {"cents": 5}, call_id="c1"), text("Paid.")])
    agent = Agent("payer", model=model, tools=[pay], approval_handler=lambda c, ctx: "defer")
    async with SQLiteCheckpointer(tmp_path / "runs.db") as checkpointer:
        options = CheckpointOptions(checkpointer, "pay-1")
        with pytest.raises(ApprovalPending):
            await Runner.run(agent, "pay", checkpoint=options, tracer=tracer)
        await approvals.decide(checkpointer, "pay-1", {"c1": True})
        await Runner.run(agent, [], checkpoint=options, tracer=tracer)

    parked, resumed = [s for s in exporter.get_finished_spans() if s.name.startswith("invoke")]
    assert parked.status.status_code is StatusCode.UNSET
    assert (parked.attributes or {})["lovia.status"] == "awaiting_approval"
    (pending,) = [e for e in parked.events if e.name == "lovia.approval.pending"]
    assert list((pending.attributes or {})["lovia.approval.call_ids"]) == ["c1"]
    assert "exception" not in [e.name for e in parked.events]
    assert (resumed.attributes or {})["lovia.resumed"] is True
    assert [link.context.span_id for link in resumed.links] == [parked.context.span_id]
    (tool_span,) = [s for s in exporter.get_finished_spans() if s.name == "execute_tool pay"]
    assert tool_span.context.trace_id == resumed.context.trace_id
    assert paid == [5]
