"""The ids of a chat's side runs: its title call and its follow-up calls.

They are checkpointed runs of no chat (``web.background`` finishes those a stopped server
left), so nothing else finds them from the chat: deleting the chat deletes them by these ids.
A chat whose id is too long for a run id under the prefix has no side runs: its calls are
made as plain, unstored runs.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["FOLLOWUPS_RUN", "TITLE_RUN", "followups_run", "side_runs", "title_run"]

TITLE_RUN = "title:"
FOLLOWUPS_RUN = "followups:"
_MAX_RUN_ID = 512  # the stores' limit on a run id


def title_run(chat_id: str) -> str | None:
    """The title run's id of ``chat_id``; ``None`` when it would be too long."""
    run_id = TITLE_RUN + chat_id
    return run_id if len(run_id) <= _MAX_RUN_ID else None


def followups_run(chat_id: str, after: str) -> str | None:
    """The id of the follow-up run for the answer of run ``after``; ``None`` when too long."""
    run_id = f"{FOLLOWUPS_RUN}{chat_id}:{after}"
    return run_id if len(run_id) <= _MAX_RUN_ID else None


def side_runs(chat_id: str, run_ids: Iterable[str]) -> list[str]:
    """The title run of ``chat_id`` and a follow-up run for each of its ``run_ids``."""
    found = [title_run(chat_id), *(followups_run(chat_id, r) for r in run_ids)]
    return [r for r in found if r is not None]
