"""A chat's side runs: its title call and its follow-up calls, and their run ids.

They are checkpointed runs of no chat (``web.background`` finishes those a stopped server
left), so nothing else finds them from the chat: deleting the chat deletes them by these ids.

A run id names the chat while it fits the stores' 512 characters (``title:<chat>``,
``followups:<chat>:<run they follow>``: the ids earlier versions gave, so their runs are
still found). A longer one names the chat by a SHA-256 of its id instead (``title#<key>``,
``followups#<key>:<run>``, or ``followups#<hash>`` of both when even that is too long), which
no readable id can equal; the start-up sweep finds such a run's chat by the keys of the
chats it holds (``chat_of``). The model is never told the chat's id.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping

from ..stores._checks import MAX_ID_CHARS

__all__ = [
    "SIDE_RUN_PREFIXES",
    "chat_key",
    "chat_of",
    "followups_run",
    "is_title_run",
    "needs_keys",
    "side_runs",
    "title_run",
]

_TITLE, _FOLLOWUPS = "title", "followups"
SIDE_RUN_PREFIXES = tuple(f"{kind}{mark}" for kind in (_TITLE, _FOLLOWUPS) for mark in ":#")
"""What the id of every side run starts with (the start-up sweep looks for these)."""


def _digest(*names: str) -> str:
    return hashlib.sha256("\0".join(names).encode("utf-8", "surrogatepass")).hexdigest()


def chat_key(chat_id: str) -> str:
    """The fixed-length name of ``chat_id`` in the id of a side run too long to hold it."""
    return _digest(chat_id)


def title_run(chat_id: str) -> str:
    """The id of ``chat_id``'s title run."""
    readable = f"{_TITLE}:{chat_id}"
    return readable if len(readable) <= MAX_ID_CHARS else f"{_TITLE}#{chat_key(chat_id)}"


def followups_run(chat_id: str, after: str) -> str:
    """The id of ``chat_id``'s follow-up run for the answer of run ``after``."""
    for run_id in (f"{_FOLLOWUPS}:{chat_id}:{after}", f"{_FOLLOWUPS}#{chat_key(chat_id)}:{after}"):
        if len(run_id) <= MAX_ID_CHARS:
            return run_id
    return f"{_FOLLOWUPS}#{_digest(chat_id, after)}"


def is_title_run(run_id: str) -> bool:
    return run_id.startswith(SIDE_RUN_PREFIXES[:2])


def side_runs(chat_id: str, run_ids: Iterable[str]) -> list[str]:
    """The title run of ``chat_id`` and a follow-up run for each of its ``run_ids``."""
    return [title_run(chat_id), *(followups_run(chat_id, r) for r in run_ids)]


def needs_keys(run_id: str) -> bool:
    """Whether ``chat_of`` needs the chats' keys to find the chat of side run ``run_id``."""
    return run_id.startswith(SIDE_RUN_PREFIXES[1::2])


def chat_of(run_id: str, keys: Mapping[str, str]) -> str | None:
    """The chat of side run ``run_id``: named in a readable id, or found by its key in
    ``keys`` (``{chat_key(chat): chat}`` of the stored chats; ``needs_keys`` says when it
    is read). ``None``: a chat not stored any more, or a follow-up id hashed whole."""
    kind, mark, rest = run_id.partition(":")
    if mark and kind == _TITLE:
        return rest
    if mark and kind == _FOLLOWUPS:
        return rest.rpartition(":")[0]
    kind, mark, rest = run_id.partition("#")
    if not mark or kind not in (_TITLE, _FOLLOWUPS):
        return None
    key, colon, _ = rest.partition(":")
    return keys.get(key) if kind == _TITLE or colon else None
