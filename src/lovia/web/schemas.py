"""Request bodies of the HTTP API, validated before anything is written: a message must say
something and be storable as it is; ids are text of at most 512 characters without control
characters; a client context is at most 64 KiB of JSON. Unknown fields are refused."""

from __future__ import annotations

import unicodedata
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from .ids import MAX_CHAT_ID_CHARS, checked_chat_id
from .run_deps import MAX_CLIENT_CONTEXT_BYTES, context_size

__all__ = [
    "MAX_MESSAGE_CHARS",
    "AnswerRequest",
    "ApprovalRequest",
    "Attachment",
    "ChatRequest",
    "ForkRequest",
    "InjectCancelRequest",
    "InjectRequest",
    "RewindRequest",
    "SessionPatch",
]

MAX_MESSAGE_CHARS = 100_000
MAX_REASON_CHARS = 2_000


def _checked_text(value: str) -> str:
    """Not blank, no NUL character, no unpaired surrogate (what a terminal sends for a stray
    byte): refused before any write."""
    if all(c.isspace() or unicodedata.category(c) == "Cf" for c in value):
        raise ValueError("empty message: write something")
    if "\x00" in value:
        raise ValueError("the message contains a NUL character (U+0000): remove it")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"the message contains an unpaired surrogate at position {exc.start}: "
            "it is not text; remove it"
        ) from None
    return value


def _checked_reason(value: str | None) -> str | None:
    if value is None or not value.strip():
        return None
    if "\x00" in value:
        raise ValueError("the reason contains a NUL character (U+0000): remove it")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("the reason contains an unpaired surrogate: remove it") from None
    return value.strip()


def _checked_id(value: str | None) -> str | None:
    return None if value is None else checked_chat_id(value)


def _bounded(value: dict[str, Any] | None) -> dict[str, Any] | None:
    if value is not None and context_size(value) > MAX_CLIENT_CONTEXT_BYTES:
        raise ValueError(f"context is over {MAX_CLIENT_CONTEXT_BYTES // 1024} KB of JSON")
    return value


Message = Annotated[
    str, Field(min_length=1, max_length=MAX_MESSAGE_CHARS), AfterValidator(_checked_text)
]
SessionId = Annotated[str, Field(max_length=MAX_CHAT_ID_CHARS), AfterValidator(checked_chat_id)]
OptionalSessionId = Annotated[
    str | None, Field(default=None, max_length=MAX_CHAT_ID_CHARS), AfterValidator(_checked_id)
]
AgentName = Annotated[str | None, Field(default=None, max_length=200)]
Reason = Annotated[
    str | None, Field(default=None, max_length=MAX_REASON_CHARS), AfterValidator(_checked_reason)
]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Attachment(_Body):
    """A file the page uploaded to the agent's workspace (``uploads/``), sent with a
    message; its ``path`` is checked against the workspace again, never trusted."""

    path: str = Field(max_length=1024)
    mime: str = Field(max_length=255)
    kind: Literal["image", "file"]
    name: str | None = Field(default=None, max_length=255)


class ChatRequest(_Body):
    """A message for a chat (a new one without ``session_id``). ``agent`` picks the agent
    of a new chat (an existing chat keeps its own); ``context`` is the page's context for
    ``run_deps`` (ignored when the message joins a live run)."""

    message: Message
    session_id: OptionalSessionId = None
    agent: AgentName = None
    attachments: list[Attachment] | None = Field(default=None, max_length=20)
    context: Annotated[dict[str, Any] | None, AfterValidator(_bounded)] = None


class InjectRequest(_Body):
    """A message for the chat's live run, read at its next step."""

    session_id: SessionId
    message: Message


class InjectCancelRequest(_Body):
    """Take back a message sent with ``/api/chat/inject`` that the run has not read yet."""

    session_id: SessionId
    id: int


class ApprovalRequest(_Body):
    """A person's decision on a tool call the chat's run waits for. ``reason`` is shown to
    the model with a refusal. ``run_id`` and ``digest`` (fields this server adds) name what
    the person was shown: the run and the call's digest (its tool and arguments); a
    decision whose run no longer waits or whose call changed is refused (409)."""

    session_id: SessionId
    call_id: Annotated[str, Field(min_length=1, max_length=MAX_CHAT_ID_CHARS)]
    decision: Literal["approve", "deny"]
    reason: Reason = None
    run_id: Annotated[str | None, Field(default=None, max_length=MAX_CHAT_ID_CHARS)] = None
    digest: Annotated[
        str | None, Field(default=None, min_length=1, max_length=128, pattern=r"^[0-9a-f]+$")
    ] = None


class AnswerRequest(_Body):
    """The answer to the question the chat's run asked (``ask_human``)."""

    session_id: SessionId
    answer: Annotated[str, Field(max_length=MAX_MESSAGE_CHARS)]


class RewindRequest(_Body):
    """Where to rewind to: a user message's ``ref``, or ``user_turn``, its place (from 0)
    among the chat's user messages. Exactly one."""

    ref: Annotated[str | None, Field(default=None, max_length=1200)] = None
    user_turn: Annotated[int | None, Field(default=None, ge=0)] = None

    @model_validator(mode="after")
    def _one(self) -> RewindRequest:
        if (self.ref is None) == (self.user_turn is None):
            raise ValueError("give exactly one of ref, user_turn")
        return self


class ForkRequest(_Body):
    """Copy the chat up to just before the user message ``ref`` names (whole without) into
    the new chat ``new_id`` (generated without; a taken id is refused with 409)."""

    ref: Annotated[str | None, Field(default=None, max_length=1200)] = None
    new_id: OptionalSessionId = None


RunId = Annotated[str, Field(min_length=1, max_length=MAX_CHAT_ID_CHARS)]


class RunForkRequest(_Body):
    """Fork a stored run after model turn ``at_turn`` (0: before the first) into the new
    run ``new_run_id`` of the new chat ``session_id`` (each generated without), ready to
    resume there. ``before_call`` cuts that turn before the call's result; ``user_input``,
    ``tool_results`` (call id to output) and ``drop_calls`` edit the fork point."""

    at_turn: Annotated[int, Field(ge=0, le=100_000)]
    before_call: RunId | None = None
    new_run_id: RunId | None = None
    session_id: OptionalSessionId = None
    user_input: Message | None = None
    tool_results: dict[RunId, Annotated[str, Field(max_length=MAX_MESSAGE_CHARS)]] | None = Field(
        default=None, max_length=100
    )
    drop_calls: list[RunId] | None = Field(default=None, max_length=100)


class SessionPatch(_Body):
    """Rename (``title``) and/or pin (``pinned``) a chat."""

    title: Annotated[str | None, Field(default=None, min_length=1, max_length=120)] = None
    pinned: bool | None = None
