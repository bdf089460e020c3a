"""``LLMSummarizer``: write the summary that stands for an old span, with a model call.

It asks for the ``REQUIRED_SECTIONS`` headings and, when one is missing, asks once more
naming it; the usage of both calls is added to the request's ``usage``. An empty or cut-off
answer raises ``SummaryFailed`` (a ``ValueError``): the policy then leaves the span as it was.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from ..errors import UserError
from ..parts import TextPart
from ..settings import ModelSettings
from ..transcript import (
    AssistantTextEntry,
    FinishDelta,
    InputEntry,
    TextDelta,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
    UsageDelta,
)
from ..usage import Usage
from .prompts import (
    REQUIRED_SECTIONS,
    SUMMARY_FIRST_TEMPLATE,
    SUMMARY_FOLD_TEMPLATE,
    SUMMARY_SYSTEM_PROMPT,
)

if TYPE_CHECKING:
    from ..providers.base import Provider
    from .policy import CompactionRequest

__all__ = ["LLMSummarizer", "Summarizer", "SummaryFailed", "SummaryWriter", "transcript_to_text"]

log = logging.getLogger("lovia.context")


class SummaryFailed(UserError, ValueError):
    """The summary model gave nothing usable (also a ``ValueError``, as in 0.9.119)."""


class Summarizer(Protocol):
    """An object that writes summaries (``LLMSummarizer`` is one), as 0.9.119's protocol of
    that name: a class of your own may subclass it. ``Compaction(summarizer=...)`` also takes
    a provider or a plain callable ``(entries) -> str``."""

    async def summarize(
        self,
        entries: list[TranscriptEntry],
        *,
        req: CompactionRequest,
        prior_summary: str | None = None,
    ) -> str: ...


SummaryWriter = Summarizer
"""The same protocol under this project's earlier name."""


class LLMSummarizer:
    """Summarize with a model: ``provider``, or else the run's own (``req.provider``).

    ``prompt`` is the system prompt; ``required_sections`` the headings to insist on
    (``None``: any text is fine); ``settings`` default to ``temperature=0``.
    """

    def __init__(
        self,
        provider: Provider | None = None,
        *,
        prompt: str = SUMMARY_SYSTEM_PROMPT,
        settings: ModelSettings | None = None,
        required_sections: tuple[str, ...] | None = REQUIRED_SECTIONS,
    ) -> None:
        self.provider = provider
        self.prompt = prompt
        self.settings = settings or ModelSettings(temperature=0)
        self.required_sections = required_sections

    async def summarize(
        self,
        entries: list[TranscriptEntry],
        *,
        req: CompactionRequest,
        prior_summary: str | None = None,
    ) -> str:
        """The summary of ``entries`` (folded into ``prior_summary`` when given)."""
        provider = self.provider or req.provider
        if provider is None:
            raise SummaryFailed(
                "LLMSummarizer requires a provider: none was given and the request has none",
                hint="LLMSummarizer(provider) or a CompactionRequest with provider=...",
            )
        events = transcript_to_text(entries)
        ask = (
            SUMMARY_FOLD_TEMPLATE.format(prior=prior_summary, events=events)
            if prior_summary
            else SUMMARY_FIRST_TEMPLATE.format(events=events)
        )
        prompt: list[TranscriptEntry] = [
            InputEntry(role="system", content=self.prompt),
            InputEntry(role="user", content=ask),
        ]
        summary = await self._ask(provider, prompt, req.usage)
        missing = self._missing_sections(summary)
        if missing:
            again = (
                "Your summary lacks "
                + ", ".join(missing)
                + (". Write the whole summary again with every heading, keeping all it said.")
            )
            prompt += [AssistantTextEntry(content=summary), InputEntry(role="user", content=again)]
            summary = await self._ask(provider, prompt, req.usage)
            if self._missing_sections(summary):
                log.warning("the summary still lacks %s; using it anyway", ", ".join(missing))
        return summary

    async def _ask(self, provider: Provider, prompt: list[TranscriptEntry], usage: Usage) -> str:
        texts: list[str] = []
        finish = None
        async for delta in provider.stream(prompt, settings=self.settings):
            if isinstance(delta, TextDelta):
                texts.append(delta.text)
            elif isinstance(delta, UsageDelta):
                usage.add(delta.usage)
            elif isinstance(delta, FinishDelta):
                finish = delta.reason
        if finish == "length":
            raise SummaryFailed(
                "the summary was truncated at the provider's max_tokens",
                hint="raise ModelSettings.max_tokens for the summarizer, or shorten its prompt",
            )
        text = "".join(texts).strip()
        if not text:
            raise SummaryFailed(
                "the summary model returned empty text",
                hint="check the summarizer's provider and prompt",
            )
        return text

    def _missing_sections(self, summary: str) -> list[str]:
        if not self.required_sections:
            return []
        lowered = summary.lower()
        return [h for h in self.required_sections if h.lower() not in lowered]


def transcript_to_text(entries: Sequence[TranscriptEntry], *, limit: int | None = None) -> str:
    """``entries`` as plain text, one ``[kind] text`` line each (reasoning left out).

    ``limit`` shortens longer tool outputs to their beginning and a count of the rest.
    """
    lines: list[str] = []
    for e in entries:
        if isinstance(e, InputEntry):
            content = e.content
            text = (
                content
                if isinstance(content, str)
                else "".join(p.text if isinstance(p, TextPart) else f"[{p.type}]" for p in content)
            )
            lines.append(f"[{e.role}] {text}")
        elif isinstance(e, AssistantTextEntry):
            lines.append(f"[assistant] {e.content}")
        elif isinstance(e, ToolCallEntry):
            lines.append(f"[tool_call:{e.name}] {e.arguments}")
        elif isinstance(e, ToolResultEntry):
            out = e.output
            if limit is not None and len(out) > limit:
                out = f"{out[:limit]} [... {len(out) - limit} more]"
            lines.append(f"[tool_result] {out}")
    return "\n".join(lines)
