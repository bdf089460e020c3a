"""Scheduled runs: the ``/api/schedules`` routes and the poller that fires them.

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
from dataclasses import replace
from typing import TYPE_CHECKING, Annotated, Any, Literal, cast

from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..chats.supervisor import ChatBusy
from ..errors import LoviaError
from .errors import WebError
from .scheduling import next_fire
from .store import ScheduleRow

if TYPE_CHECKING:
    from .deps import RouterDeps

__all__ = ["Scheduler", "schedule_routes"]

log = logging.getLogger("lovia.web")

Kind = Literal["cron", "every", "at"]


def _said(text: str | None) -> str | None:
    if text is not None and not text.strip():
        raise ValueError("the input is blank: say what the scheduled run should do")
    return text


class ScheduleSpec(BaseModel):
    """A new schedule: ``input`` goes to ``agent`` in chat ``session_id`` (a new chat each
    fire without one) at each time the trigger gives."""

    model_config = ConfigDict(extra="forbid")
    input: str = Field(min_length=1, max_length=100_000)
    trigger_kind: Kind
    trigger_expr: str = Field(min_length=1, max_length=200)
    agent: str | None = Field(default=None, max_length=200)
    session_id: str | None = Field(default=None, max_length=512)
    active: bool = True
    until: str | None = Field(default=None, max_length=2000)
    max_fires: int | None = Field(default=None, ge=1)
    expires_at: float | None = None
    context: dict[str, Any] | None = None

    _input_said = field_validator("input")(_said)


class SchedulePatch(BaseModel):
    """Any subset of a schedule's fields; a field sent as ``null`` is cleared (``session_id``
    ``null``: a new chat each fire), one left out is kept. A new trigger, or resuming
    (``active: true``), computes the next time again from now."""

    model_config = ConfigDict(extra="forbid")
    input: str | None = Field(default=None, min_length=1, max_length=100_000)
    agent: str | None = Field(default=None, max_length=200)
    session_id: str | None = Field(default=None, max_length=512)
    trigger_kind: Kind | None = None
    trigger_expr: str | None = Field(default=None, min_length=1, max_length=200)
    active: bool | None = None
    until: str | None = Field(default=None, max_length=2000)
    max_fires: int | None = Field(default=None, ge=1)
    expires_at: float | None = None

    _input_said = field_validator("input")(_said)


def _first(kind: str, expr: str, now: float) -> float:
    """The first fire of a new or re-timed schedule: an ``at`` time already past is due at
    once (the next tick fires it), as in 0.9.119."""
    try:
        found = next_fire(kind, expr, float("-inf") if kind == "at" else now)
    except LoviaError as exc:
        raise WebError(422, "invalid_request", exc.message, exc.hint or None) from None
    if found is None:
        raise WebError(422, "invalid_request", "that time is past", "give a time in the future")
    return found


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

    def __init__(self, deps: RouterDeps) -> None:
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


def _out(row: ScheduleRow, last: Any) -> dict[str, Any]:
    item = row.to_dict()
    item.pop("context", None)
    item["last_status"] = None if last is None else _last_status(last.status)
    item["last_error"] = None if last is None else last.error
    return item


def _last_status(status: str) -> str:
    return {"completed": "ok", "running": "running"}.get(status, status)


def schedule_routes(deps: RouterDeps) -> APIRouter:  # noqa: C901 - one closure per route
    router = APIRouter(tags=["schedules"])
    store = deps.store

    async def found(schedule_id: str) -> ScheduleRow:
        row = await store.get_schedule(schedule_id)
        if row is None:
            raise WebError(404, "schedule_not_found", "schedule not found")
        return row

    async def shown(row: ScheduleRow) -> dict[str, Any]:
        return _out(row, await store.latest_run_for(f"schedule:{row.id}"))

    def agent_name(name: str | None) -> str | None:
        if name is not None and name not in deps.agents:
            raise WebError(404, "agent_not_found", f"unknown agent {name!r}")
        return name or deps.default_agent or next(iter(deps.agents), None)

    async def new_agent(spec: ScheduleSpec) -> str | None:
        """The named agent, else the only one served, else the bound chat's (*extra*); with
        several agents and neither, ``400 invalid_request`` as 0.9.119 answered."""
        if spec.agent is not None or deps.default_agent is not None:
            return agent_name(spec.agent)
        meta = await store.get(spec.session_id) if spec.session_id else None
        if meta is not None and meta.agent in deps.agents:
            return meta.agent
        if not deps.agents:
            return None
        raise WebError(
            400,
            "invalid_request",
            "this server serves several agents: say which one a schedule runs",
            f'add "agent": one of {", ".join(deps.agents)}',
        )

    @router.get("/api/schedules", summary="Every schedule")
    async def list_all() -> list[dict[str, Any]]:
        return [await shown(r) for r in await store.list_schedules()]

    @router.post("/api/schedules", summary="Create a schedule")
    async def create(spec: ScheduleSpec) -> dict[str, Any]:
        now = time.time()
        if spec.session_id is not None and await store.get(spec.session_id) is None:
            raise WebError(404, "session_not_found", "session not found")
        row = ScheduleRow(
            id=uuid.uuid4().hex,
            agent=await new_agent(spec),
            input=spec.input,
            session_id=spec.session_id,
            trigger_kind=spec.trigger_kind,
            trigger_expr=spec.trigger_expr,
            next_fire=_first(spec.trigger_kind, spec.trigger_expr, now),
            active=spec.active,
            last_session_id=None,
            created_at=now,
            updated_at=now,
            until=spec.until,
            max_fires=spec.max_fires,
            expires_at=spec.expires_at,
            context=spec.context,
        )
        await store.add_schedule(row)
        return await shown(row)

    @router.get("/api/schedules/{schedule_id}", summary="One schedule")
    async def get_one(schedule_id: str) -> dict[str, Any]:
        return await shown(await found(schedule_id))

    @router.patch("/api/schedules/{schedule_id}", summary="Change, pause or resume a schedule")
    async def patch(schedule_id: str, body: SchedulePatch) -> dict[str, Any]:
        row = await found(schedule_id)
        sent = body.model_fields_set
        now = time.time()
        change: dict[str, Any] = {"updated_at": now}
        if "input" in sent and body.input is not None:
            change["input"] = body.input
        if "agent" in sent:
            change["agent"] = agent_name(body.agent)
        for name in ("session_id", "until", "max_fires", "expires_at"):
            if name in sent:
                change[name] = getattr(body, name)
        retimed = False
        for name in ("trigger_kind", "trigger_expr"):
            if getattr(body, name) is not None:
                change[name], retimed = getattr(body, name), True
        if body.active is not None:
            if body.active and not row.active:
                retimed = True
                change["finished_reason"] = None
            change["active"] = body.active
        row = replace(row, **change)
        if retimed:
            row = replace(row, next_fire=_first(row.trigger_kind, row.trigger_expr, now))
        await store.update_schedule(row)
        return await shown(row)

    @router.delete("/api/schedules/{schedule_id}", summary="Delete a schedule")
    async def delete(schedule_id: str) -> dict[str, Any]:
        if not await store.delete_schedule(schedule_id):
            raise WebError(404, "schedule_not_found", "schedule not found")
        return {"ok": True}

    @router.post("/api/schedules/{schedule_id}/run", summary="Fire a schedule now")
    async def run_now(schedule_id: str) -> dict[str, Any]:
        """Once, now, whatever its next time (a paused schedule too); its next time stays."""
        row = await found(schedule_id)
        if row.session_id is not None and await store.get(row.session_id) is None:
            raise WebError(409, "schedule_not_fired", "the schedule's chat is gone")
        try:
            chat_id = await deps.scheduler.fire(row)
        except ChatBusy as exc:
            raise WebError(409, "schedule_not_fired", exc.message, exc.hint or None) from None
        if chat_id is None:
            raise WebError(
                409,
                "schedule_not_fired",
                "the schedule's previous run is still going",
                "wait for it to finish",
            )
        return {"ok": True, "session_id": chat_id}

    @router.get("/api/schedules/{schedule_id}/runs", summary="A schedule's fires, newest first")
    async def runs(
        schedule_id: str, limit: Annotated[int, Query(ge=1, le=500)] = 50
    ) -> list[dict[str, Any]]:
        await found(schedule_id)
        rows = await store.list_runs(source=f"schedule:{schedule_id}", limit=limit)
        out = []
        for r in rows:
            item = r.to_dict()
            item["run_id"] = item.pop("id")
            out.append(item)
        return out

    return router
