"""Chats over the two stores: a chat is a session id with a title and timestamps.

The session store holds what each chat has said (completed runs); the checkpointer holds a
run that did not complete (stopped by a crash, a restart or an error), which the page offers
to resume. Built-in stores have ``list_sessions`` / ``rewind_runs`` / ``list_runs``; for a
custom store without them, the chats this process has seen are still listed, and a rewind
works out the affected runs from the pure rewind plan.
"""

from __future__ import annotations

import hashlib
import inspect
import logging
import time
from dataclasses import dataclass
from typing import Any, cast

from ..errors import StoreError
from ..stores.capabilities import (
    ListsRunHeads,
    ListsRuns,
    ListsSessions,
    LoadsFirstEntries,
    RewindsRuns,
    RewindsSessions,
    has_capability,
)
from ..stores.checkpoint import Checkpointer, RunInfo, RunSnapshot
from ..stores.lease import LeaseStore
from ..stores.maintenance import rewind_plan, title_of
from ..stores.run_lease import holder_is_dead
from ..stores.session_protocol import Session
from ..transcript import TranscriptEntry, entry_to_dict

__all__ = [
    "PENDING_STATUSES",
    "ChatBook",
    "Rewound",
    "awaiting_approval",
    "can_retry",
    "chat_claim_key",
    "pending_dict",
]

log = logging.getLogger("lovia.web")

PENDING_STATUSES = ("running", "interrupted", "failed")
"""Head statuses of a run that did not complete: offered for resume (or retry)."""

_TITLES_KEPT = 4096  # titles of unfinished runs remembered (the oldest is dropped first)


def chat_claim_key(chat_id: str) -> str:
    """The lease key of a chat's claim (beside the run ids in the checkpointer's leases); a
    very long session id (``lovia chat --session``) is represented by its SHA-256."""
    if len(chat_id) > 256:
        chat_id = "sha256-" + hashlib.sha256(chat_id.encode("utf-8", "surrogatepass")).hexdigest()
    return f"lovia-chat:{chat_id}"


@dataclass(frozen=True)
class Rewound:
    """What a rewind did: entries removed and the runs it truncated or deleted."""

    removed: int
    affected_run_ids: tuple[str, ...]


class ChatBook:
    """Reads and maintains chats; knows nothing of live runs (see ``RunSupervisor``)."""

    def __init__(self, session: Session, checkpointer: Checkpointer) -> None:
        self.session = session
        self.checkpointer = checkpointer
        # chats seen by this process, for session stores without list_sessions()
        self._seen: dict[str, tuple[float, float, str | None]] = {}
        # titles of unfinished runs by (run id, started_at): a run's first message stays
        self._titles: dict[tuple[str, float | None], str] = {}

    def touch(self, chat_id: str, title: str | None) -> None:
        """Note that ``chat_id`` was written now (its first title is kept)."""
        created, _, old = self._seen.get(chat_id, (time.time(), 0.0, None))
        self._seen[chat_id] = (created, time.time(), old or title)

    async def pending_runs(self) -> list[RunInfo]:
        """Runs of a chat that did not complete, newest first: their heads, not their
        entries (read with ``load`` when needed), so the cost does not grow with runs' size."""
        return [r for r in await self.unfinished_runs() if r.session_id]

    async def unfinished_runs(self) -> list[RunInfo]:
        """Every run that did not complete, newest first: ``pending_runs`` and the runs of
        no chat (a server's own background work), in one read."""
        return await self._heads(PENDING_STATUSES, None)

    async def pending_head(self, chat_id: str) -> RunInfo | None:
        """The head of the chat's newest run that did not complete; only that chat's runs
        are looked at when the checkpointer can filter by session (the built-in ones can)."""
        for run in await self._heads(PENDING_STATUSES, chat_id):
            if run.session_id == chat_id:
                return run
        return None

    async def pending_run(self, chat_id: str) -> RunSnapshot | None:
        """The chat's newest run that did not complete, with its entries."""
        found = await self.pending_head(chat_id)
        if found is None:
            return None
        run = await self.checkpointer.load(found.run_id)
        return run if run is not None and run.status in PENDING_STATUSES else None

    async def run_title(self, run: RunInfo) -> str | None:
        """The title of a run's chat from its first user message: read once per run (its
        entries are only ever appended to), then remembered."""
        return (await self.run_titles([run])).get(run.run_id)

    async def run_titles(self, runs: list[RunInfo]) -> dict[str, str | None]:
        """``run_title`` of each run, by run id. A checkpointer with ``load_first_entries``
        gives every run's first entry (where a run keeps its input) in one read, not whole
        runs; a run is read whole only when that entry holds no title."""
        titles: dict[str, str | None] = {}
        unknown: list[RunInfo] = []
        for run in runs:
            key = (run.run_id, run.started_at)
            if key in self._titles:
                titles[run.run_id] = self._titles[key]
            else:
                unknown.append(run)
        cp = self.checkpointer
        if unknown and has_capability(cp, LoadsFirstEntries):
            try:
                firsts = await cast("LoadsFirstEntries", cp).load_first_entries(
                    [r.run_id for r in unknown], limit=1
                )
            except StoreError:  # a damaged run among them: each is read on its own, below
                firsts = None
            if firsts is not None:
                rest = []
                for run in unknown:
                    first: list[TranscriptEntry] | None = firsts.get(run.run_id)
                    title = None if first is None else self._remember(run, first)
                    titles[run.run_id] = title
                    if title is None and first is not None and len(first) < run.entry_count:
                        rest.append(run)
                unknown = rest
        for run in unknown:
            try:
                snapshot = await self.checkpointer.load(run.run_id)
            except StoreError:  # a damaged run has no title; its chat is still listed
                snapshot = None
            titles[run.run_id] = None if snapshot is None else self._remember(run, snapshot.entries)
        return titles

    def _remember(self, run: RunInfo | RunSnapshot, entries: list[TranscriptEntry]) -> str | None:
        """The title of ``run`` from its ``entries``, remembered when it has one."""
        title = title_of(entries)
        if title is not None:
            if len(self._titles) >= _TITLES_KEPT:
                self._titles.pop(next(iter(self._titles)))
            self._titles[(run.run_id, run.started_at)] = title
        return title

    async def _heads(self, statuses: tuple[str, ...] | None, chat_id: str | None) -> list[RunInfo]:
        """Runs (heads only) with these statuses, of ``chat_id`` or of every chat; through
        ``list_run_heads`` when the checkpointer has it, else from ``list_runs``."""
        store = self.checkpointer
        if has_capability(store, ListsRunHeads):
            lister = cast("ListsRunHeads", store)
            return await lister.list_run_heads(statuses=statuses, session_id=chat_id)
        if not has_capability(store, ListsRuns):
            return []
        list_runs: Any = cast("ListsRuns", store).list_runs  # may or may not take session_id
        params = inspect.signature(list_runs).parameters.values()
        if chat_id is not None and any(
            p.name == "session_id" or p.kind is p.VAR_KEYWORD for p in params
        ):
            runs: list[RunSnapshot] = await list_runs(statuses=statuses, session_id=chat_id)
        else:  # a checkpointer that cannot filter by session: done here
            runs = await list_runs(statuses=statuses)
        out = []
        for run in runs:
            if chat_id is None or run.session_id == chat_id:
                out.append(RunInfo(run.run_id, run.head, len(run.entries)))
                self._remember(run, run.entries)
        return out

    async def summaries(self, pending: list[RunInfo] | None = None) -> list[dict[str, Any]]:
        """Every chat, most recently updated first (``pending``: the pending runs, if the
        caller has them already)."""
        chats: dict[str, dict[str, Any]] = {}
        for cid, (created, updated, title) in self._seen.items():
            chats[cid] = _summary(cid, title, created, updated)
        if has_capability(self.session, ListsSessions):
            for info in await cast("ListsSessions", self.session).list_sessions():
                old = chats.get(info.session_id)
                chats[info.session_id] = _summary(
                    info.session_id,
                    info.title or (old["title"] if old else None),
                    min(info.created_at, old["created_at"]) if old else info.created_at,
                    max(info.updated_at, old["updated_at"]) if old else info.updated_at,
                )
        runs = pending if pending is not None else await self.pending_runs()
        # chats whose first run did not complete: their titles, read together
        untitled = [r for r in runs if (r.session_id or "") not in chats]
        titles = await self.run_titles(untitled) if untitled else {}
        for run in runs:
            sid = run.session_id or ""
            found = chats.get(sid)
            if found is None:
                title = titles.get(run.run_id)
                found = chats[sid] = _summary(sid, title, run.updated_at, run.updated_at)
            found["pending"] = {
                "run_id": run.run_id,
                "status": run.status,
                "awaiting_approval": awaiting_approval(run),
            }
        return sorted(chats.values(), key=lambda c: c["updated_at"], reverse=True)

    async def summary(
        self, chat_id: str, pending: list[RunInfo] | None = None
    ) -> dict[str, Any] | None:
        for chat in await self.summaries(pending):
            if chat["id"] == chat_id:
                return chat
        return None

    async def detail(self, chat_id: str) -> dict[str, Any]:
        """The chat's stored entries (with their index in ``load()``, their run and, for a run
        that was stopped or gave up, ``ended``) and its pending run."""
        entries: list[TranscriptEntry] = []
        shown: list[dict[str, Any]] = []
        for segment in await self.session.segments(chat_id):
            meta = segment.meta or {}
            ended, error = meta.get("ended"), meta.get("error")
            for e in segment.entries:
                item = {"index": len(entries), "run_id": segment.run_id, **entry_to_dict(e)}
                if isinstance(ended, str):
                    item["ended"] = ended
                    if isinstance(error, dict) and error.get("message"):
                        item["ended_error"] = str(error["message"])
                        if error.get("hint"):
                            item["ended_hint"] = str(error["hint"])
                shown.append(item)
                entries.append(e)
        head = await self.pending_head(chat_id)  # this chat's only
        pending = None if head is None else await self.checkpointer.load(head.run_id)
        if pending is not None:
            self._remember(pending, pending.entries)  # the summary's title, if it needs one
        summary = await self.summary(chat_id, [] if head is None else [head])
        if pending is not None and pending.status not in PENDING_STATUSES:
            pending = None  # it completed since the head was read
        return {
            "claimed": await self.claim_holder(chat_id) is not None
            or (head is not None and await self.run_holder(head.run_id) is not None),
            "id": chat_id,
            "title": (summary or {}).get("title") or title_of(entries),
            "created_at": (summary or {}).get("created_at"),
            "updated_at": (summary or {}).get("updated_at"),
            "entries": shown,
            "pending": None if pending is None else pending_dict(pending),
        }

    async def claim_holder(self, chat_id: str) -> str | None:
        """Who holds the chat's claim (a server answering it, or saving it), if anyone."""
        store = self.checkpointer
        if not isinstance(store, LeaseStore):
            return None
        holder = await store.lease_holder(chat_claim_key(chat_id))
        return None if holder is None or holder_is_dead(holder) else holder

    async def run_holder(self, run_id: str) -> str | None:
        """Who drives the run now (a live worker's lease, such as ``lovia runs resume`` in a
        terminal), if anyone."""
        store = self.checkpointer
        if not isinstance(store, LeaseStore):
            return None
        holder = await store.lease_holder(run_id)
        return None if holder is None or holder_is_dead(holder) else holder

    @property
    def can_rewind(self) -> bool:
        """Whether the session store can cut a chat (``rewind_runs`` or ``rewind``)."""
        return any(has_capability(self.session, c) for c in (RewindsRuns, RewindsSessions))

    async def rewind(self, chat_id: str, keep_entries: int) -> Rewound:
        """Cut the chat to its first ``keep_entries`` entries and delete the checkpoints of
        every run the cut changed."""
        if has_capability(self.session, RewindsRuns):
            rewinder = cast("RewindsRuns", self.session)
            result = await rewinder.rewind_runs(chat_id, keep_entries=keep_entries)
            removed, affected = int(result.removed), tuple(result.affected_run_ids)
        else:
            plan = rewind_plan(await self.session.segments(chat_id), keep_entries=keep_entries)
            removed = await cast("RewindsSessions", self.session).rewind(
                chat_id, keep_entries=keep_entries
            )
            affected = plan.affected_run_ids
        for run_id in affected:
            await self.checkpointer.delete(run_id)
        return Rewound(removed, affected)

    async def delete(self, chat_id: str) -> list[str]:
        """Forget the chat: its session and the checkpoints of its runs. Returns those runs."""
        try:
            run_ids = [s.run_id for s in await self.session.segments(chat_id)]
        except StoreError:  # a segment that does not decode: clearing is its remedy
            run_ids = []
        run_ids += [r.run_id for r in await self._heads(None, chat_id)]
        for run_id in dict.fromkeys(run_ids):
            await self.checkpointer.delete(run_id)
        await self.session.clear(chat_id)
        self._seen.pop(chat_id, None)
        return list(dict.fromkeys(run_ids))


# errors that a second attempt cannot get past: the setup, the input or the tools are wrong
_FINAL_ERRORS = frozenset(
    {
        "UserError",
        "ContextOverflowError",
        "MaxTurnsExceeded",
        "BudgetExceeded",
        "GuardrailTripped",
        "ToolError",
        "InvalidToolArguments",
        "SchemaError",
        "SessionConflict",
    }
)


def can_retry(run: RunSnapshot | RunInfo) -> bool:
    """Whether resuming ``run`` can work: an interrupted run always can; a failed one when
    its error was passing (a dropped connection, a rate limit, a server error), not when the
    setup or the input was wrong (no key, unknown model, context too long...). A run out of
    turns is interrupted, but the server's same ``max_turns`` would stop it again at once."""
    if run.status == "interrupted" and (run.error or {}).get("type") == "MaxTurnsExceeded":
        return False
    if run.status != "failed":
        return True
    error = run.error or {}
    if isinstance(error.get("retryable"), bool):
        return bool(error["retryable"])
    status = error.get("status_code")
    if isinstance(status, int):
        return status == 429 or status >= 500
    if error.get("type") == "ProviderError":
        hint = str(error.get("hint") or "")
        return not any(w in hint for w in ("API_KEY", "model name", "base URL"))
    return str(error.get("type")) not in _FINAL_ERRORS and error.get("type") is not None


def awaiting_approval(run: RunSnapshot | RunInfo) -> bool:
    """Whether ``run`` is parked until a person decides on some of its tool calls."""
    return run.status == "interrupted" and any(p.decision is None for p in run.pending_approvals)


def pending_dict(run: RunSnapshot) -> dict[str, Any]:
    return {
        "run_id": run.run_id,
        "status": run.status,
        "agent_name": run.agent_name,
        "updated_at": run.updated_at,
        "error": run.error,
        "can_retry": can_retry(run),
        "entries": [entry_to_dict(e) for e in run.entries],
        "awaiting_approval": awaiting_approval(run),
        # the calls the run waits for: tool, raw arguments (untrusted text) and any decision
        "approvals": [
            {
                "call_id": p.call_id,
                "tool_name": p.tool_name,
                "arguments": p.arguments,
                "digest": p.digest,
                "agent_name": p.agent_name,
                "requested_at": p.requested_at,
                "decision": p.decision,
                "reason": p.reason,
            }
            for p in run.pending_approvals
        ],
    }


def _summary(cid: str, title: str | None, created: float, updated: float) -> dict[str, Any]:
    return {
        "id": cid,
        "title": title,
        "created_at": created,
        "updated_at": updated,
        "pending": None,
    }
