"""The ``Provider`` protocol: transcript entries in, a stream of model deltas out."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any, Protocol, runtime_checkable

from ..settings import ModelSettings
from ..transcript import ModelDelta, TranscriptEntry

__all__ = ["ModelSettings", "Provider", "ToolSpec", "supports_vision"]

ToolSpec = dict[str, Any]
"""A tool as a provider sees it: ``{"name", "description", "parameters"}`` (JSON schema)."""


@runtime_checkable
class Provider(Protocol):
    """A model endpoint.

    ``stream`` receives the whole view for this call (the system entry first, if any) and
    yields deltas. Text, reasoning and tool-call deltas are for live display; the entries of
    the answer are the ``EntryCompletedDelta``s when the provider sends them, otherwise they
    are assembled from the fragments. A provider raises ``ProviderError`` (or
    ``ContextOverflowError``) and never yields a half answer as complete.
    """

    name: str
    model: str
    supports_json_schema: bool

    def stream(
        self,
        entries: Sequence[TranscriptEntry],
        *,
        tools: Sequence[ToolSpec] | None = None,
        response_format: dict[str, Any] | None = None,
        settings: ModelSettings | None = None,
    ) -> AsyncIterator[ModelDelta]: ...


def supports_vision(provider: object) -> bool:
    """Whether ``provider`` sends images to its model (its ``supports_vision`` flag).

    Anything without the flag (``None``, a custom provider that does not say) counts as
    text only.
    """
    return getattr(provider, "supports_vision", False) is True
