"""What the server's side work (chat titles, follow-up suggestions, and finishing those a
stopped server left) needs of ``RouterDeps``: a leaf, so ``titles``, ``followups`` and
``background`` stand below ``deps``, which starts them, instead of importing it back."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..agent import Agent
    from .store import ChatStore

__all__ = ["SideDeps"]


class SideDeps(Protocol):
    """The part of ``RouterDeps`` the side work reads: the served agents, the chat store,
    the title and follow-up settings, and the background task and event hooks."""

    agents: dict[str, Agent]
    store: ChatStore
    title_model: Any
    titles: bool
    followups: Any
    followup_model: Any
    lease_ttl: float

    def spawn(self, work: Any) -> None: ...

    def emit(self, event: str, data: Mapping[str, Any]) -> None: ...
