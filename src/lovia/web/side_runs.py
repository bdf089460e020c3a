"""A chat's side runs: its title call and its follow-up calls, and their run ids.

They are checkpointed runs of no chat (``web.background`` finishes those a stopped server
left), so nothing else finds them from the chat: deleting the chat deletes them by these ids.

A run id names the chat while it fits the stores' 512 characters (``title:<chat>``,
``followups:<chat>:<run they follow>``: the ids earlier versions gave, so their runs are
still found); a longer one is the kind and a SHA-256 of what it would have named
(``title#<hex>``, ``followups#<hex>``), which no readable id can equal. Each run's stored
input starts with a note naming its chat (``chat_note``), so the start-up sweep finds the
chat of either form (``chat_of``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Any

from ..stores._checks import MAX_ID_CHARS
from ..transcript import InputEntry

__all__ = [
    "SIDE_RUN_PREFIXES",
    "chat_note",
    "chat_of",
    "followups_run",
    "is_title_run",
    "side_runs",
    "title_run",
]

_TITLE, _FOLLOWUPS = "title", "followups"
SIDE_RUN_PREFIXES = tuple(f"{kind}{mark}" for kind in (_TITLE, _FOLLOWUPS) for mark in ":#")
"""What the id of every side run starts with (the start-up sweep looks for these)."""

_NOTE = "This conversation's id (for reference only): "


def _run_id(kind: str, *names: str) -> str:
    readable = ":".join((kind, *names))
    if len(readable) <= MAX_ID_CHARS:
        return readable
    key = "\0".join(names).encode("utf-8", "surrogatepass")
    return f"{kind}#{hashlib.sha256(key).hexdigest()}"


def title_run(chat_id: str) -> str:
    """The id of ``chat_id``'s title run."""
    return _run_id(_TITLE, chat_id)


def followups_run(chat_id: str, after: str) -> str:
    """The id of ``chat_id``'s follow-up run for the answer of run ``after``."""
    return _run_id(_FOLLOWUPS, chat_id, after)


def is_title_run(run_id: str) -> bool:
    return run_id.startswith(SIDE_RUN_PREFIXES[:2])


def side_runs(chat_id: str, run_ids: Iterable[str]) -> list[str]:
    """The title run of ``chat_id`` and a follow-up run for each of its ``run_ids``."""
    return [title_run(chat_id), *(followups_run(chat_id, r) for r in run_ids)]


def chat_note(chat_id: str) -> InputEntry:
    """The first entry of a side run's input: the chat it is for."""
    return InputEntry(role="system", content=_NOTE + chat_id)


def chat_of(run_id: str, entries: Sequence[Any]) -> str | None:
    """The chat of the side run ``run_id`` from its stored ``entries`` (the note its input
    starts with; a run an earlier version stored has none, and its id names the chat)."""
    for entry in entries:
        if isinstance(entry, InputEntry) and entry.role == "system":
            if entry.text.startswith(_NOTE):
                return entry.text[len(_NOTE) :]
    if run_id.startswith(f"{_TITLE}:"):
        return run_id[len(_TITLE) + 1 :]
    if run_id.startswith(f"{_FOLLOWUPS}:"):
        return run_id[len(_FOLLOWUPS) + 1 :].rpartition(":")[0]
    return None
