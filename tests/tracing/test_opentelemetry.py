"""OpenTelemetryTracer, read back through the OpenTelemetry SDK's in-memory exporter."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode, format_span_id, format_trace_id

from lovia.tracing import (
    OpenTelemetryTracer,
    handoff_span,
    link_context,
    model_call_span,
    record_checkpoint_save,
    record_model_usage,
    record_run_end,
    record_session_append,
    run_span,
    tool_call_span,
)

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def tracer(exporter: InMemorySpanExporter) -> OpenTelemetryTracer:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return OpenTelemetryTracer(provider)


def by_name(spans: tuple[ReadableSpan, ...], name: str) -> ReadableSpan:
    (found,) = [s for s in spans if s.name == name]
    return found


def one_run(tracer: OpenTelemetryTracer, resume_link: dict[str, str] | None = None) -> None:
    with run_span(
        tracer,
        agent="triage",
        run_id="run-1",
        session_id="chat-9",
        model="gpt-x",
        provider="openai",
        resume_link=resume_link,
    ) as run:
        run.set_attribute("resumed", resume_link is not None)
        with model_call_span(tracer, model="gpt-x", turn=1, provider="openai") as call:
            record_model_usage(call, input_tokens=120, output_tokens=7, finish_reason="tool_calls")
        with tool_call_span(tracer, name="lookup", call_id="call_1"):
            record_checkpoint_save(tracer, status="running", entries=1, total=3)
        record_checkpoint_save(tracer, status="running", entries=2, total=5)
        with handoff_span(tracer, from_agent="triage", to_agent="billing"):
            pass
        record_session_append(tracer, session_id="chat-9", entries=5, version=3)
        record_run_end(run, turns=1, total_tokens=127, input_tokens=120, output_tokens=7)


def test_spans_follow_the_genai_conventions(
    tracer: OpenTelemetryTracer, exporter: InMemorySpanExporter
) -> None:
    one_run(tracer)
    spans = exporter.get_finished_spans()
    assert sorted(s.name for s in spans) == [
        "chat gpt-x",
        "execute_tool lookup",
        "handoff billing",
        "invoke_agent triage",
    ]
    run = by_name(spans, "invoke_agent triage")
    assert run.kind is SpanKind.INTERNAL
    assert dict(run.attributes or {}) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "triage",
        "gen_ai.conversation.id": "chat-9",
        "gen_ai.request.model": "gpt-x",
        "gen_ai.provider.name": "openai",
        "gen_ai.usage.input_tokens": 120,
        "gen_ai.usage.output_tokens": 7,
        "lovia.run_id": "run-1",
        "lovia.session_id": "chat-9",
        "lovia.resumed": False,
        "lovia.turns": 1,
        "lovia.usage.total_tokens": 127,
    }
    chat = by_name(spans, "chat gpt-x")
    assert chat.kind is SpanKind.CLIENT
    assert dict(chat.attributes or {}) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-x",
        "gen_ai.provider.name": "openai",
        "gen_ai.usage.input_tokens": 120,
        "gen_ai.usage.output_tokens": 7,
        "gen_ai.response.finish_reasons": ("tool_calls",),
        "lovia.turn": 1,
    }
    tool = by_name(spans, "execute_tool lookup")
    assert dict(tool.attributes or {}) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "lookup",
        "gen_ai.tool.call.id": "call_1",
        "gen_ai.tool.type": "function",
    }
    handoff = by_name(spans, "handoff billing")
    assert dict(handoff.attributes or {}) == {
        "lovia.handoff.from_agent": "triage",
        "lovia.handoff.to_agent": "billing",
    }


def test_children_share_the_run_trace_and_events_land_on_the_open_span(
    tracer: OpenTelemetryTracer, exporter: InMemorySpanExporter
) -> None:
    one_run(tracer)
    spans = exporter.get_finished_spans()
    run = by_name(spans, "invoke_agent triage")
    assert run.parent is None
    for child in spans:
        if child is not run:
            assert child.parent is not None
            assert child.parent.span_id == run.context.span_id
            assert child.context.trace_id == run.context.trace_id
    tool = by_name(spans, "execute_tool lookup")
    assert [(e.name, dict(e.attributes or {})) for e in tool.events] == [
        (
            "lovia.checkpoint.save",
            {
                "lovia.checkpoint.status": "running",
                "lovia.checkpoint.entries": 1,
                "lovia.checkpoint.total": 3,
            },
        )
    ]
    assert [(e.name, dict(e.attributes or {})) for e in run.events] == [
        (
            "lovia.checkpoint.save",
            {
                "lovia.checkpoint.status": "running",
                "lovia.checkpoint.entries": 2,
                "lovia.checkpoint.total": 5,
            },
        ),
        (
            "lovia.session.append",
            {
                "lovia.session_id": "chat-9",
                "lovia.session.entries": 5,
                "lovia.session.version": 3,
            },
        ),
    ]


def test_a_failed_span_has_error_status_type_and_exception_event(
    tracer: OpenTelemetryTracer, exporter: InMemorySpanExporter
) -> None:
    with pytest.raises(KeyError):
        with tool_call_span(tracer, name="lookup", call_id="c9"):
            raise KeyError("missing")
    (span,) = exporter.get_finished_spans()
    assert span.status.status_code is StatusCode.ERROR
    assert (span.attributes or {})["error.type"] == "KeyError"
    assert [e.name for e in span.events] == ["exception"]


async def test_a_consumer_that_stops_early_does_not_mark_the_run_failed(
    tracer: OpenTelemetryTracer, exporter: InMemorySpanExporter
) -> None:
    async def events():  # type: ignore[no-untyped-def]
        with run_span(tracer, agent="a", run_id="r"):
            for i in range(3):
                yield i

    gen = events()
    await gen.__anext__()
    await gen.aclose()
    (span,) = exporter.get_finished_spans()
    assert span.status.status_code is StatusCode.UNSET


async def test_parallel_tool_calls_are_siblings_under_the_run(
    tracer: OpenTelemetryTracer, exporter: InMemorySpanExporter
) -> None:
    async def call(name: str) -> None:
        with tool_call_span(tracer, name=name, call_id=f"id_{name}"):
            await asyncio.sleep(0)

    with run_span(tracer, agent="a", run_id="r"):
        await asyncio.gather(call("x"), call("y"), call("z"))
    spans = exporter.get_finished_spans()
    run = by_name(spans, "invoke_agent a")
    tools = [s for s in spans if s.name.startswith("execute_tool")]
    assert len(tools) == 3
    assert all(t.parent is not None and t.parent.span_id == run.context.span_id for t in tools)


def test_link_context_names_the_open_run_span(
    tracer: OpenTelemetryTracer, exporter: InMemorySpanExporter
) -> None:
    assert link_context(tracer) is None  # no span open
    with run_span(tracer, agent="a", run_id="r"):
        link = link_context(tracer)
    (run,) = exporter.get_finished_spans()
    assert link == {
        "trace_id": format_trace_id(run.context.trace_id),
        "span_id": format_span_id(run.context.span_id),
    }
    assert json.loads(json.dumps(link)) == link  # fits in a checkpoint head


CRASHING_RUN = textwrap.dedent(
    """
    import json, os, sys
    from opentelemetry.sdk.trace import TracerProvider
    from lovia.tracing import OpenTelemetryTracer, link_context, run_span

    tracer = OpenTelemetryTracer(TracerProvider())
    with run_span(tracer, agent="triage", run_id="run-1"):
        with open(sys.argv[1], "w") as head:
            json.dump({"trace": link_context(tracer)}, head)
        os._exit(17)  # the process dies with the run span open
    """
)


def test_a_resumed_run_links_to_the_trace_of_the_run_that_crashed(
    tracer: OpenTelemetryTracer, exporter: InMemorySpanExporter, tmp_path: Path
) -> None:
    head = tmp_path / "head.json"
    done = subprocess.run(
        [sys.executable, "-c", CRASHING_RUN, str(head)],
        env={"PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 17, done.stderr
    saved = json.loads(head.read_text())["trace"]

    one_run(tracer, resume_link=saved)
    spans = exporter.get_finished_spans()
    run = by_name(spans, "invoke_agent triage")
    assert (run.attributes or {})["lovia.resumed"] is True
    (link,) = run.links
    assert format_trace_id(link.context.trace_id) == saved["trace_id"]
    assert format_span_id(link.context.span_id) == saved["span_id"]
    assert dict(link.attributes or {}) == {"lovia.link.type": "resumes"}
    assert run.context.trace_id != link.context.trace_id  # a new trace, linked to the old one
    assert "resume_link" not in str(dict(run.attributes or {}))


def test_a_resume_link_from_another_tracer_is_ignored(
    tracer: OpenTelemetryTracer, exporter: InMemorySpanExporter
) -> None:
    with run_span(tracer, agent="a", run_id="r", resume_link={"span": "7"}):
        pass
    (run,) = exporter.get_finished_spans()
    assert run.links == ()


def test_unknown_keys_and_values_become_lovia_attributes(
    tracer: OpenTelemetryTracer, exporter: InMemorySpanExporter
) -> None:
    with tracer.span("custom", tenant="acme", limits={"a": 1}, skipped=None) as span:
        span.set_attribute("gen_ai.system_instructions", "be brief")
    (found,) = exporter.get_finished_spans()
    assert found.name == "custom"
    assert dict(found.attributes or {}) == {
        "lovia.tenant": "acme",
        "lovia.limits": '{"a": 1}',
        "gen_ai.system_instructions": "be brief",
    }


def test_a_handoff_renames_the_run_span_to_the_active_agent(
    tracer: OpenTelemetryTracer, exporter: InMemorySpanExporter
) -> None:
    with run_span(tracer, agent="triage", run_id="r") as run:
        run.set_attribute("agent", "billing")
    (found,) = exporter.get_finished_spans()
    assert found.name == "invoke_agent billing"
    assert (found.attributes or {})["gen_ai.agent.name"] == "billing"


def test_without_opentelemetry_the_tracer_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from lovia import UserError

    monkeypatch.setitem(sys.modules, "opentelemetry", None)
    with pytest.raises(UserError) as missing:
        OpenTelemetryTracer()
    assert "lovia[otel]" in (missing.value.hint or "")
