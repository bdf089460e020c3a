"""The one shape of every refusal: ``{"detail": {"code", "message", "hint"}}``.

``code`` is what a client branches on (the table in docs/web.md), ``message`` says what
happened and ``hint`` what to do. Route refusals raise ``WebError``; lovia's own errors (a
chat busy on another server, a full mailbox, a user error) and Starlette's (no such route,
no token, a body that is not JSON) are turned into the same shape here. Request validation
keeps FastAPI's list under ``detail`` (each item's ``loc``, ``msg`` and ``type``, never the
input echoed back), with a ``hint`` beside it.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..chats.supervisor import ApprovalConflict, ApprovalStale, ChatBusy, MailboxFull
from ..errors import LoviaError, UserError

__all__ = [
    "ERROR_CODES",
    "WebError",
    "add_error_handlers",
    "error_body",
    "raw_refusal",
    "text",
]

ERROR_CODES = {
    "invalid_request": "a malformed or empty input the route rejected (400 / 422)",
    "server_token": "missing or wrong server token (401)",
    "unauthorized": "the app's own auth= dependency refused the request (401)",
    "local_origin_required": "a request from another machine, host name or site (400 / 403)",
    "path_denied": "the workspace policy refuses the path (403)",
    "agent_not_found": "no served agent by that name (404)",
    "session_not_found": "no such chat (404)",
    "schedule_not_found": "no such schedule (404)",
    "turn_not_found": "rewind or fork named a user message the chat does not have (404)",
    "image_not_found": "no image at that tool result index (404)",
    "ui_data_not_found": "no component data under that ref in this chat (404)",
    "approval_not_found": "no call waiting for approval matches (404)",
    "question_not_found": "no question waiting for an answer matches (404)",
    "process_not_found": "no such background process (404)",
    "file_not_found": "no such workspace file or directory (404)",
    "run_not_found": "no live or resumable run to cancel or reconnect to (404)",
    "not_found": "no such route (404)",
    "feature_unavailable": "the server or agent lacks it (404 / 501)",
    "run_active": "a run owns this chat, here or on another server (409)",
    "run_stopping": "a stopped run is still winding down (409)",
    "run_unfinished": "the chat's last run can still resume (409)",
    "nothing_to_fork": "the fork would be empty (409)",
    "fork_exists": "the fork's new chat or run id is taken, or another fork is writing it (409)",
    "invalid_fork_point": "the run has no such step to fork at, or an edit names no call (422)",
    "run_cancelled": "a blocking turn's run was stopped (409)",
    "approval_conflict": "the call was decided otherwise, or waits for nothing now (409)",
    "approval_stale": "the decision names a run or call digest that no longer waits (409)",
    "approval_ambiguous": "more than one waiting call has that id: name it by digest (409)",
    "approval_pending": "a blocking turn's run waits for a person's decision (409)",
    "schedule_not_fired": "the schedule could not fire now (409)",
    "agent_unregistered": "the interrupted run's agent is no longer served (409)",
    "model_unusable": "the agent's model cannot be used (400)",
    "model_not_found": "no such model profile (404)",
    "model_exists": "a model profile with that id exists (409)",
    "model_in_use": "the chat model's profile cannot be deleted (409)",
    "invalid_config": "the server's config.json cannot be read (500)",
    "body_too_large": "the request body is over the limit (413)",
    "file_too_large": "over the workspace read or upload limit (413)",
    "unsupported_file_type": "not shown inline, or an extension uploads do not allow (415)",
    "body_timeout": "the request body did not arrive in time (408)",
    "too_many_runs": "at the concurrent-run cap (429)",
    "mailbox_full": "too many messages wait for the chat's live run (429)",
    "run_failed": "a blocking turn's run failed (500)",
    "internal": "the server failed (500)",
}
"""Every ``code`` the API answers with, and what it means."""

_CODE_HINTS = {
    "invalid_request": "see the request schemas at /api/docs",
    "session_not_found": "GET /api/sessions lists the chats there are",
    "turn_not_found": "reload the chat (GET /api/sessions/{id}): it changed since",
    "image_not_found": "the chat's messages name the images their tool results hold",
    "question_not_found": "the question was answered or timed out; reload the chat",
    "process_not_found": "GET /api/sessions/{id}/processes lists the chat's processes",
    "run_active": "wait for the run to finish, or stop it (POST /api/chat/cancel)",
    "run_unfinished": "resume it (POST /api/chat/reconnect) or stop it (POST /api/chat/cancel)",
    "nothing_to_fork": "fork at a later message, or once a run has finished",
    "run_cancelled": "send the message again",
    "run_not_found": "GET /api/sessions/{id} has the chat as it is",
    "agent_not_found": "GET /api/agents lists the served agents",
    "feature_unavailable": "GET /api/info says what this server offers",
}
_STATUS_CODES = {
    400: "invalid_request",
    401: "unauthorized",  # an auth= dependency's; the token check raises its own
    403: "local_origin_required",
    404: "not_found",
    405: "not_found",
    408: "body_timeout",
    413: "body_too_large",
    422: "invalid_request",
    429: "too_many_runs",
}
_HINTS = {
    401: "sign in as the app asks (its login page, or the credentials its auth= takes)",
    404: "GET /api/docs lists the routes there are",
    405: "GET /api/docs lists the methods each route takes",
}
_UNREADABLE_BODY = "There was an error parsing the body"  # FastAPI's words


def text(value: str) -> str:
    """``value`` with anything UTF-8 cannot carry (lone surrogates) escaped."""
    return value.encode("utf-8", "backslashreplace").decode("utf-8")


def error_body(code: str, message: str, hint: str | None = None) -> dict[str, Any]:
    detail: dict[str, Any] = {"code": code, "message": text(message)}
    if hint:
        detail["hint"] = text(hint)
    return {"detail": detail}


class WebError(HTTPException):
    """A refused request: ``status``, a ``code`` from ``ERROR_CODES``, what happened and
    what to do."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        hint: str | None = None,
        *,
        headers: dict[str, str] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(status, detail=message, headers=headers)
        self.code = code
        self.message = message
        self.hint = hint or _CODE_HINTS.get(code)
        self.extra = extra or {}

    def body(self) -> dict[str, Any]:
        out = error_body(self.code, self.message, self.hint)
        out["detail"].update(self.extra)
        return out


def add_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, _bad_request)
    app.add_exception_handler(WebError, _web_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(LoviaError, _lovia_error)


async def _web_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, WebError)  # registered for WebError only
    return JSONResponse(exc.body(), status_code=exc.status_code, headers=exc.headers)


async def _http_error(_: Request, exc: Exception) -> JSONResponse:
    """Every other HTTP error, with its headers (``WWW-Authenticate``) kept; a ``detail``
    that is already ``{code, message}`` (a custom ``auth=`` dependency's) stays as it is."""
    assert isinstance(exc, StarletteHTTPException)  # registered for it only
    if isinstance(exc, WebError):
        return await _web_error(_, exc)
    if isinstance(exc.detail, dict):
        return JSONResponse({"detail": exc.detail}, exc.status_code, headers=exc.headers)
    code = _STATUS_CODES.get(exc.status_code, "internal" if exc.status_code >= 500 else "error")
    message, hint = str(exc.detail), _HINTS.get(exc.status_code, "see the API at /api/docs")
    if message == _UNREADABLE_BODY:  # nested too deep, not UTF-8, a number too long
        message = "the request body cannot be read as JSON"
        hint = "send one JSON object as UTF-8 text (the request schemas are at /api/docs)"
        code = "invalid_request"
    body = error_body(code, message, hint)
    return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)


def lovia_refusal(exc: LoviaError) -> WebError:
    """The refusal a lovia error stands for."""
    hint = exc.hint or None
    if isinstance(exc, MailboxFull):  # too many messages waiting: later, not never
        return WebError(429, "mailbox_full", exc.message, hint, headers={"Retry-After": "1"})
    if isinstance(exc, ApprovalStale):
        return WebError(409, exc.code, exc.message, hint)
    if isinstance(exc, ApprovalConflict):
        return WebError(409, "approval_conflict", exc.message, hint)
    if isinstance(exc, ChatBusy):
        return WebError(409, "run_active", exc.message, hint)
    if isinstance(exc, UserError):
        if exc.message.startswith("unknown agent"):
            return WebError(404, "agent_not_found", exc.message, hint)
        if "cannot be used" in exc.message or exc.message == "no agent is configured":
            return WebError(400, "model_unusable", exc.message, hint)
        return WebError(400, "invalid_request", exc.message, hint)
    return WebError(500, "internal", exc.message, hint)


async def _lovia_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, LoviaError)  # registered for LoviaError only
    return await _web_error(request, lovia_refusal(exc))


async def _bad_request(request: Request, exc: Exception) -> JSONResponse:
    # FastAPI's own handler echoes the input back, which fails for text that is not
    # UTF-8 (a lone surrogate): say what is wrong, and where, without the input
    assert isinstance(exc, RequestValidationError)  # registered for it only
    errors = exc.errors()
    problems = [
        {
            # a list item's place stays a number (["body", "attachments", 0, "mime"])
            "loc": [p if isinstance(p, int) else str(p) for p in e.get("loc", ())],
            "msg": text(_message(e)),
            "type": str(e.get("type", "value_error")),
        }
        for e in errors
    ]
    if errors and errors[0].get("type") == "json_invalid":
        problems[0]["loc"] = problems[0]["loc"][:1]  # its last loc is a character position
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if problems and problems[0]["loc"] == ["body"] and not kind.endswith(("/json", "+json")):
        # a form or text/plain body (what another site's form sends) is not read as JSON
        said = f"the body is {text(kind)[:100]}" if kind else "the body has no Content-Type"
        problems[0]["msg"] = f"{said}: send JSON, as Content-Type: application/json"
    return JSONResponse(
        {"detail": problems, "hint": "see the request schemas at /api/docs"}, status_code=422
    )


def _message(error: Any) -> str:
    if error.get("type") == "json_invalid":  # where, and what the JSON parser says
        loc = list(error.get("loc", ()))
        why = (error.get("ctx") or {}).get("error", "")
        at = f" at character {loc[-1]}" if len(loc) > 1 else ""
        return f"the request body is not valid JSON{at}" + (f": {why}" if why else "")
    return str(error.get("msg", ""))


async def raw_refusal(
    send: Any, status: int, code: str, message: str, hint: str | None = None
) -> None:
    """Answer an ASGI request from a middleware, in the same shape as every route's."""
    body = json.dumps(error_body(code, message, hint)).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
