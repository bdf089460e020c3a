"""What the session routes show of a chat: its row, its messages, and the run it may resume.

``detail`` is ``GET /api/sessions/{id}``: the chat's messages (completed runs) and, beside
them, ``pending`` (a run that did not complete: its messages, error, ``can_retry``, and the
calls waiting for approval with their ``run_id``), ``live`` (the run live on this server)
and ``busy_elsewhere`` (another server sharing the database is answering the chat).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ..chats.book import PENDING_STATUSES, pending_dict
from ..transcript import InputEntry
from .messages import messages_of, segment_messages

if TYPE_CHECKING:
    from .deps import RouterDeps

__all__ = ["chat_info", "detail", "snapshot"]


async def chat_info(deps: RouterDeps, chat_id: str) -> dict[str, Any] | None:
    """The chat's row as the list shows it, or ``None`` when the chat is unknown."""
    meta = await deps.store.get(chat_id)
    if meta is None:
        return None
    status = await deps.store.latest_run_statuses([chat_id]) if meta.parent_id else {}
    return {
        "id": meta.id,
        "title": meta.title,
        "agent": meta.agent,
        "created_at": meta.created_at,
        "updated_at": meta.updated_at,
        "pinned": meta.pinned,
        "parent_id": meta.parent_id,
        "last_run_status": status.get(chat_id),
        "origin_kind": meta.origin_kind,
    }


async def _origin(deps: RouterDeps, meta: Any) -> dict[str, Any] | None:
    if not meta.origin_kind or not meta.origin_session_id:
        return None
    source = await deps.store.get(meta.origin_session_id)
    return {
        "kind": meta.origin_kind,
        "session_id": meta.origin_session_id,
        "ref": meta.origin_ref,
        "title": source.title if source else None,
        "exists": source is not None,
    }


async def detail(deps: RouterDeps, chat_id: str) -> dict[str, Any]:
    """``GET /api/sessions/{id}``. An unknown chat reads as an empty one (no row)."""
    sup = deps.supervisor
    meta = await deps.store.get(chat_id)
    # the unfinished run first, the transcript after: a run that ends in between is then
    # found in the transcript (and is no longer pending), never in neither
    head = await sup.chats.pending_head(chat_id)
    pending = None if head is None else await sup.chats.checkpointer.load(head.run_id)
    segments = await deps.store.session.segments(chat_id)
    now = time.time()
    messages = segment_messages(
        segments,
        created_at=meta.created_at if meta else None,
        updated_at=meta.updated_at if meta else now,
    )
    if pending is not None and (
        pending.status not in PENDING_STATUSES or any(s.run_id == pending.run_id for s in segments)
    ):
        pending = None  # it ended, or was settled, while the transcript was read
    live = sup.live.get(chat_id)
    claimed = await sup.chats.claim_holder(chat_id) is not None or (
        head is not None and await sup.chats.run_holder(head.run_id) is not None
    )
    title = meta.title if meta else None
    if title is None and messages:
        first = next((m for m in messages if m["role"] == "user"), None)
        title = str(first["content"])[:120] if first and isinstance(first["content"], str) else None
    pending_out = None
    if pending is not None:
        pending_out = pending_dict(pending)
        start = sum(len(s.entries) for s in segments)
        pending_out["messages"] = messages_of(pending.entries, run_id=None, start=start)
    return {
        "id": chat_id,
        "title": title,
        "agent": meta.agent if meta else None,
        "created_at": meta.created_at if meta else now,
        "updated_at": meta.updated_at if meta else now,
        "entries": messages,
        "active_run_id": live.run_id if live else (head.run_id if head else None),
        "parent_id": meta.parent_id if meta else None,
        "origin": await _origin(deps, meta) if meta else None,
        "pinned": meta.pinned if meta else False,
        "live": live.to_dict() if live else None,
        "pending": pending_out,
        "busy_elsewhere": claimed and not sup.busy_here(chat_id),
        "exists": meta is not None or bool(messages) or pending is not None,
    }


async def snapshot(deps: RouterDeps, chat_id: str, status: str) -> dict[str, Any]:
    """The ``snapshot`` event: the chat's completed messages, and the live run's message."""
    meta = await deps.store.get(chat_id)
    segments = await deps.store.session.segments(chat_id)
    messages = segment_messages(
        segments,
        created_at=meta.created_at if meta else None,
        updated_at=meta.updated_at if meta else time.time(),
    )
    live = deps.supervisor.live.get(chat_id)
    if live is not None and live.input_text and not live.resumed:
        start = sum(len(s.entries) for s in segments)
        said = messages_of([InputEntry(role="user", content=live.input_text)], start=start)
        known = [m["timestamp"] for m in messages if m["timestamp"] is not None]
        said[0]["timestamp"] = max([live.started_at, *known])  # never before what it follows
        messages += said
    return {"session_id": chat_id, "status": status, "entries": messages}
