"""Summarize a span of the transcript (compaction's last stage) with the configured writer.

The writer is ``Compaction(summarizer=...)``: nothing (an ``LLMSummarizer`` on the run's own
provider), a provider, an object with ``summarize(entries, req=..., prior_summary=...)``
(``LLMSummarizer`` or a user's), or a plain callable ``(entries) -> str`` (sync or async).
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..transcript import TranscriptEntry
from ..usage import Usage
from .policy import CompactionRequest
from .summarizer import LLMSummarizer

if TYPE_CHECKING:
    from ..providers.base import Provider

__all__ = ["summarize"]


async def summarize(
    provider: Provider,
    summarizer: Any,
    span: Sequence[TranscriptEntry],
    *,
    prior: str | None = None,
    usage: Usage | None = None,
) -> str:
    """The summary text of ``span``; ``span`` opens with the previous summary's entry when
    there is one (``prior``, its text), which a writer object folds into instead."""
    if summarizer is not None and not hasattr(summarizer, "stream"):
        if not hasattr(summarizer, "summarize"):
            value = summarizer(list(span))
            if inspect.isawaitable(value):
                value = await value
            return str(value or "").strip()
    else:
        summarizer = LLMSummarizer(summarizer)
    entries = list(span[1:] if prior else span)
    req = CompactionRequest(entries=entries, provider=provider, usage=usage or Usage())
    text = await summarizer.summarize(entries, req=req, prior_summary=prior or None)
    return str(text or "").strip()
