"""``OpenTelemetryTracer``: a run's spans as OpenTelemetry spans (GenAI semantic conventions).

Needs ``opentelemetry-api`` (``pip install 'lovia[otel]'``); it is imported when a tracer is
built, never by ``import lovia``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from .errors import UserError

if TYPE_CHECKING:
    from opentelemetry.trace import Span as OtelSpan
    from opentelemetry.trace import Tracer as OtelTracer
    from opentelemetry.trace import TracerProvider

__all__ = ["OpenTelemetryTracer"]

_INSTALL_HINT = "install the tracing extra: pip install 'lovia[otel]'"

# generic attribute key -> OpenTelemetry attribute key, per span name
_RUN_KEYS = {
    "agent": "gen_ai.agent.name",
    "run_id": "lovia.run_id",
    "session_id": "gen_ai.conversation.id",
    "model": "gen_ai.request.model",
    "provider": "gen_ai.provider.name",
    "resumed": "lovia.resumed",
    "turns": "lovia.turns",
    "total_tokens": "lovia.usage.total_tokens",
    "input_tokens": "gen_ai.usage.input_tokens",
    "output_tokens": "gen_ai.usage.output_tokens",
}
_KEYS: dict[str, dict[str, str]] = {
    "run": _RUN_KEYS,
    "model_call": {
        "model": "gen_ai.request.model",
        "provider": "gen_ai.provider.name",
        "turn": "lovia.turn",
        "input_tokens": "gen_ai.usage.input_tokens",
        "output_tokens": "gen_ai.usage.output_tokens",
        "finish_reason": "gen_ai.response.finish_reasons",
    },
    "tool_call": {"name": "gen_ai.tool.name", "call_id": "gen_ai.tool.call.id"},
    "handoff": {"from_agent": "lovia.handoff.from_agent", "to_agent": "lovia.handoff.to_agent"},
}
# lovia's provider names -> the GenAI conventions' well-known gen_ai.provider.name values
_PROVIDER_NAMES = {"openai-chat": "openai", "openai": "openai", "claude": "anthropic"}
_OPERATIONS = {"run": "invoke_agent", "model_call": "chat", "tool_call": "execute_tool"}
_EVENTS = {"checkpoint_save": "lovia.checkpoint.save", "session_append": "lovia.session.append"}


def _otel_value(value: object) -> Any:
    """An attribute value OpenTelemetry accepts (str, bool, int, float or a list of one)."""
    if isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, (list, tuple)) and all(
        isinstance(v, (str, bool, int, float)) for v in value
    ):
        return list(value)
    try:
        return json.dumps(value, default=str, sort_keys=True)
    except (TypeError, ValueError):
        return str(value)


class _OtelSpanHandle:
    """The span lovia's run loop holds; it translates generic keys into GenAI ones."""

    __slots__ = ("_name", "_span")

    def __init__(self, name: str, span: OtelSpan) -> None:
        self._name = name
        self._span = span

    @property
    def otel_span(self) -> OtelSpan:
        """The underlying OpenTelemetry span."""
        return self._span

    def set_attribute(self, key: str, value: object) -> None:
        if value is None:
            return
        for otel_key, otel_value in _translate(self._name, {key: value}).items():
            self._span.set_attribute(otel_key, otel_value)
        if self._name == "run" and key == "agent":  # a handoff changed the active agent
            self._span.update_name(f"invoke_agent {value}")

    def record_exception(self, exc: BaseException) -> None:
        from opentelemetry.trace import Status, StatusCode

        from .errors import ApprovalPending

        if isinstance(exc, ApprovalPending):  # parked for a person, not failed: no ERROR
            calls = list(getattr(exc, "calls", None) or [])
            self._span.set_attribute("lovia.status", "awaiting_approval")
            self._span.add_event(
                "lovia.approval.pending",
                {
                    "lovia.approval.call_ids": [str(getattr(c, "id", "")) for c in calls],
                    "gen_ai.tool.names": [str(getattr(c, "name", "")) for c in calls],
                },
            )
            return
        self._span.record_exception(exc)
        self._span.set_attribute("error.type", type(exc).__qualname__)
        self._span.set_status(Status(StatusCode.ERROR, str(exc) or type(exc).__name__))

    def add_event(self, name: str, **attributes: object) -> None:
        self._span.add_event(
            _EVENTS.get(name, name),
            {_event_key(name, k): _otel_value(v) for k, v in attributes.items() if v is not None},
        )


def _event_key(event: str, key: str) -> str:
    prefix = {"checkpoint_save": "lovia.checkpoint.", "session_append": "lovia.session."}
    if key == "session_id":
        return "lovia.session_id"
    return prefix.get(event, "lovia.") + key


def _translate(name: str, attributes: Mapping[str, object]) -> dict[str, Any]:
    keys = _KEYS.get(name, {})
    out: dict[str, Any] = {}
    for key, value in attributes.items():
        if value is None or key == "resume_link":
            continue
        otel_key = keys.get(key, key if "." in key else f"lovia.{key}")
        if otel_key == "gen_ai.response.finish_reasons" and isinstance(value, str):
            value = [value]
        elif otel_key == "gen_ai.provider.name" and isinstance(value, str):
            value = _PROVIDER_NAMES.get(value, value)
        out[otel_key] = _otel_value(value)
        if name == "run" and key == "session_id":
            out["lovia.session_id"] = out[otel_key]
    return out


def _span_name(name: str, attributes: Mapping[str, object]) -> str:
    subject = {
        "run": attributes.get("agent"),
        "model_call": attributes.get("model"),
        "tool_call": attributes.get("name"),
        "handoff": attributes.get("to_agent"),
    }.get(name)
    operation = _OPERATIONS.get(name, name)
    return f"{operation} {subject}" if subject else operation


class OpenTelemetryTracer:
    """Sends a run's spans to OpenTelemetry, named and attributed after the GenAI semantic
    conventions.

    ``tracer_provider`` defaults to the global one (``opentelemetry.trace.set_tracer_provider``).
    The mapping:

    * ``run`` -> ``invoke_agent {agent}`` with ``gen_ai.operation.name=invoke_agent``,
      ``gen_ai.agent.name``, ``gen_ai.conversation.id`` and ``lovia.session_id`` (the session),
      ``lovia.run_id``, ``gen_ai.request.model`` / ``gen_ai.provider.name`` when known,
      ``lovia.resumed``, and at the end ``lovia.turns``, ``gen_ai.usage.input_tokens`` /
      ``output_tokens``, ``lovia.usage.total_tokens``;
    * ``model_call`` -> ``chat {model}`` (kind CLIENT) with ``gen_ai.operation.name=chat``,
      ``gen_ai.request.model``, ``gen_ai.provider.name``, ``lovia.turn``,
      ``gen_ai.usage.input_tokens`` / ``output_tokens``, ``gen_ai.response.finish_reasons``;
    * ``tool_call`` -> ``execute_tool {name}`` with ``gen_ai.operation.name=execute_tool``,
      ``gen_ai.tool.name``, ``gen_ai.tool.call.id``, ``gen_ai.tool.type=function``;
    * ``handoff`` -> ``handoff {to_agent}`` with ``lovia.handoff.from_agent`` / ``to_agent``;
    * events ``lovia.checkpoint.save`` (``lovia.checkpoint.status`` / ``entries`` /
      ``total``) and ``lovia.session.append`` (``lovia.session_id``,
      ``lovia.session.entries`` / ``version``) on the span open when they happen;
    * a resumed run's ``run`` span carries a link (attribute ``lovia.link.type=resumes``) to
      the ``run`` span it continues, as saved by ``link_context()``.

    A span that ends with an exception gets status ERROR, ``error.type`` and the exception
    event; a run parked for an approval is not failed: its span gets
    ``lovia.status=awaiting_approval`` and a ``lovia.approval.pending`` event instead. Any
    other key becomes ``lovia.<key>``.
    """

    detailed = True  # token counts, provider and session: the GenAI conventions want them

    def __init__(
        self,
        tracer_provider: TracerProvider | None = None,
        *,
        instrumentation_name: str = "lovia",
    ) -> None:
        try:
            from opentelemetry import trace
        except ImportError as exc:
            raise UserError(
                "OpenTelemetryTracer needs opentelemetry-api", hint=_INSTALL_HINT
            ) from exc
        from ._version import __version__

        self._tracer: OtelTracer = trace.get_tracer(
            instrumentation_name, __version__, tracer_provider=tracer_provider
        )

    @contextmanager
    def span(self, name: str, /, **attributes: object) -> Iterator[_OtelSpanHandle]:
        from opentelemetry import context as otel_context
        from opentelemetry import trace

        key = str(name)
        attrs = _translate(key, attributes)
        if key in _OPERATIONS:
            attrs["gen_ai.operation.name"] = _OPERATIONS[key]
        if key == "tool_call":
            attrs["gen_ai.tool.type"] = "function"
        kind = trace.SpanKind.CLIENT if key == "model_call" else trace.SpanKind.INTERNAL
        links = _links(attributes.get("resume_link"))
        span = self._tracer.start_span(
            _span_name(key, attributes),
            kind=kind,
            attributes=attrs,
            links=links,
            record_exception=False,
            set_status_on_exception=False,
        )
        handle = _OtelSpanHandle(key, span)
        token = otel_context.attach(trace.set_span_in_context(span))
        try:
            yield handle
        except GeneratorExit:
            raise  # the consumer stopped early: not a failure of the span
        except BaseException as exc:
            handle.record_exception(exc)
            raise
        finally:
            _detach(token)
            span.end()

    def event(self, name: str, /, **attributes: object) -> None:
        """Add an event to the current OpenTelemetry span."""
        from opentelemetry import trace

        span = trace.get_current_span()
        if span.get_span_context().is_valid:
            _OtelSpanHandle("", span).add_event(str(name), **attributes)

    def link_context(self) -> dict[str, str] | None:
        """The current span's trace and span ids (hex), for a later resumed run to link to;
        ``None`` outside a recording span."""
        from opentelemetry import trace

        ctx = trace.get_current_span().get_span_context()
        if not ctx.is_valid:
            return None
        return {
            "trace_id": trace.format_trace_id(ctx.trace_id),
            "span_id": trace.format_span_id(ctx.span_id),
        }


def _links(raw: object) -> list[Any]:
    from opentelemetry import trace

    if not isinstance(raw, Mapping):
        return []
    try:
        trace_id = int(str(raw["trace_id"]), 16)
        span_id = int(str(raw["span_id"]), 16)
    except (KeyError, ValueError):
        return []  # a head written by another tracer: nothing to link to
    ctx = trace.SpanContext(
        trace_id=trace_id,
        span_id=span_id,
        is_remote=True,
        trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED),
    )
    if not ctx.is_valid:
        return []
    return [trace.Link(ctx, {"lovia.link.type": "resumes"})]


def _detach(token: object) -> None:
    """Restore the context that was current before the span; a span closed from another
    context (an async generator finalized by a different task) leaves it alone."""
    from opentelemetry import context as otel_context

    try:
        from opentelemetry.context import _RUNTIME_CONTEXT
    except ImportError:  # a future API without it: the public call logs a failed detach
        otel_context.detach(token)  # type: ignore[arg-type]
        return
    try:
        _RUNTIME_CONTEXT.detach(token)  # type: ignore[arg-type]
    except ValueError:
        pass
