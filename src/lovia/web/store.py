"""``ChatStore``: what the web server keeps, in one bundle.

A session store for what each chat said, a checkpointer for every run (saved after each
step, so a crash or a restart loses nothing), and the chat tables: each chat's title, agent,
pin and origin, the records of its runs, its schedules and its UI components' data.

``ChatStore.sqlite(path)`` keeps all of it in one SQLite file (WAL: several servers on one
host may share it); a file lovia 0.9.119's web server wrote opens with every chat.
``ChatStore.in_memory()`` is for tests and demos. ``ChatStore(session, checkpointer=...,
meta_path=...)`` puts the chat tables in a SQLite file of their own beside any stores, or,
with a ``postgresql://`` URL, in that database (``lovia web --db postgresql://...``: every
web server on it sees the same titles, pins, run records and schedules).
"""

from __future__ import annotations

import json
import secrets
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from ..chats.book import ChatBook
from ..errors import UserError, UserTypeError
from ..stores.capabilities import Closes, ListsSessions, has_capability
from ..stores.chat_rows import ChatMeta, RunRow, ScheduleRow
from ..stores.chat_tables import SQLiteChatTables
from ..stores.checkpoint import Checkpointer
from ..stores.memory import InMemoryCheckpointer, InMemorySession
from ..stores.session_protocol import Segment, Session
from ..transcript import InputEntry
from .adoption import SessionWatch, adopt_all
from .side_runs import side_runs

__all__ = ["ChatMeta", "ChatStore", "RunRow", "ScheduleRow", "ref_offset"]

TITLE_CHARS = 120
MAX_UI_DATA_BYTES = 8 * 1024 * 1024


def title_text(text: str | None) -> str | None:
    if text is None:
        return None
    # no control character or lone surrogate (PostgreSQL stores neither NUL nor the latter)
    text = text.encode("utf-8", "replace").decode("utf-8")
    text = "".join(c if c >= " " and c != "\x7f" else " " for c in text)
    cut = " ".join(text.split())[:TITLE_CHARS].strip()
    return cut or None


def ref_offset(segments: Sequence[Segment], ref: str) -> int | None:
    """Where in the chat (its flat entry index) the user message ``ref`` names is:
    ``"<run_id>:<n>"`` is the ``n``-th user message (from 0) of run ``run_id``."""
    run_id, _, nth = ref.rpartition(":")
    if not run_id or not nth.isdigit():
        return None
    offset = 0
    for segment in segments:
        if segment.run_id == run_id:
            users = [
                i
                for i, e in enumerate(segment.entries)
                if isinstance(e, InputEntry) and e.role == "user"
            ]
            n = int(nth)
            return offset + users[n] if n < len(users) else None
        offset += len(segment.entries)
    return None


def _tables(meta_path: str | Path, wal: bool, prefix: str) -> SQLiteChatTables:
    """SQLite's chat tables, or PostgreSQL's under the session store's table prefix."""
    from ..stores.open import is_postgres_url

    if isinstance(meta_path, str) and is_postgres_url(meta_path):
        from ..stores.pg_chat_tables import PgChatTables

        return PgChatTables(meta_path, table_prefix=prefix)
    return SQLiteChatTables(meta_path, wal=wal)


class ChatStore:
    """Transcripts (``session``), checkpoints (``checkpointer``) and the chat tables."""

    def __init__(
        self,
        session: Session,
        *,
        meta_path: str | Path = ":memory:",
        checkpointer: Checkpointer | None = None,
        wal: bool = False,
    ) -> None:
        if isinstance(session, (str, Path)) or not callable(getattr(session, "segments", None)):
            raise UserTypeError(
                f"ChatStore takes a session store, not {type(session).__name__} {session!r}",
                hint="ChatStore.sqlite(path) keeps every chat in one SQLite file; "
                "ChatStore(SQLiteSession(path), meta_path=path) names each store",
            )
        self.session = session
        self.checkpointer: Checkpointer = (
            checkpointer if checkpointer is not None else InMemoryCheckpointer()
        )
        self.tables = _tables(meta_path, wal, getattr(session, "table_prefix", "lovia_"))
        self._adopted_at = 0.0
        self._watch = SessionWatch()

    @classmethod
    def sqlite(cls, path: str | Path, *, wal: bool = True) -> ChatStore:
        """Everything in the SQLite file at ``path`` (created with its folder if missing)."""
        from ..stores.sqlite import SQLiteCheckpointer, SQLiteSession

        Path(path).parent.mkdir(parents=True, exist_ok=True)
        return cls(
            SQLiteSession(path, wal=wal),
            meta_path=path,
            checkpointer=SQLiteCheckpointer(path, wal=wal),
            wal=wal,
        )

    @classmethod
    def in_memory(cls) -> ChatStore:
        """Everything in this process's memory (gone when it ends)."""
        return cls(InMemorySession(), checkpointer=InMemoryCheckpointer())

    async def close(self) -> None:
        """Close the stores (the chat tables' connection, then the session and checkpointer
        when they have ``close``)."""
        self.tables.close()
        for store in (self.session, self.checkpointer):
            if has_capability(store, Closes):
                await cast("Closes", store).close()

    # -- chats ----------------------------------------------------------------------------------

    async def upsert(
        self,
        session_id: str,
        *,
        agent: str | None = None,
        title: str | None = None,
        parent_id: str | None = None,
        spawned_from: str | None = None,
    ) -> None:
        """Make the chat known, or mark it changed now. ``title``, ``parent_id`` and
        ``spawned_from`` are set when the row is made, never later; ``agent`` once."""
        await self.tables.upsert(
            session_id,
            agent=agent,
            title=title_text(title),
            parent_id=parent_id,
            spawned_from=spawned_from,
            now=time.time(),
        )

    async def set_title(self, session_id: str, title: str) -> None:
        await self.tables.set_title(session_id, title_text(title) or "")

    async def set_title_if_unchanged(
        self, session_id: str, title: str, *, expected: str | None
    ) -> None:
        """Set the title while it is still ``expected`` (a generated title never replaces
        the one a person gave meanwhile)."""
        await self.tables.replace_title(session_id, title_text(title) or "", expected)

    async def set_pinned(self, session_id: str, pinned: bool) -> None:
        await self.tables.set_pinned(session_id, pinned)

    async def get(self, session_id: str) -> ChatMeta | None:
        return await self.tables.get(session_id)

    async def list(self, *, limit: int = 200, offset: int = 0) -> Sequence[ChatMeta]:
        """Chats, pinned first, then the most recently changed; background tasks' chats are
        listed under their parent (``list_children``) instead."""
        return await self.tables.list_chats(limit=limit, offset=offset)

    async def search(self, query: str, *, limit: int = 200, offset: int = 0) -> Sequence[ChatMeta]:
        """Chats whose title or id holds ``query`` (as text: ``%`` and ``_`` match
        themselves)."""
        return await self.tables.list_chats(query=query, limit=limit, offset=offset)

    async def listing(self, query: str, *, limit: int, offset: int) -> Sequence[dict[str, Any]]:
        """``search(query)`` (``list`` for ``""``) as ``ChatMeta.to_dict`` gives each chat,
        without making the ``ChatMeta`` (the chat list's route); a subclass's own ``list``
        or ``search`` is asked instead."""
        if type(self).search is ChatStore.search and type(self).list is ChatStore.list:
            return await self.tables.chat_dicts(query=query or None, limit=limit, offset=offset)
        page = {"limit": limit, "offset": offset}
        metas = await (self.search(query, **page) if query else self.list(**page))
        return [m.to_dict() for m in metas]

    async def list_children(self, parent_id: str) -> Sequence[ChatMeta]:
        return await self.tables.children(parent_id)

    async def task_tree(self, session_id: str) -> Sequence[str]:
        """``session_id`` and the chats it owns, at any depth (what ``delete`` removes)."""
        return await self.tables.tree(session_id)

    async def adopt_sessions(self, *, every: float = 2.0) -> int:
        """Give a row to each session the session store holds without one (a program wrote
        it with ``Runner.run(..., session_id=...)``), so the chat list shows it. Looked at
        at most once per ``every`` seconds, and then (a store with ``MarksSessions``) only
        at the rows written since the last look; returns how many rows were made."""
        now = time.monotonic()
        if now - self._adopted_at < every:
            return 0
        self._adopted_at = now
        if not has_capability(self.session, ListsSessions):
            return 0
        try:
            fresh = await self._watch.look(self.session)
            if fresh is not None and not fresh - set(await self.tables.get_many(list(fresh))):
                return 0  # nothing new, or only sessions the chat tables know already
            return await adopt_all(self.session, self.tables, title_text)
        except BaseException:
            self._watch.reset()  # the rows looked at may not have been adopted
            raise

    async def fork(
        self, source_id: str, *, ref: str | None = None, new_id: str | None = None
    ) -> str | None:
        """Copy ``source_id``'s finished history into a new chat and return its id: up to
        just before the user message ``ref`` names, or whole; into ``new_id`` (generated
        without). ``None`` when nothing would be copied; ``ValueError`` when ``ref`` names
        no message of it; ``LookupError`` when the source chat has no row;
        ``ForkTargetTaken`` when ``new_id`` holds a chat already, or another fork into it
        won: then nothing of this fork is left."""
        from ..stores.maintenance import fork_target_taken, rewind_plan

        segments = await self.session.segments(source_id)
        copied: list[Segment] = list(segments)
        keep: int | None = None
        if ref is not None:
            keep = ref_offset(segments, ref)
            if keep is None:
                raise ValueError(f"no message {ref!r} in the chat's finished history")
            plan = rewind_plan(segments, keep_entries=keep)  # the cut a rewind makes
            replaced = {s.run_id: s for s in plan.replace}
            copied = [replaced.get(s.run_id, s) for s in segments if s.run_id not in plan.delete]
        if not any(s.entries for s in copied):
            return None
        fork_id = new_id or uuid.uuid4().hex
        if new_id is not None and await self.tables.get_many([new_id]):
            raise fork_target_taken(new_id)
        await self._copy(source_id, fork_id, keep, copied)
        try:
            published = await self.tables.insert_fork(fork_id, source_id, ref, time.time())
        except Exception:
            await self.session.clear(fork_id)  # the copy is this call's own
            if await self.tables.get_many([fork_id]):
                raise fork_target_taken(fork_id) from None  # a chat of that id appeared
            raise
        if not published:
            await self.session.clear(fork_id)
            raise LookupError(source_id)
        return fork_id

    async def _copy(
        self, source_id: str, fork_id: str, keep: int | None, copied: Sequence[Segment]
    ) -> None:
        """Write the fork's transcript: the store's own atomic fork when it has one."""
        from ..stores.fork import ForkTargetTaken
        from ..stores.maintenance import SessionMaintenance, fork_target_taken

        try:
            if isinstance(self.session, SessionMaintenance):
                await self.session.fork(source_id, fork_id, keep_entries=keep)
                return
            if await self.session.load(fork_id):
                raise fork_target_taken(fork_id)
            for segment in copied:
                if segment.entries:
                    await self.session.append(
                        fork_id, segment.entries, run_id=segment.run_id, meta=segment.meta
                    )
        except ForkTargetTaken:
            raise  # the id is another's: nothing of this fork was written, nothing to undo
        except Exception:
            await self.session.clear(fork_id)
            raise

    async def delete(self, session_id: str, *, schedules: bool = True) -> Sequence[str]:
        """Delete the chat and the chats it owns (transcripts, runs with their side runs, rows,
        and their schedules unless ``schedules=False``); returns the chat's own run ids."""
        tree = list(dict.fromkeys([session_id, *await self.tables.tree(session_id)]))
        deleted = [await self._forget(sid) for sid in tree]
        await self.tables.delete(tree, schedules=schedules)
        return deleted[0]

    async def delete_all(self) -> None:
        """Delete every chat (as ``delete``) the tables or the session store know."""
        ids = set(await self.tables.all_ids())
        if has_capability(self.session, ListsSessions):
            ids.update(
                i.session_id for i in await cast("ListsSessions", self.session).list_sessions()
            )
        for sid in ids:
            await self._forget(sid)
        await self.tables.delete(sorted(ids), schedules=True)
        await self.tables.forget_runs()

    async def _forget(self, session_id: str) -> Sequence[str]:
        """Clear a chat's transcript, its runs and side runs (the one path); its run ids."""
        active, _ = await self.tables.active_run(session_id)
        runs = await ChatBook(self.session, self.checkpointer).delete(session_id)
        for run_id in {*([active] if active else []), *side_runs(session_id, runs)}:
            await self.checkpointer.delete(run_id)
        return runs

    # -- UI component data ----------------------------------------------------------------------

    async def put_ui_data(self, session_id: str, payload: bytes) -> str | None:
        """Keep a component's props (JSON bytes) with the chat; its ref, or ``None`` when
        the chat is gone."""
        if len(payload) > MAX_UI_DATA_BYTES:
            raise UserError(
                f"UI data is {len(payload)} bytes; the limit is {MAX_UI_DATA_BYTES}",
                hint="keep fewer rows, or narrow the query",
            )
        ref = secrets.token_urlsafe(16)
        return ref if await self.tables.put_ui_data(session_id, ref, payload) else None

    async def get_ui_data(self, session_id: str, ref: str) -> bytes | None:
        return await self.tables.get_ui_data(session_id, ref)

    # -- the run a chat may resume ----------------------------------------------------------

    async def get_active_run_id(self, session_id: str) -> str | None:
        return (await self.tables.active_run(session_id))[0]

    async def get_active_context(self, session_id: str) -> dict[str, Any] | None:
        raw = (await self.tables.active_run(session_id))[1]
        try:
            value = json.loads(raw) if raw else None
        except ValueError:
            return None
        return value if isinstance(value, dict) else None

    async def set_active_run_id(
        self, session_id: str, run_id: str, *, context: dict[str, Any] | None = None
    ) -> None:
        raw = json.dumps(context, ensure_ascii=False) if context else None
        await self.tables.set_active_run(session_id, run_id, raw)

    async def clear_active_run_id(self, session_id: str, *, expected: str | None = None) -> None:
        await self.tables.clear_active_run(session_id, expected)

    # -- run records ------------------------------------------------------------------------

    async def start_run(self, row: RunRow) -> None:
        await self.tables.start_run(row)

    async def finish_run(
        self,
        run_id: str,
        *,
        status: str,
        error: str | None = None,
        usage: dict[str, Any] | None = None,
    ) -> None:
        raw = json.dumps(usage) if usage else None
        await self.tables.finish_run(run_id, status, error, raw, time.time())

    async def list_runs(
        self,
        *,
        session_id: str | None = None,
        source: str | None = None,
        since: float | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> Sequence[RunRow]:
        """Run records, newest first; ``since``: only those that finished after it."""
        return await self.tables.list_runs(
            session_id=session_id, source=source, since=since, limit=limit, offset=offset
        )

    async def latest_run_for(self, source: str) -> RunRow | None:
        found = await self.tables.list_runs(
            session_id=None, source=source, since=None, limit=1, offset=0
        )
        return found[0] if found else None

    async def latest_run_statuses(self, session_ids: Sequence[str]) -> dict[str, str]:
        return await self.tables.latest_statuses(session_ids)

    async def sweep_stale_runs(self, *, live: Sequence[str] = ()) -> None:
        """Records a dead process left ``running`` become ``interrupted`` (``live``: run
        ids a server sharing the stores still drives)."""
        await self.tables.sweep_running(time.time(), live)

    # -- schedules ----------------------------------------------------------------------------

    async def add_schedule(self, row: ScheduleRow) -> None:
        await self.tables.put_schedule(row, insert=True)

    async def update_schedule(self, row: ScheduleRow) -> None:
        await self.tables.put_schedule(row, insert=False)

    async def list_schedules(self) -> Sequence[ScheduleRow]:
        return await self.tables.schedules()

    async def get_schedule(self, schedule_id: str) -> ScheduleRow | None:
        return await self.tables.schedule(schedule_id)

    async def delete_schedule(self, schedule_id: str) -> bool:
        return await self.tables.delete_schedule(schedule_id)

    async def due_schedules(self, now: float) -> Sequence[ScheduleRow]:
        return await self.tables.schedules(due_by=now)

    async def mark_fired(
        self,
        schedule_id: str,
        *,
        next_fire: float,
        active: bool,
        last_session_id: str | None,
        finished_reason: str | None = None,
    ) -> None:
        await self.tables.mark_fired(
            schedule_id,
            next_fire=next_fire,
            active=active,
            last_session_id=last_session_id,
            finished_reason=finished_reason,
        )

    async def set_schedule_active(
        self,
        schedule_id: str,
        *,
        active: bool,
        next_fire: float | None = None,
        finished_reason: str | None = None,
    ) -> None:
        await self.tables.set_schedule_active(
            schedule_id, active=active, next_fire=next_fire, finished_reason=finished_reason
        )
