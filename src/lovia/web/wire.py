"""A run's events as the chat streams send them (``POST /api/chat/stream``, ``.../reconnect``).

The supervisor keeps each live run's events as lovia's event dicts (``Event.to_dict()``);
``frames(event)`` turns one into the SSE events of the chat API: ``text_delta``,
``tool_call``, ``tool_result``, ``approval_required``, ``error``, ``done``... (the table in
docs/web.md). Fields this server adds ride along: ``run_id`` and ``digest`` on an approval
request, ``stopped`` and ``next_run_id`` on the end of a run.

Each frame is ``event: NAME`` and ``data: JSON``; a frame of a run's event also carries
``id: RUN_ID:N`` (the event's place in its run), which ``reconnect`` takes as ``after``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

__all__ = [
    "TODO_TOOLS",
    "encode",
    "error_code",
    "frames",
    "message_of",
    "usage_dict",
]

TODO_TOOLS = frozenset({"todo_write", "todo_read", "write_todos", "update_todos"})
"""Tools whose result the stream sends as a ``todo`` event (the list, structured)."""

_CODES = {
    "ProviderAuthError": "provider_auth",
    "RateLimitError": "rate_limited",
    "ContextOverflowError": "context_overflow",
    "BudgetExceeded": "budget_exceeded",
    "MaxTurnsExceeded": "max_turns",
    "RunCancelled": "cancelled",
    "CancelledError": "cancelled",
    "GuardrailTripped": "guardrail",
    "InputGuardrailTripped": "guardrail",
    "OutputGuardrailTripped": "guardrail",
    "OutputValidationError": "output_invalid",
    "ToolError": "tool_error",
    "ToolTimeoutError": "tool_error",
    "InvalidToolArguments": "tool_error",
    "TimeoutError": "timeout",
    "ApprovalPending": "approval_pending",
}


def error_code(error: dict[str, Any]) -> str:
    """The ``code`` of a run error (a stored error dict: ``type``, ``message``,
    ``status_code``...): ``provider_auth``, ``rate_limited``, ``overloaded``... ``internal``."""
    kind = str(error.get("type") or "")
    if kind in _CODES:
        return _CODES[kind]
    status = error.get("status_code")
    if kind == "ProviderError" or isinstance(status, int):
        if status in (401, 403):
            return "provider_auth"
        if status == 429:
            return "rate_limited"
        if status in (503, 529):
            return "overloaded"
        if status in (408, 504):
            return "timeout"
        message = str(error.get("message") or "").lower()
        if status is None and ("connect" in message or "network" in message):
            return "network"
        return "provider_error"
    return "internal"


def usage_dict(usage: dict[str, Any] | None, last_input: int | None = None) -> dict[str, int]:
    """Token counts as the API reports them: the four counters, ``total_tokens`` and, when
    known, ``last_input_tokens`` (the size of the last prompt)."""
    raw = usage or {}
    out = {
        key: int(raw.get(key) or 0)
        for key in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
    }
    out["total_tokens"] = out["input_tokens"] + out["output_tokens"]
    last = raw.get("last_input_tokens", last_input)
    if isinstance(last, int):
        out["last_input_tokens"] = last
    return out


def message_of(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """One model turn's entries (dicts) as one assistant message: its text, its reasoning,
    its tool calls."""
    text = [str(e.get("content") or "") for e in entries if e.get("type") == "assistant_text"]
    thought = [str(e.get("content") or "") for e in entries if e.get("type") == "reasoning"]
    calls = [
        {"id": e.get("call_id"), "name": e.get("name"), "arguments": e.get("arguments", "{}")}
        for e in entries
        if e.get("type") == "tool_call"
    ]
    return {
        "role": "assistant",
        "content": "".join(text) if text else None,
        "reasoning": "".join(thought) if thought else None,
        "tool_calls": calls or None,
    }


def _call(event: dict[str, Any]) -> dict[str, Any]:
    call = event.get("call") or {}
    return {
        "id": call.get("call_id") or call.get("id"),
        "name": call.get("name"),
        "arguments": call.get("arguments", "{}"),
    }


def _todos(call: dict[str, Any]) -> list[Any] | None:
    try:
        args = json.loads(call.get("arguments") or "{}")
    except (TypeError, ValueError):
        return None
    todos = args.get("todos") if isinstance(args, dict) else None
    return todos if isinstance(todos, list) else None


def _error(error: dict[str, Any], **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": error.get("type") or "Error",
        "message": str(error.get("message") or error.get("type") or "the run failed"),
        "code": error_code(error),
    }
    for key in ("status_code", "retryable", "hint"):
        if error.get(key) is not None:
            out[key] = error[key]
    out.update({k: v for k, v in extra.items() if v is not None})
    return out


def _tool_result(event: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    call = _call(event)
    if call["name"] in TODO_TOOLS and not event.get("is_error"):
        todos = _todos(call)
        if todos is not None:
            return "todo", {"call_id": call["id"], "name": call["name"], "todos": todos}
    data = {
        "id": call["id"],
        "name": call["name"],
        "result": event.get("output", ""),
        "is_error": bool(event.get("is_error")),
    }
    if event.get("images"):
        data["images"] = event["images"]
    return "tool_result", data


def _simple(kind: str, event: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:  # noqa: C901 - one table
    if kind in ("text_delta", "reasoning_delta"):
        return kind, {"delta": event.get("delta", "")}
    if kind == "output_discarded":
        return kind, {}
    if kind == "turn_started":
        return kind, {"turn": event.get("turn"), "agent": event.get("agent")}
    if kind == "message_completed":
        return kind, {"message": message_of(list(event.get("entries") or []))}
    if kind == "tool_call_started":
        return "tool_call", _call(event)
    if kind == "tool_call_completed":
        return _tool_result(event)
    if kind == "approval_required":
        data = _call(event)
        data.update({k: event[k] for k in ("run_id", "agent", "digest", "reason") if event.get(k)})
        return kind, data
    if kind == "handoff":
        return kind, {"from": event.get("from_agent"), "to": event.get("to_agent")}
    if kind == "user_message_queued":
        return "user_queued", {"content": event.get("content"), "id": event.get("token")}
    if kind == "user_message_injected":
        return "user_injected", {
            "content": event.get("content"),
            "turn": event.get("turn"),
            "id": event.get("token"),
        }
    if kind == "model_retrying":
        error = event.get("error") or {}
        return "retrying", {
            "attempt": event.get("attempt"),
            "max_attempts": event.get("max_attempts"),
            "delay": event.get("delay"),
            "message": str(error.get("message") or ""),
        }
    if kind == "context_compacted":
        notice = event.get("notice") or {}
        return kind, {
            "session_id": event.get("session_id"),
            "reason": notice.get("reason", event.get("reason")),
            "reactive": notice.get("reactive", False),
            "summary": notice.get("summary"),
            "tokens_before": notice.get("tokens_before", event.get("tokens_before")),
            "tokens_after": notice.get("tokens_after", event.get("tokens_after")),
            "detail": notice.get("detail", []),
        }
    if kind == "tool_call_failed":
        return "error", {**_error(event.get("error") or {}), "code": "tool_error"}
    return None


def frames(event: dict[str, Any], run_id: str | None = None) -> Iterator[tuple[str, Any]]:
    """The chat-stream events ``event`` (one of a live run's event dicts) stands for: none
    for the ones the API does not send (``run_started``, ``turn_ended``...), several for
    the end of a run (``refs``, ``timing``, ``done``)."""
    kind = str(event.get("type", ""))
    simple = _simple(kind, event)
    if simple is not None:
        yield simple
        return
    if kind == "run_completed":
        result = event.get("result") or {}
        users = [
            e
            for e in result.get("entries") or []
            if e.get("type") == "input" and e.get("role") == "user"
        ]
        if run_id is not None and users:
            yield "refs", {"refs": [f"{run_id}:{n}" for n in range(len(users))]}
        if event.get("timing"):
            yield "timing", event["timing"]
        done = {"output": result.get("output"), "usage": usage_dict(result.get("usage"))}
        if event.get("next_run_id"):
            done["next_run_id"] = event["next_run_id"]
        yield "done", done
    elif kind == "run_failed":
        error = dict(event.get("error") or {})
        if event.get("stopped"):
            error = {"type": "RunCancelled", "message": "stopped by the user", **error}
            error["type"] = "RunCancelled"
        yield (
            "error",
            _error(
                error,
                stopped=event.get("stopped"),
                next_run_id=event.get("next_run_id"),
                run_id=run_id,
            ),
        )


def encode(name: str, data: Any, event_id: str | None = None) -> bytes:
    """One SSE frame. JSON keeps non-ASCII text readable; a line break cannot end up in
    the ``event`` or ``id`` line."""
    body = json.dumps(data, ensure_ascii=False, default=str)
    head = f"id: {_one_line(event_id)}\n" if event_id else ""
    return f"{head}event: {_one_line(name)}\ndata: {body}\n\n".encode()


def _one_line(text: str) -> str:
    return text.replace("\r", " ").replace("\n", " ")
