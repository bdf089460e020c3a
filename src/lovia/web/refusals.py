"""How the app answers what it refuses: always ``{"detail", "hint"}`` (and the status).

Refusals of the routes (``Refused``), lovia's own errors (a busy chat, a full mailbox, a
user error), bodies that do not validate, and Starlette's own errors (no such route, wrong
method, no token, a body that is not JSON) all get a detail that says what is wrong and a
hint that says what to do, never the input echoed back.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..chats.supervisor import ChatBusy, MailboxFull
from ..errors import LoviaError, UserError
from .routes import Refused

__all__ = ["HINTS", "add_error_handlers"]

_UNREADABLE_BODY = "There was an error parsing the body"  # FastAPI's words
HINTS = {
    401: "send 'Authorization: Bearer <token>', or open the page once at /?token=<token> "
    "(the token lovia web printed, or create_app's token)",
    404: "GET /docs lists the routes there are",
    405: "GET /docs lists the methods each route takes",
}
"""The hint for each status of Starlette's own errors (others: ``see the API at /docs``)."""


def add_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, _bad_request)
    app.add_exception_handler(Refused, _refused)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(LoviaError, _lovia_error)


async def _refused(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, Refused)  # registered for Refused only
    return JSONResponse({"detail": exc.detail, "hint": exc.hint}, status_code=exc.status_code)


async def _http_error(_: Request, exc: Exception) -> JSONResponse:
    """Every other HTTP error, with its headers (``WWW-Authenticate``) kept."""
    assert isinstance(exc, StarletteHTTPException)  # registered for it only
    detail, hint = str(exc.detail), HINTS.get(exc.status_code, "see the API at /docs")
    if detail == _UNREADABLE_BODY:  # nested too deep, not UTF-8, a number too long
        detail = "the request body cannot be read as JSON"
        hint = "send one JSON object as UTF-8 text (the request schemas are at /docs)"
    return JSONResponse(
        {"detail": detail, "hint": hint}, status_code=exc.status_code, headers=exc.headers
    )


async def _lovia_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, LoviaError)  # registered for LoviaError only
    status = 409 if isinstance(exc, ChatBusy) else 400 if isinstance(exc, UserError) else 500
    body = {"detail": text(exc.message), "hint": text(exc.hint) if exc.hint else None}
    if isinstance(exc, MailboxFull):  # too many messages waiting: later, not never
        return JSONResponse(body, status_code=429, headers={"Retry-After": "1"})
    return JSONResponse(body, status_code=status)


async def _bad_request(request: Request, exc: Exception) -> JSONResponse:
    # FastAPI's own handler echoes the input back, which fails for text that is not
    # UTF-8 (a lone surrogate): say what is wrong, and where, without the input
    assert isinstance(exc, RequestValidationError)  # registered for it only
    errors = exc.errors()
    problems = [
        {"loc": [str(p) for p in e.get("loc", ())], "msg": text(_message(e))} for e in errors
    ]
    first = problems[0] if problems else {"loc": [], "msg": "invalid request"}
    if errors and errors[0].get("type") == "json_invalid":
        first = {"loc": [], "msg": first["msg"]}  # its loc is a character position
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if first["loc"] == ["body"] and not kind.endswith(("/json", "+json")):
        # a form or text/plain body (what another site's form sends) is not read as JSON
        said = f"the body is {text(kind)[:100]}" if kind else "the body has no Content-Type"
        first = {"loc": [], "msg": f"{said}: send JSON, as Content-Type: application/json"}
    where = ".".join(first["loc"][1:] if len(first["loc"]) > 1 else first["loc"])
    return JSONResponse(
        {
            "detail": f"{where}: {first['msg']}" if where else first["msg"],
            "hint": "see the request schemas at /docs",
            "errors": problems,
        },
        status_code=422,
    )


def _message(error: Any) -> str:
    if error.get("type") == "json_invalid":  # where, and what the JSON parser says
        loc = list(error.get("loc", ()))
        why = (error.get("ctx") or {}).get("error", "")
        at = f" at character {loc[-1]}" if len(loc) > 1 else ""
        return f"the request body is not valid JSON{at}" + (f": {why}" if why else "")
    return str(error.get("msg", ""))


def text(value: str) -> str:
    """``value`` with anything UTF-8 cannot carry (lone surrogates) escaped."""
    return value.encode("utf-8", "backslashreplace").decode("utf-8")
