"""``Scheduling``: a plugin that lets the model schedule runs, list them and cancel them, and
start a new chat now (``start_session``).

``schedule_run`` needs the user's approval (a schedule acts later, unattended); it writes a
schedule to the ``ChatStore`` the web server uses. ``list_schedules`` and
``cancel_schedule`` need none: cancelling only deactivates (and a run a schedule started
must be able to cancel itself, with nobody there to approve).

``start_session(instruction, title=None)`` opens a new top-level chat that runs this chat's
agent on ``instruction`` at once (``web.spawns``); it needs no approval (the chat is there to
see, and ``max_background_runs`` bounds it) and works only in a run the web server drives.

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
from ..run_context import RunContext  # runtime: the tools' hints are read when they are built
from ..tools import tool
from .run_deps import RUN_CLIENT, RUN_SERVER

if TYPE_CHECKING:
    from .store import ChatStore

__all__ = ["Scheduling", "next_fire"]

_INSTRUCTIONS = (
    "You can schedule a run for later with schedule_run (the user approves it first), list "
    "this chat's schedules with list_schedules and stop one with cancel_schedule. When the "
    "user wants something done now but in a new or separate chat, call start_session: the "
    "chat starts at once and the user can open it; its answer does not come back here."
)

_START = (
    "Open a new, separate chat and start working there on `instruction` now, as this agent. "
    "The user can open that chat and go on in it. Its answer is not reported back to this "
    "chat: the call only says that the chat started."
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


def _is_number(expr: str) -> bool:
    try:
        float(expr)
    except ValueError:
        return False
    return True


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


def _minutes(epoch: float) -> str:
    return datetime.fromtimestamp(epoch).astimezone().isoformat(timespec="minutes")


def _line(row: Any) -> str:
    state = "active" if row.active else f"done ({row.finished_reason or 'inactive'})"
    parts = [f"{row.id}: {row.trigger_kind} {row.trigger_expr}", state]
    if row.active:
        parts.append(f"next {_minutes(row.next_fire)}")
    if row.until:
        parts.append(f"until: {row.until}")
    runs = f"{row.fire_count}/{row.max_fires}" if row.max_fires is not None else row.fire_count
    parts.append(f"runs {runs}")
    if row.expires_at is not None:
        parts.append(f"ends {_minutes(row.expires_at)}")
    return ", ".join(str(p) for p in parts) + f": {row.input[:80]}"


def _plan(
    kind: str,
    trigger_expr: str,
    until: str | None,
    max_fires: int | None,
    expires_at: str | None,
    now: float,
) -> tuple[str, float, str | None, float | None] | str:
    """A schedule's stored trigger, first fire, stop condition and end; or why not (text
    for the model)."""
    expr = trigger_expr.strip()
    try:
        if kind == "at":  # stored as epoch seconds, as given or converted
            expr = expr if _is_number(expr) else repr(_epoch(expr))
        first = next_fire(kind, expr, now)
    except ToolError as exc:
        return f"Couldn't schedule that ({kind} {trigger_expr!r}): {exc}"
    if first is None:
        return "Couldn't schedule that: the 'at' time is past; give a time in the future."
    stop = until.strip() if until else None
    if stop and kind == "at":
        return "A stop condition is for a repeating trigger (every or cron); 'at' runs once."
    if max_fires is not None and max_fires < 1:
        return "Nothing scheduled: max_fires must be 1 or more."
    ends: float | None = None
    if expires_at is not None and expires_at.strip():
        try:
            ends = _epoch(expires_at.strip())
        except ToolError:
            return (
                f"Nothing scheduled: expires_at {expires_at!r} is not a time; write an "
                "ISO 8601 time such as 2026-06-29T09:00."
            )
    if stop and max_fires is None and ends is None:
        return (
            "A stop condition needs a safety net: set max_fires or expires_at too, so the "
            "schedule ends even if the condition never comes true."
        )
    return expr, first, stop, ends


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
        expires_at: Annotated[str | None, "Stop after this time (ISO 8601 or epoch)."] = None,
    ) -> str:
        """Schedule a run for later: once (at), at an interval (every) or on a cron
        expression. A stop condition (until) needs a safety net: max_fires or expires_at."""
        now = time.time()
        text = instruction.strip()
        if not text:
            return "Nothing scheduled: the instruction is empty; say what the run should do."
        plan = _plan(trigger_kind, trigger_expr, until, max_fires, expires_at, now)
        if isinstance(plan, str):
            return plan
        expr, first, stop, ends = plan
        # a fire runs in the client context of the run that made the schedule
        client = dict(RUN_CLIENT.get() or {}) or None
        row = ScheduleRow(
            id=uuid.uuid4().hex[:12],
            agent=ctx.agent.name if ctx.agent is not None else None,
            input=text,
            session_id=ctx.session_id if continue_session else None,
            trigger_kind=trigger_kind,
            trigger_expr=expr,
            next_fire=first,
            active=True,
            last_session_id=None,
            created_at=now,
            updated_at=now,
            until=stop,
            max_fires=max_fires,
            expires_at=ends,
            context=client,
        )
        await store.add_schedule(row)
        when = datetime.fromtimestamp(first).astimezone().isoformat(timespec="minutes")
        ends_when = _minutes(ends) if ends is not None else None
        limits = [f"stops when: {stop}"] if stop else []
        limits += [f"at most {max_fires} runs"] if max_fires is not None else []
        limits += [f"ends {ends_when}"] if ends_when else []
        tail = f" ({'; '.join(limits)})" if limits else ""
        return f"Scheduled {row.id}: first run {when}{tail}"

    @tool(name="list_schedules")
    async def list_schedules(ctx: RunContext[Any]) -> str:
        """This chat's schedules: id, trigger, next run, stop condition, runs so far, and
        whether each is active or done (and why)."""
        rows = [r for r in await store.list_schedules() if r.session_id == ctx.session_id]
        if not rows:
            return "No schedules in this chat."
        return "\n".join(_line(r) for r in rows)

    @tool(name="cancel_schedule")
    async def cancel_schedule(
        ctx: RunContext[Any],
        schedule_id: Annotated[str, "The schedule's id (from list_schedules)."],
        reason: Annotated[str, "Why it stops (kept with the schedule)."] = "cancelled",
    ) -> str:
        """Stop a schedule of this chat, e.g. once its stop condition is met (it is kept,
        inactive, with the reason)."""
        row = await store.get_schedule(schedule_id)
        if row is None or (row.session_id is not None and row.session_id != ctx.session_id):
            return f"No schedule {schedule_id!r} in this chat; list_schedules shows their ids."
        if not row.active:
            why = f" ({row.finished_reason})" if row.finished_reason else ""
            return f"Schedule {schedule_id} is already inactive{why}."
        await store.set_schedule_active(
            schedule_id, active=False, finished_reason=reason.strip() or "cancelled"
        )
        return f"Schedule {schedule_id} stopped."

    # retries=0: a start is not idempotent, a retry could open a second chat
    @tool(name="start_session", description=_START, retries=0)
    async def start_session(
        ctx: RunContext[Any],
        instruction: Annotated[
            str,
            "The new chat's first message, complete in itself: the new chat sees nothing of "
            "this conversation.",
        ],
        title: Annotated[str | None, "The new chat's title; without one, one is made."] = None,
    ) -> dict[str, str]:
        text = instruction.strip()
        if not text:
            raise ToolError(
                "Nothing started: the instruction is empty", hint="say what the chat should do"
            )
        server, origin = RUN_SERVER.get(), ctx.session_id
        if server is None or origin is None:
            raise ToolError(
                "start_session works only in a chat of the web app",
                hint="serve the agent with lovia web or create_app",
            )
        from .spawns import spawn_chat

        return await spawn_chat(server, origin, text, title, RUN_CLIENT.get())

    return [schedule_run, list_schedules, cancel_schedule, start_session]
