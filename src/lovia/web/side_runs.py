"""The ids of a chat's side runs: its title call and its follow-up calls.

They are checkpointed runs of no chat (``web.background`` finishes those a stopped server
left), so nothing else finds them from the chat: deleting the chat deletes them by these ids.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["FOLLOWUPS_RUN", "TITLE_RUN", "side_runs"]

TITLE_RUN = "title:"
FOLLOWUPS_RUN = "followups:"


def side_runs(chat_id: str, run_ids: Iterable[str]) -> list[str]:
    """The title run of ``chat_id`` and a follow-up run for each of its ``run_ids``."""
    return [TITLE_RUN + chat_id, *(f"{FOLLOWUPS_RUN}{chat_id}:{r}" for r in run_ids)]
