"""``POST /api/chat``: one blocking turn, for HTTP clients written for lovia 0.9.119's server.

The message goes the way a message sent from the page goes (``POST /api/chats/{id}/messages``:
same supervisor, same stores, same token and origin checks), and the answer is waited for
instead of streamed: ``{output, session_id, usage}``. A client that disconnects leaves the
run to finish into the chat.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from ..chats.supervisor import RunSupervisor
from .ids import MAX_CHAT_ID_CHARS, checked_chat_id
from .models import AgentName, Message

__all__ = ["BlockingTurn", "blocking_router"]

blocking_router = APIRouter()


def _checked_session_id(value: str | None) -> str | None:
    return None if value is None else checked_chat_id(value)


class BlockingTurn(BaseModel):
    """A message for a chat (a new one without ``session_id``), answered in one response."""

    model_config = ConfigDict(extra="forbid")
    message: Message
    session_id: Annotated[
        str | None,
        Field(default=None, max_length=MAX_CHAT_ID_CHARS),
        AfterValidator(_checked_session_id),
    ] = None
    agent: AgentName = None


@blocking_router.post(
    "/chat",
    summary="Send a message and wait for the answer: {output, session_id, usage}",
)
async def blocking_turn(body: BlockingTurn, request: Request) -> JSONResponse:
    sup: RunSupervisor = request.app.state.supervisor
    chat_id = body.session_id or uuid.uuid4().hex
    run, joined_at = await sup.send(chat_id, body.message, agent_name=body.agent)
    terminal: dict[str, Any] = {}
    async for _, event in run.follow(0 if joined_at is None else joined_at - 1):
        terminal = event
    if terminal.get("type") == "run_completed":
        result = terminal.get("result") or {}
        usage = dict(result.get("usage") or {})
        # 0.9.119's clients read a total too
        usage.setdefault(
            "total_tokens", usage.get("input_tokens", 0) + usage.get("output_tokens", 0)
        )
        return JSONResponse({"output": result.get("output"), "session_id": chat_id, "usage": usage})
    error = terminal.get("error") or {}
    message = str(error.get("message") or "the run ended without an answer")
    if terminal.get("stopped"):
        return _failed(409, "the run was stopped before it answered", None, chat_id)
    if error.get("type") == "ApprovalPending":
        hint = "approve or reject the call on the page (POST /api/chats/{id}/approvals/{call_id})"
        return _failed(409, message, hint, chat_id)
    return _failed(500, message, error.get("hint"), chat_id)


def _failed(status: int, detail: str, hint: Any, chat_id: str) -> JSONResponse:
    body = {"detail": detail, "hint": hint, "session_id": chat_id}
    return JSONResponse(body, status_code=status)
