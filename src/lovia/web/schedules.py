"""Scheduled runs: the poller that fires them (their routes: ``web.api_schedules``).

A schedule's fire is an ordinary checkpointed run of the chat machinery (source
``schedule:<id>``, no person to approve: a call that needs approval goes to the agent's
``approval_handler``, else is refused), so a server killed mid-fire leaves a run that
resumes like any other. Each fire is claimed first: the schedule's row moves from the due
time to the next one only where it still holds the due time, so of several servers sharing
the database exactly one fires it. Missed times (the server was down) coalesce into one fire.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from typing import TYPE_CHECKING, Any, Protocol, cast

from ..errors import LoviaError
from .scheduling import next_fire
from .store import ScheduleRow

if TYPE_CHECKING:
    from ..agent import Agent
    from ..chats.runstart import RunStart
    from ..chats.supervisor import RunSupervisor
    from .store import ChatStore

__all__ = ["ScheduleDeps", "Scheduler"]

log = logging.getLogger("lovia.web")


class ScheduleDeps(Protocol):
    """What a ``Scheduler`` reads of its server's ``RouterDeps``: the store, the agents,
    the supervisor that runs a fire and how to start one."""

    agents: dict[str, Agent]
    store: ChatStore
    scheduler_poll: float

    @property
    def default_agent(self) -> str | None: ...

    @property
    def supervisor(self) -> RunSupervisor: ...

    async def run_start(
        self,
        session_id: str,
        agent: Agent,
        *,
        source: str = ...,
        context: dict[str, Any] | None = ...,
        park: bool = ...,
    ) -> RunStart: ...


def _prompt(row: ScheduleRow) -> str:
    if not row.until:
        return row.input
    return (
        f"{row.input}\n\n(This is scheduled run {row.id}. After the task, check whether this "
        f"holds: {row.until}. If it does, stop the schedule with "
        f"cancel_schedule({row.id!r}).)"
    )


class Scheduler:
    """Fires the due schedules of ``deps.store`` every ``deps.scheduler_poll`` seconds."""

    def __init__(self, deps: ScheduleDeps) -> None:
        self.deps = deps

    async def loop(self) -> None:
        while True:
            try:
                await self.tick(time.time())
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the store was busy or gone: try again next time
                log.warning("schedules: %s", exc)
            await asyncio.sleep(self.deps.scheduler_poll)

    async def tick(self, now: float) -> int:
        """Fire every schedule due by ``now`` that this server claims; how many fired."""
        fired = 0
        for row in await self.deps.store.due_schedules(now):
            if self._queued_here(row):  # the claim and the run's job: one transaction
                fired += await self._fire_queued(row, now) is not None
            elif await self._claimed(row, now):
                fired += await self.fire(row, claimed=True) is not None
        return fired

    def _queued_here(self, row: ScheduleRow) -> bool:
        """Whether the fire's run goes to a worker and the schedule is in the queue's
        database, and its chat is not busy on this server (then it waits, as a message)."""
        sup = self.deps.supervisor
        tables = self.deps.store.tables
        chat = row.session_id
        return (
            sup.queue is not None
            and hasattr(tables, "claim_fire_with")
            and (chat is None or not sup.busy_here(chat))
            and (chat is not None or row.last_session_id not in sup.live)
        )

    async def _fire_queued(self, row: ScheduleRow, now: float) -> str | None:
        """Move the schedule on and queue its run in one transaction, then follow the run
        here (a crash in between leaves the run to its worker; its chat shows it)."""
        sup = self.deps.supervisor
        chat_id = row.session_id or uuid.uuid4().hex
        name = self._agent_name(row)
        run_id = uuid.uuid4().hex
        text = _prompt(row)

        async def queue_run(conn: Any) -> None:
            await sup.queue.submit(run_id, text, session_id=chat_id, agent=name, conn=conn)

        if not await self._claimed(row, now, then=queue_run):
            return None
        await self.deps.store.upsert(chat_id, agent=name, title=text)
        how = await self.deps.run_start(
            chat_id, sup.agent(name), source=f"schedule:{row.id}", context=row.context, park=False
        )

        async def prepare() -> str:
            return text

        try:
            await sup.begin(chat_id, prepare, agent_name=name, resume_run_id=run_id, start=how)
        except Exception as exc:  # the run is queued all the same: a worker answers it
            log.warning("schedule %s: its run %s is not followed here: %s", row.id, run_id, exc)
        await self.deps.store.tables.set_last_session(row.id, chat_id, count=False)
        return chat_id

    async def _claimed(self, row: ScheduleRow, now: float, then: Any = None) -> bool:
        tables = self.deps.store.tables
        if row.expires_at is not None and row.expires_at <= now:
            await self.deps.store.set_schedule_active(
                row.id, active=False, finished_reason="expired"
            )
            return False
        try:
            after = next_fire(row.trigger_kind, row.trigger_expr, now)
        except LoviaError:
            after = None
        last = row.max_fires is not None and row.fire_count + 1 >= row.max_fires
        keep = after is not None and not last
        upto = after if after is not None else row.next_fire
        if then is not None:  # PostgreSQL's tables (``_queued_here``)
            claim = cast("Any", tables).claim_fire_with
            won = bool(await claim(row.id, row.next_fire, upto, then, active=keep))
        else:
            won = await tables.claim_fire(row.id, row.next_fire, upto, active=keep)
        if won and not keep:
            reason = "max_fires" if last else "done"
            await self.deps.store.set_schedule_active(row.id, active=False, finished_reason=reason)
        return won

    async def fire(self, row: ScheduleRow, *, claimed: bool = False) -> str | None:
        """Start the schedule's run (or hand its input to the chat's live run); the chat's
        id, or ``None`` when it was skipped (its last new chat is still running)."""
        deps = self.deps
        sup = deps.supervisor
        if row.session_id is None and row.last_session_id in sup.live:
            return None  # a new chat per fire: one at a time
        chat_id = row.session_id or uuid.uuid4().hex
        name = self._agent_name(row)
        agent = sup.agent(name)
        source = f"schedule:{row.id}"
        how = await deps.run_start(chat_id, agent, source=source, context=row.context, park=False)
        await sup.send(chat_id, _prompt(row), agent_name=name, start=how)
        await deps.store.tables.set_last_session(row.id, chat_id, count=not claimed)
        return chat_id

    def _agent_name(self, row: ScheduleRow) -> str | None:
        deps = self.deps
        name = row.agent if row.agent in deps.agents else deps.default_agent
        if name is None and deps.agents:
            name = next(iter(deps.agents))
        return name
