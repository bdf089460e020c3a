"""The ``/api/schedules`` routes: list, create, change, delete and fire a schedule now
(``web.schedules``' ``Scheduler`` fires them when due)."""

from __future__ import annotations

import time
import uuid
from dataclasses import replace
from typing import TYPE_CHECKING, Annotated, Any, Literal

from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict, Field

from ..chats.supervisor import ChatBusy
from ..errors import LoviaError
from .errors import WebError
from .scheduling import next_fire
from .store import ScheduleRow

if TYPE_CHECKING:
    from .deps import RouterDeps

__all__ = ["schedule_routes"]

Kind = Literal["cron", "every", "at"]


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


def _first(kind: str, expr: str, now: float) -> float:
    try:
        found = next_fire(kind, expr, now)
    except LoviaError as exc:
        raise WebError(422, "invalid_request", exc.message, exc.hint or None) from None
    if found is None:
        raise WebError(422, "invalid_request", "that time is past", "give a time in the future")
    return found


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
