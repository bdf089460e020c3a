"""Chat messages: the view of a transcript that chat APIs, tests and guardrails use.

The stored form of a conversation is its transcript entries (``lovia.transcript``); a
``Message`` list is a projection of them, grouped the way chat APIs expect: an assistant
message carries its text, its reasoning and the tool calls of one model turn; each tool
result is a ``tool`` message. ``entries_to_messages`` / ``messages_to_entries`` in
``lovia.transcript`` convert between the two.

Build run input with ``system(...)``, ``user(...)``, ``assistant(...)``, ``tool_message(...)``::

    await Runner.run(agent, [system("Answer in French."), user("Hello")])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from .parts import ContentPart, normalize_content, text_of
from .usage import Usage

__all__ = [
    "AssistantTurn",
    "Message",
    "Role",
    "ToolCall",
    "Usage",
    "assistant",
    "system",
    "tool_message",
    "user",
]

Role = Literal["system", "user", "assistant", "tool"]


@dataclass
class ToolCall:
    """A tool call the model asked for: ``arguments`` is the raw JSON text it sent."""

    id: str
    name: str
    arguments: str

    @property
    def call_id(self) -> str:
        """The same as ``id`` (the name transcript entries use)."""
        return self.id


@dataclass
class Message:
    """One chat message.

    ``content`` is a string, a list of parts (images, files), or ``None`` for an assistant
    message that only carries ``tool_calls``. A ``tool`` message answers ``tool_call_id``.
    """

    role: Role
    content: str | list[ContentPart] | None = None
    reasoning: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None

    @property
    def text(self) -> str:
        """The content as plain text (images and files as placeholders)."""
        return text_of(self.content)


@dataclass
class AssistantTurn:
    """One whole model answer: text, tool calls, usage and why it stopped."""

    content: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None

    def to_message(self) -> Message:
        return Message(role="assistant", content=self.content, tool_calls=list(self.tool_calls))


def system(text: str) -> Message:
    """A system message (instructions for this run, before the agent's own)."""
    return Message(role="system", content=text)


def user(content: str | ContentPart | list[ContentPart]) -> Message:
    """A user message: text, one part, or a list of parts."""
    return Message(role="user", content=normalize_content(content))


def assistant(text: str) -> Message:
    """An assistant message (for example earlier answers you replay as input)."""
    return Message(role="assistant", content=text)


def tool_message(call_id: str, content: str) -> Message:
    """A tool result answering the call ``call_id``."""
    return Message(role="tool", content=content, tool_call_id=call_id)
