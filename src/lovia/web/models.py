"""Request bodies of the HTTP API (validated by pydantic; unknown fields are refused)."""

from __future__ import annotations

import unicodedata
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool

__all__ = [
    "CHAT_ID_PATTERN",
    "MAX_MESSAGE_CHARS",
    "Decision",
    "EditMessage",
    "NewChat",
    "Regenerate",
    "SendMessage",
]

MAX_MESSAGE_CHARS = 100_000
CHAT_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$"
"""Chat ids that travel in URLs as they are; every other id has a ``~`` form (``ids``)."""
MAX_REASON_CHARS = 2_000


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


def _checked_text(value: str) -> str:
    """A message must say something and be storable as it is: not blank, no NUL character,
    no unpaired surrogate (what a terminal sends for a stray byte); refused before any write."""
    if all(c.isspace() or unicodedata.category(c) == "Cf" for c in value):
        raise ValueError("the message is blank: write something")
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


Message = Annotated[
    str, Field(min_length=1, max_length=MAX_MESSAGE_CHARS), AfterValidator(_checked_text)
]
AgentName = Annotated[str | None, Field(default=None, max_length=200)]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NewChat(_Body):
    """Create an empty chat (the server picks its id)."""


class SendMessage(_Body):
    """A new user message; ``agent`` picks one of the served agents (default: the first)."""

    content: Message
    agent: AgentName = None


class EditMessage(_Body):
    """Replace the user message at ``index`` (its position in the chat's entries) and
    everything after it with ``content``, then answer again."""

    index: Annotated[int, Field(ge=0)]
    content: Message
    agent: AgentName = None


class Regenerate(_Body):
    """Answer the last user message again (the last answer is rewound away)."""

    agent: AgentName = None


class Decision(_Body):
    """A person's decision on a tool call waiting for approval: ``approve`` runs it once,
    ``false`` refuses it; ``reason`` (optional) is shown to the model with a refusal."""

    approve: StrictBool  # a consequential yes must be a JSON true, not 1 or "yes"
    reason: Annotated[
        str | None,
        Field(default=None, max_length=MAX_REASON_CHARS),
        AfterValidator(_checked_reason),
    ] = None
