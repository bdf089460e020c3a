"""``Scheduling``: a plugin that lets the model schedule runs, list them and cancel them.

``schedule_run`` needs the user's approval (a schedule acts later, unattended); it writes a
schedule to the ``ChatStore`` the web server uses. ``list_schedules`` and
``cancel_schedule`` need none: cancelling only deactivates (and a run a schedule started
must be able to cancel itself, with nobody there to approve).

Triggers: ``every`` (seconds), ``at`` (an ISO 8601 time or epoch seconds) and ``cron`` (a
cron expression in the server's local time; needs ``croniter``).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal

from ..errors import ToolError
from ..plugins import PluginInstance
from ..tools import tool

if TYPE_CHECKING:
    from ..run_context import RunContext
    from .store import ChatStore

__all__ = ["Scheduling", "next_fire"]

_INSTRUCTIONS = (
    "You can schedule a run for later with schedule_run (the user approves it first), list "
    "this chat's schedules with list_schedules and stop one with cancel_schedule."
)


def _epoch(expr: str) -> float:
    try:
        return float(expr)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(expr.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ToolError(
            f"{expr!r} is not a time", hint="write an ISO 8601 time, e.g. 2026-05-01T09:00"
        ) from None
    return moment.timestamp() if moment.tzinfo else moment.astimezone().timestamp()


def next_fire(kind: str, expr: str, after: float) -> float | None:
    """The first time after ``after`` the trigger fires (``None``: never again)."""
    if kind == "every":
        try:
            seconds = float(expr)
        except ValueError:
            raise ToolError(f"every {expr!r}: not a number of seconds") from None
        if seconds < 1:
            raise ToolError("every: at least 1 second", hint="e.g. 3600 for hourly")
        return after + seconds
    if kind == "at":
        moment = _epoch(expr)
        return moment if moment > after else None
    if kind == "cron":
        try:
            from croniter import croniter  # type: ignore[import-untyped,unused-ignore]
        except ImportError:
            raise ToolError(
                "cron schedules need croniter", hint="pip install croniter, or use every"
            ) from None
        try:
            found = croniter(expr, datetime.fromtimestamp(after).astimezone()).get_next(float)
        except (ValueError, KeyError) as exc:
            raise ToolError(f"cron {expr!r}: {exc}", hint="e.g. '0 9 * * 1-5'") from None
        return float(found)
    raise ToolError(f"unknown trigger kind {kind!r}", hint="use cron, every or at")


@dataclass
class Scheduling:
    """The scheduling tools, writing to ``store`` (the web app's ``ChatStore``)."""

    store: ChatStore
    instructions: str | None = _INSTRUCTIONS
    name: str = "scheduling"

    async def setup(self, ctx: RunContext[Any]) -> PluginInstance:
        return PluginInstance(tools=_tools(self.store), instructions=self.instructions)


def _tools(store: ChatStore) -> list[Any]:
    from .store import ScheduleRow

    @tool(name="schedule_run", needs_approval=True)
    async def schedule_run(
        ctx: RunContext[Any],
        instruction: Annotated[str, "What the scheduled run should do."],
        trigger_kind: Annotated[Literal["cron", "every", "at"], "How it repeats."],
        trigger_expr: Annotated[str, "A cron expression, seconds, or an ISO time."],
        continue_session: Annotated[bool, "Run in this chat (else a new chat each time)."] = True,
        until: Annotated[str | None, "Stop once this is true (checked each time)."] = None,
        max_fires: Annotated[int | None, "Stop after this many runs."] = None,
    ) -> str:
        """Schedule a run for later: once (at), at an interval (every) or on a cron
        expression. Give a stop condition or max_fires for anything repeating."""
        now = time.time()
        first = next_fire(trigger_kind, trigger_expr, now)
        if first is None:
            raise ToolError("that time is past", hint="give a time in the future")
        if until and max_fires is None and trigger_kind != "at":
            raise ToolError("a stop condition needs a safety net", hint="set max_fires too")
        row = ScheduleRow(
            id=uuid.uuid4().hex[:12],
            agent=ctx.agent.name if ctx.agent is not None else None,
            input=instruction,
            session_id=ctx.session_id if continue_session else None,
            trigger_kind=trigger_kind,
            trigger_expr=trigger_expr,
            next_fire=first,
            active=True,
            last_session_id=None,
            created_at=now,
            updated_at=now,
            until=until,
            max_fires=max_fires,
        )
        await store.add_schedule(row)
        when = datetime.fromtimestamp(first).astimezone().isoformat(timespec="minutes")
        return f"scheduled {row.id}: first run {when}"

    @tool(name="list_schedules")
    async def list_schedules(ctx: RunContext[Any]) -> str:
        """This chat's schedules: id, trigger, next run, active or not."""
        rows = [r for r in await store.list_schedules() if r.session_id == ctx.session_id]
        if not rows:
            return "no schedules in this chat"
        return "\n".join(
            f"{r.id}: {r.trigger_kind} {r.trigger_expr}, next "
            f"{datetime.fromtimestamp(r.next_fire).astimezone().isoformat(timespec='minutes')}"
            f", {'active' if r.active else 'inactive'}: {r.input[:80]}"
            for r in rows
        )

    @tool(name="cancel_schedule")
    async def cancel_schedule(
        ctx: RunContext[Any], schedule_id: Annotated[str, "The schedule's id."]
    ) -> str:
        """Stop a schedule of this chat (it is kept, inactive)."""
        row = await store.get_schedule(schedule_id)
        if row is None or (row.session_id is not None and row.session_id != ctx.session_id):
            raise ToolError(f"no schedule {schedule_id!r} in this chat", hint="list_schedules")
        await store.set_schedule_active(schedule_id, active=False, finished_reason="cancelled")
        return f"cancelled {schedule_id}"

    return [schedule_run, list_schedules, cancel_schedule]
