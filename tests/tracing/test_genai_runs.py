"""Real runs against real OpenAI- and Anthropic-protocol servers on 127.0.0.1, traced with the
OpenTelemetry SDK: the spans carry the GenAI attributes a trace viewer groups by."""

from __future__ import annotations

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from lovia import Agent, ProviderError, Runner
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
