"""The tracers that need no extra package: NoopTracer, ConsoleTracer, InMemoryTracer."""

from __future__ import annotations

import asyncio
import logging

import pytest

from lovia.tracing import (
    ConsoleTracer,
    InMemoryTracer,
    NoopTracer,
    RecordedSpan,
    Span,
    SpanName,
    Tracer,
    handoff_span,
    link_context,
    model_call_span,
    record_checkpoint_save,
    record_model_usage,
    record_run_end,
    record_session_append,
    run_span,
    tool_call_span,
    tracer_event,
)


def traced_run(tracer: Tracer) -> None:
    """What the run loop does for a run with one tool call, a handoff and a checkpoint."""
    with run_span(tracer, agent="triage", run_id="r1", session_id="s1") as run:
        run.set_attribute("resumed", False)
        with model_call_span(tracer, model="m", turn=1, provider="scripted") as call:
            record_model_usage(call, input_tokens=10, output_tokens=3, finish_reason="tool_calls")
        with tool_call_span(tracer, name="add", call_id="c1"):
            pass
        record_checkpoint_save(tracer, status="running", entries=2, total=3)
        with handoff_span(tracer, from_agent="triage", to_agent="billing"):
            pass
        record_session_append(tracer, session_id="s1", entries=4, version=7)
        record_run_end(run, turns=1, total_tokens=13, input_tokens=10, output_tokens=3)


def test_in_memory_tracer_keeps_spans_in_opening_order_with_their_attributes() -> None:
    tracer = InMemoryTracer(detailed=True)
    traced_run(tracer)
    assert [s.name for s in tracer.spans] == ["run", "model_call", "tool_call", "handoff"]
    run = tracer.spans[0]
    assert run.attrs == {
        "agent": "triage",
        "run_id": "r1",
        "session_id": "s1",
        "resumed": False,
        "turns": 1,
        "total_tokens": 13,
        "input_tokens": 10,
        "output_tokens": 3,
    }
    call = tracer.named("model_call")[0]
    assert call.attrs == {
        "model": "m",
        "turn": 1,
        "provider": "scripted",
        "input_tokens": 10,
        "output_tokens": 3,
        "finish_reason": "tool_calls",
    }
    assert tracer.named("tool_call")[0].attrs == {"name": "add", "call_id": "c1"}
    assert tracer.named("handoff")[0].attrs == {"from_agent": "triage", "to_agent": "billing"}
    assert all(s.duration_ms >= 0 and s.exception is None for s in tracer.spans)


async def test_a_tracer_gets_0_9_119s_attributes_unless_it_asks_for_more() -> None:
    """A run's spans carry lovia 0.9.119's attribute set; token counts and the provider go
    only to a detailed tracer; a handoff call is a tool_call span around the handoff."""
    from lovia import Agent, Runner, tool
    from lovia.testing import ScriptedProvider, call, text

    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    def agent() -> Agent:
        helper = Agent("helper", model=ScriptedProvider([text("3")]))
        script = [call("add", {"a": 1, "b": 2}, call_id="c1"), call("transfer_to_helper", {})]
        return Agent("calc", model=ScriptedProvider(script), tools=[add], handoffs=[helper])

    plain, rich = InMemoryTracer(), InMemoryTracer(detailed=True)
    await Runner.run(agent(), "1+2", tracer=plain)
    await Runner.run(agent(), "1+2", tracer=rich)
    names = ["run", "model_call", "tool_call", "model_call", "tool_call", "handoff", "model_call"]
    assert [s.name for s in plain.spans] == names == [s.name for s in rich.spans]
    assert set(plain.spans[0].attrs) == {"agent", "run_id", "resumed", "turns", "total_tokens"}
    assert set(plain.spans[1].attrs) == {"model", "turn"}
    assert {"input_tokens", "output_tokens"} <= set(rich.spans[0].attrs)
    assert {"provider", "input_tokens", "output_tokens"} <= set(rich.spans[1].attrs)
    handoff, around = plain.spans[5], plain.spans[4]
    assert around.attrs["name"] == "transfer_to_helper" and handoff.parent is around


def test_in_memory_spans_know_their_parent_and_events_land_on_the_open_span() -> None:
    tracer = InMemoryTracer()
    traced_run(tracer)
    run, call, tool_span, handoff = tracer.spans
    assert run.parent is None
    assert call.parent is run and tool_span.parent is run and handoff.parent is run
    assert run.events == [
        ("checkpoint_save", {"status": "running", "entries": 2, "total": 3}),
        ("session_append", {"session_id": "s1", "entries": 4, "version": 7}),
    ]
    assert tool_span.events == []


def test_a_span_that_raises_records_the_exception_and_lets_it_through() -> None:
    tracer = InMemoryTracer()
    with pytest.raises(RuntimeError, match="kaboom"):
        with tracer.span(SpanName.TOOL_CALL, name="boom", call_id="c1"):
            raise RuntimeError("kaboom")
    (span,) = tracer.spans
    assert isinstance(span.exception, RuntimeError)
    assert span.name == "tool_call"  # a SpanName is stored as its plain string


def test_recorded_span_keeps_the_0_9_119_constructor() -> None:
    span = RecordedSpan("run", {"agent": "a"}, 1.5, None)
    assert (span.name, span.attrs, span.duration_ms, span.exception) == (
        "run",
        {"agent": "a"},
        1.5,
        None,
    )
    assert isinstance(span, Span)


async def test_parallel_tasks_each_nest_under_the_span_that_started_them() -> None:
    tracer = InMemoryTracer()

    async def tool(name: str) -> None:
        with tracer.span("tool_call", name=name, call_id=name):
            await asyncio.sleep(0)
            tracer_event(tracer, "checkpoint_save", status="running", entries=1, total=1)
            await asyncio.sleep(0)

    with tracer.span("run", agent="a", run_id="r") as run:
        await asyncio.gather(tool("x"), tool("y"))
    tools = tracer.named("tool_call")
    assert {t.attrs["name"] for t in tools} == {"x", "y"}
    assert all(t.parent is run and len(t.events) == 1 for t in tools)
    assert run.events == []


async def test_a_span_left_open_in_an_abandoned_async_generator_closes_cleanly() -> None:
    tracer = InMemoryTracer()

    async def steps():  # type: ignore[no-untyped-def]
        with tracer.span("run", agent="a", run_id="r"):
            for i in range(3):
                yield i

    gen = steps()
    assert await gen.__anext__() == 0
    await gen.aclose()
    with tracer.span("run", agent="b", run_id="r2"):
        pass
    first, second = tracer.spans
    assert isinstance(first.exception, GeneratorExit)
    assert second.parent is None


def test_noop_tracer_accepts_everything_and_records_nothing() -> None:
    tracer = NoopTracer()
    traced_run(tracer)
    assert isinstance(tracer, Tracer)
    assert link_context(tracer) is None


def test_tracers_without_links_or_events_are_fine() -> None:
    class Minimal:
        def __init__(self) -> None:
            self.names: list[str] = []

        def span(self, name: str, /, **attributes: object):  # type: ignore[no-untyped-def]
            self.names.append(str(name))
            return InMemoryTracer().span(name, **attributes)

    tracer = Minimal()
    traced_run(tracer)
    assert tracer.names == ["run", "model_call", "tool_call", "handoff"]
    assert link_context(tracer) is None
    assert link_context(InMemoryTracer()) is None


def test_console_tracer_logs_an_indented_tree(caplog: pytest.LogCaptureFixture) -> None:
    tracer = ConsoleTracer(logger=logging.getLogger("lovia.trace.test"))
    with caplog.at_level(logging.INFO, logger="lovia.trace.test"):
        traced_run(tracer)
    lines = [r.getMessage() for r in caplog.records]
    # spans log when they end: children first, each indented under its parent
    assert lines[0].startswith("  model_call (") and "model='m'" in lines[0]
    assert lines[1].startswith("  tool_call (") and "name='add'" in lines[1]
    assert lines[2].startswith("  handoff (")
    assert lines[3].startswith("run (") and "agent='triage'" in lines[3]
    assert lines[4].startswith("  · checkpoint_save") and "total=3" in lines[4]
    assert lines[5].startswith("  · session_append")


def test_console_tracer_skips_short_spans_but_never_failed_ones(
    caplog: pytest.LogCaptureFixture,
) -> None:
    tracer = ConsoleTracer(logger=logging.getLogger("lovia.trace.quiet"), min_duration_ms=60_000)
    with caplog.at_level(logging.INFO, logger="lovia.trace.quiet"):
        with tracer.span("tool_call", name="fast", call_id="c1"):
            pass
        with pytest.raises(ValueError):
            with tracer.span("tool_call", name="broken", call_id="c2"):
                raise ValueError("bad input")
    (line,) = [r.getMessage() for r in caplog.records]
    assert "broken" in line and "! ValueError: bad input" in line


def test_console_tracer_logs_on_lovia_trace_by_default(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="lovia.trace"):
        with ConsoleTracer().span("run", agent="a", run_id="r"):
            pass
    assert [r.name for r in caplog.records] == ["lovia.trace"]
