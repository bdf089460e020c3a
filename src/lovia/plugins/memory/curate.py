"""The model side-queries of Memory: the run-end digest, the dream, query expansion and the
recall summary. Each is one run of a tool-less, plugin-less agent at temperature 0 on the
host's model, so it can never start memory work of its own."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import AliasChoices, BaseModel, Field

from ...agent import Agent
from ...settings import ModelSettings
from ...transcript import AssistantTextEntry, InputEntry, TranscriptEntry
from .index import Hit

__all__ = ["Digest", "conversation_text", "digest", "dream", "expand", "messages", "summarize"]

_MAX_CONVERSATION_CHARS = 60_000

_DIGEST = (
    "You keep an assistant's long-term memory. Read the conversation and answer with:\n"
    "- facts: new facts worth knowing in a future, unrelated conversation: the user's "
    "lasting preferences and rules, corrections they made, stable details about them, their "
    "setup or their projects. Take facts only from what the user said or clearly confirmed; "
    "the assistant's own statements, findings and conclusions are never a source. Write the "
    "lasting point ('prefers X'), not the event ('asked for X today'). Leave out anything "
    "that can be looked up again, one-off task details, open questions, permissions for the "
    "task at hand, and sensitive personal details unless the user asked you to remember "
    "them. Most conversations give no fact at all; more than three is almost never right. "
    "One short self-contained line each, in the user's language, and none already in the "
    "current notes.\n"
    "- stale: current notes, copied exactly, that this conversation showed to be wrong or "
    "outdated.\n"
    "- summary: two to four sentences saying what the conversation was about and how it "
    "ended, written so a keyword search for its topics finds it."
)

_DREAM = (
    "You tidy an assistant's long-term notes about its user. Rewrite the list: merge notes "
    "that say the same thing into one well-worded note, settle contradictions in favour of "
    "the newer note (by its [YYYY-MM] stamp), and drop notes about single events or things "
    "that have expired. Keep every rule or preference the user stated. Never add a fact "
    "that is not in the list. Keep each note's [YYYY-MM] stamp (a merged note takes the "
    "newest). Stay within {budget} characters in all."
)

_EXPAND = (
    "Turn a search request into up to four short keyword queries for a full-text search "
    "over past conversations: the request itself, synonyms, related terms, and translations "
    "into the other languages the request may have been discussed in."
)

_SUMMARIZE = (
    "Below are excerpts found in past conversations for a search request. Say briefly what "
    "they tell about the request, with the dates given; say so plainly when they do not "
    "answer it. Use only the excerpts."
)


class Digest(BaseModel):
    """What the run-end digest found."""

    facts: list[str] = Field(default_factory=list)
    stale: list[str] = Field(default_factory=list)
    summary: str = ""


class _Rewrite(BaseModel):
    # 0.9.119's field names and optionality: scripted side-queries written for it parse here
    # (``notes`` is read too); nothing returned leaves Notes as they are
    facts: list[str] = Field(default_factory=list, validation_alias=AliasChoices("facts", "notes"))


class _Queries(BaseModel):
    terms: list[str] = Field(
        default_factory=list, validation_alias=AliasChoices("terms", "queries")
    )


async def _ask(model: Any, instructions: str, prompt: str, output_type: Any) -> Any:
    helper = Agent(
        name="memory",
        instructions=instructions,
        model=model,
        output_type=output_type,
        settings=ModelSettings(temperature=0.0),
    )
    return (await helper.run(prompt)).output


def messages(entries: Sequence[TranscriptEntry]) -> list[tuple[str, str]]:
    """``(role, text)`` of each user and assistant message with words in it (tool calls,
    tool results and the system prompt left out)."""
    out = []
    for entry in entries:
        if isinstance(entry, InputEntry) and entry.role == "user":
            content = entry.content
            text = (
                content
                if isinstance(content, str)
                else " ".join(getattr(p, "text", "") or "" for p in content)
            )
            if text.strip():
                out.append(("user", text.strip()))
        elif isinstance(entry, AssistantTextEntry) and entry.content.strip():
            out.append(("assistant", entry.content.strip()))
    return out


def conversation_text(entries: Sequence[TranscriptEntry]) -> str:
    """The conversation as ``USER:`` / ``ASSISTANT:`` lines (its newest part when long)."""
    text = "\n".join(f"{role.upper()}: {words}" for role, words in messages(entries))
    return text[-_MAX_CONVERSATION_CHARS:]


def _listed(facts: Sequence[str]) -> str:
    return "\n".join(f"- {f}" for f in facts) if facts else "(none)"


async def digest(model: Any, notes: Sequence[str], conversation: str) -> Digest:
    prompt = f"## Current notes\n{_listed(notes)}\n\n## Conversation\n{conversation}"
    found: Digest = await _ask(model, _DIGEST, prompt, Digest)
    return found


async def dream(model: Any, notes: Sequence[str], budget: int) -> list[str]:
    prompt = f"## Notes\n{_listed(notes)}"
    found: _Rewrite = await _ask(model, _DREAM.format(budget=budget), prompt, _Rewrite)
    return found.facts


async def expand(model: Any, query: str) -> list[str]:
    found: _Queries = await _ask(model, _EXPAND, query, _Queries)
    return [q for q in found.terms if q.strip()]


async def summarize(model: Any, query: str, hits: Sequence[Hit], lines: Sequence[str]) -> str:
    prompt = f"## Request\n{query}\n\n## Excerpts\n" + "\n".join(lines)
    found: str = await _ask(model, _SUMMARIZE, prompt, str)
    return found
