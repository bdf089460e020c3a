"""Tracing: timed, nested spans for a run, its model calls, tool calls and handoffs.

Pass a tracer to a run (``Runner.run(agent, input, tracer=...)``). A tracer is anything with
one method, ``span(name, **attributes)``, used as a context manager that yields a span with
``set_attribute(key, value)`` and ``record_exception(exc)``. lovia ships four:

* ``NoopTracer``: drops everything (what a run uses when given no tracer);
* ``ConsoleTracer``: an indented tree on a ``logging`` logger, for local debugging;
* ``InMemoryTracer``: keeps ``RecordedSpan``s in ``.spans``, for tests;
* ``OpenTelemetryTracer``: real OpenTelemetry spans (``pip install 'lovia[otel]'``) named and
  attributed after the OpenTelemetry GenAI semantic conventions.

The spans a run opens, and their attributes. Every tracer receives lovia 0.9.119's keys
(``agent``, ``run_id``, ``resumed``, ``turns``, ``total_tokens``; ``model``, ``turn``;
``name``, ``call_id``; ``from_agent``, ``to_agent``); a tracer with ``detailed = True``
(``OpenTelemetryTracer``, or ``InMemoryTracer(detailed=True)``) also receives the others:

==============  =====================================================  ===========================
span            attributes when opened                                 set later
==============  =====================================================  ===========================
``run``         ``agent``, ``run_id``; ``session_id``, ``model``,      ``resumed`` (bool) at
                ``provider`` when known; ``resume_link`` (a dict       start; ``turns``,
                from ``link_context``) when the run resumes one that   ``total_tokens``,
                a crash interrupted                                    ``input_tokens``,
                                                                       ``output_tokens`` at end
``model_call``  ``model``, ``turn``; ``provider`` when known           ``input_tokens``,
                                                                       ``output_tokens``,
                                                                       ``finish_reason``
``tool_call``   ``name``, ``call_id``                                  (exception, if it raised)
``handoff``     ``from_agent``, ``to_agent``
==============  =====================================================  ===========================

Events inside the current span (``tracer_event(tracer, name, **attributes)``; tracers without
an ``event`` method ignore them):

* ``checkpoint_save``: ``status``, ``entries`` (appended now), ``total`` (entries stored);
* ``session_append``: ``session_id``, ``entries``, ``version`` (the session's, when known).

The run loop emits these through the helpers at the bottom of this module (``run_span``,
``model_call_span``, ``record_model_usage``, ``tool_call_span``, ``handoff_span``,
``record_run_end``, ``record_checkpoint_save``, ``record_session_append``, ``link_context``).
``OpenTelemetryTracer`` maps them to the GenAI names (see its docstring).
"""

from __future__ import annotations

import contextvars
import logging
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol, runtime_checkable

from ._otel import OpenTelemetryTracer

__all__ = [
    "ConsoleTracer",
    "EventName",
    "InMemoryTracer",
    "NoopTracer",
    "OpenTelemetryTracer",
    "RecordedSpan",
    "Span",
    "SpanName",
    "Tracer",
    "link_context",
    "tracer_event",
]


class SpanName(str, Enum):
    """The names of the spans a run opens."""

    RUN = "run"
    MODEL_CALL = "model_call"
    TOOL_CALL = "tool_call"
    HANDOFF = "handoff"

    def __str__(self) -> str:
        return self.value

    def __format__(self, format_spec: str) -> str:
        return self.value.__format__(format_spec)


class EventName(str, Enum):
    """The names of the events a run adds to its current span."""

    CHECKPOINT_SAVE = "checkpoint_save"
    SESSION_APPEND = "session_append"

    def __str__(self) -> str:
        return self.value

    def __format__(self, format_spec: str) -> str:
        return self.value.__format__(format_spec)


@runtime_checkable
class Span(Protocol):
    """An open span. Tracers may ignore what they cannot show."""

    def set_attribute(self, key: str, value: object) -> None: ...
    def record_exception(self, exc: BaseException) -> None: ...


@runtime_checkable
class Tracer(Protocol):
    """Opens spans: ``with tracer.span("run", agent="a") as span: ...``.

    Optional extras a tracer may add, which the run uses when present: ``event(name,
    **attributes)`` (an event in the current span) and ``link_context()`` (a JSON-safe dict a
    resumed run passes back as ``resume_link``)."""

    def span(self, name: str, /, **attributes: object) -> AbstractContextManager[Span]: ...


# --- Noop -------------------------------------------------------------------------------------


class _NoopSpan:
    def set_attribute(self, key: str, value: object) -> None:
        return None

    def record_exception(self, exc: BaseException) -> None:
        return None

    def add_event(self, name: str, **attributes: object) -> None:
        return None


class NoopTracer:
    """Records nothing; a run without ``tracer=`` uses it."""

    _SPAN = _NoopSpan()

    @contextmanager
    def span(self, name: str, /, **attributes: object) -> Iterator[Span]:
        yield self._SPAN

    def event(self, name: str, /, **attributes: object) -> None:
        return None


# --- the current span, per tracer and per task ------------------------------------------------


class _Stack:
    """Which span of one tracer is open in the current task (a context variable, so
    concurrent runs and parallel tool calls each see their own)."""

    def __init__(self, name: str) -> None:
        self._var: contextvars.ContextVar[Any] = contextvars.ContextVar(name, default=None)

    def current(self) -> Any:
        return self._var.get()

    @contextmanager
    def entered(self, span: Any) -> Iterator[None]:
        previous = self._var.get()
        token = self._var.set(span)
        try:
            yield
        finally:
            try:
                self._var.reset(token)
            except ValueError:  # closed from another context (an async generator finalized late)
                self._var.set(previous)


# --- Console ----------------------------------------------------------------------------------


@dataclass
class _ConsoleSpan:
    name: str
    attrs: dict[str, object]
    depth: int
    exception: BaseException | None = None
    events: list[tuple[str, dict[str, object]]] = field(default_factory=list)

    def set_attribute(self, key: str, value: object) -> None:
        self.attrs[key] = value

    def record_exception(self, exc: BaseException) -> None:
        self.exception = exc

    def add_event(self, name: str, **attributes: object) -> None:
        self.events.append((name, dict(attributes)))


class ConsoleTracer:
    """Logs each span when it ends, indented by nesting, on ``logger`` (``lovia.trace`` by
    default) at INFO: ``  tool_call (3.2ms) name='add' call_id='c1'``. Spans shorter than
    ``min_duration_ms`` are skipped unless they failed. Meant for people, not for parsing."""

    def __init__(
        self,
        *,
        logger: logging.Logger | None = None,
        min_duration_ms: float = 0.0,
        detailed: bool = False,
    ) -> None:
        self.detailed = detailed
        self.logger = logger or logging.getLogger("lovia.trace")
        self.min_duration_ms = min_duration_ms
        self._stack = _Stack("lovia_console_span")

    @contextmanager
    def span(self, name: str, /, **attributes: object) -> Iterator[Span]:
        parent = self._stack.current()
        rec = _ConsoleSpan(str(name), dict(attributes), 0 if parent is None else parent.depth + 1)
        start = time.perf_counter()
        try:
            with self._stack.entered(rec):
                yield rec
        except BaseException as exc:
            rec.record_exception(exc)
            raise
        finally:
            self._log(rec, (time.perf_counter() - start) * 1000)

    def event(self, name: str, /, **attributes: object) -> None:
        current = self._stack.current()
        if current is not None:
            current.add_event(str(name), **attributes)

    def _log(self, rec: _ConsoleSpan, elapsed_ms: float) -> None:
        if elapsed_ms < self.min_duration_ms and rec.exception is None:
            return
        indent = "  " * rec.depth
        attrs = " ".join(f"{k}={v!r}" for k, v in rec.attrs.items())
        status = ""
        if rec.exception is not None:
            status = f" ! {type(rec.exception).__name__}: {rec.exception}"
        self.logger.info(f"{indent}{rec.name} ({elapsed_ms:.1f}ms) {attrs}{status}".rstrip())
        for event, event_attrs in rec.events:
            shown = " ".join(f"{k}={v!r}" for k, v in event_attrs.items())
            self.logger.info(f"{indent}  · {event} {shown}".rstrip())


# --- In memory --------------------------------------------------------------------------------


@dataclass
class RecordedSpan:
    """A span ``InMemoryTracer`` kept: ``name``, ``attrs``, ``duration_ms`` (set when it
    ends), ``exception`` (what ended it, if anything raised), ``events`` (``(name, attrs)``
    pairs) and ``parent`` (the span it was opened in, or ``None``)."""

    name: str
    attrs: dict[str, object] = field(default_factory=dict)
    duration_ms: float = 0.0
    exception: BaseException | None = None
    events: list[tuple[str, dict[str, object]]] = field(default_factory=list)
    parent: RecordedSpan | None = field(default=None, repr=False, compare=False)

    def set_attribute(self, key: str, value: object) -> None:
        self.attrs[key] = value

    def record_exception(self, exc: BaseException) -> None:
        self.exception = exc

    def add_event(self, name: str, **attributes: object) -> None:
        self.events.append((name, dict(attributes)))


class InMemoryTracer:
    """Keeps every span in ``spans``, in the order they were opened; for tests."""

    def __init__(self, *, detailed: bool = False) -> None:
        self.detailed = detailed
        self.spans: list[RecordedSpan] = []
        self._stack = _Stack("lovia_memory_span")

    @contextmanager
    def span(self, name: str, /, **attributes: object) -> Iterator[Span]:
        rec = RecordedSpan(name=str(name), attrs=dict(attributes), parent=self._stack.current())
        self.spans.append(rec)
        start = time.perf_counter()
        try:
            with self._stack.entered(rec):
                yield rec
        except BaseException as exc:
            rec.record_exception(exc)
            raise
        finally:
            rec.duration_ms = (time.perf_counter() - start) * 1000

    def event(self, name: str, /, **attributes: object) -> None:
        current = self._stack.current()
        if current is not None:
            current.add_event(str(name), **attributes)

    def named(self, name: str) -> list[RecordedSpan]:
        """The recorded spans called ``name``, in opening order."""
        return [s for s in self.spans if s.name == name]


# --- What the run loop calls ------------------------------------------------------------------


def _present(**attributes: object) -> dict[str, object]:
    return {k: v for k, v in attributes.items() if v is not None}


def detailed(tracer: object) -> bool:
    """Whether ``tracer`` takes the attributes this project adds to lovia 0.9.119's set
    (``detailed = True``): session, model, provider, resume link and token counts."""
    return bool(getattr(tracer, "detailed", False))


def run_span(
    tracer: Tracer,
    *,
    agent: str,
    run_id: str,
    session_id: str | None = None,
    model: str | None = None,
    provider: str | None = None,
    resume_link: dict[str, str] | None = None,
) -> AbstractContextManager[Span]:
    """The ``run`` span; ``resume_link`` is what ``link_context`` returned in the run that
    this one resumes (kept in its checkpoint head)."""
    extra: dict[str, object] = {}
    if detailed(tracer):
        extra = _present(
            session_id=session_id, model=model, provider=provider, resume_link=resume_link
        )
    return tracer.span(SpanName.RUN, agent=agent, run_id=run_id, **extra)


def record_run_model(span: Span | None, provider: object, tracer: object) -> None:
    """Name the run's model and provider on its ``run`` span (a ``detailed`` tracer's only),
    once the run knows which provider its agent uses."""
    if span is None or not detailed(tracer):
        return
    for key, value in _present(
        model=getattr(provider, "model", None), provider=getattr(provider, "name", None)
    ).items():
        span.set_attribute(key, value)


def model_call_span(
    tracer: Tracer, *, model: str | None, turn: int, provider: str | None = None
) -> AbstractContextManager[Span]:
    extra = _present(provider=provider) if detailed(tracer) else {}
    return tracer.span(SpanName.MODEL_CALL, model=model, turn=turn, **extra)


def record_model_usage(
    span: Span,
    *,
    input_tokens: int | None,
    output_tokens: int | None,
    finish_reason: str | None = None,
    tracer: object = None,
) -> None:
    """Set one model call's token counts (and why it stopped) on its ``model_call`` span;
    given the run's ``tracer``, only when that tracer is ``detailed``."""
    if tracer is not None and not detailed(tracer):
        return
    for key, value in _present(
        input_tokens=input_tokens, output_tokens=output_tokens, finish_reason=finish_reason
    ).items():
        span.set_attribute(key, value)


def tool_call_span(tracer: Tracer, *, name: str, call_id: str) -> AbstractContextManager[Span]:
    return tracer.span(SpanName.TOOL_CALL, name=name, call_id=call_id)


def handoff_span(tracer: Tracer, *, from_agent: str, to_agent: str) -> AbstractContextManager[Span]:
    return tracer.span(SpanName.HANDOFF, from_agent=from_agent, to_agent=to_agent)


def record_run_end(
    span: Span,
    *,
    turns: int,
    total_tokens: int,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    tracer: object = None,
    replayed: bool = False,
) -> None:
    """Set the run's totals on its ``run`` span when it ends (the input and output counts,
    given the run's ``tracer``, only when that tracer is ``detailed``). A ``replayed`` run is
    ``resumed``, and has totals only for a ``detailed`` tracer, as 0.9.119 traced it."""
    if replayed:
        span.set_attribute("resumed", True)
        if tracer is None or not detailed(tracer):
            return
    span.set_attribute("turns", turns)
    span.set_attribute("total_tokens", total_tokens)
    if tracer is not None and not detailed(tracer):
        return
    for key, value in _present(input_tokens=input_tokens, output_tokens=output_tokens).items():
        span.set_attribute(key, value)


def tracer_event(tracer: Tracer, name: str, /, **attributes: object) -> None:
    """Add an event to ``tracer``'s current span, if the tracer shows events."""
    event = getattr(tracer, "event", None)
    if callable(event):
        event(str(name), **_present(**attributes))


def record_checkpoint_save(tracer: Tracer, *, status: str, entries: int, total: int) -> None:
    """A checkpoint write landed: ``entries`` appended now, ``total`` stored for the run."""
    tracer_event(tracer, EventName.CHECKPOINT_SAVE, status=status, entries=entries, total=total)


def record_session_append(
    tracer: Tracer, *, session_id: str, entries: int, version: int | None = None
) -> None:
    """The run's entries were appended to its session."""
    tracer_event(
        tracer, EventName.SESSION_APPEND, session_id=session_id, entries=entries, version=version
    )


def link_context(tracer: Tracer) -> dict[str, str] | None:
    """What a resumed run needs to link its spans to this one (call it inside the ``run``
    span and keep the result in the checkpoint head), or ``None`` when the tracer cannot
    link."""
    method = getattr(tracer, "link_context", None)
    if not callable(method):
        return None
    found = method()
    return dict(found) if isinstance(found, dict) else None
