"""Run records and schedules in the web server's SQLite chat tables (``chat_runs``,
``chat_schedules``): the half of ``SQLiteChatTables`` the scheduler and the run history use."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from .chat_rows import RUN_COLUMNS, SCHEDULE_COLUMNS, RunRow, ScheduleRow

__all__ = ["RunAndScheduleTables"]

_T = TypeVar("_T")
_SCHEDULES = f"SELECT {', '.join(SCHEDULE_COLUMNS)} FROM chat_schedules"
_RUNS = f"SELECT {', '.join(RUN_COLUMNS)} FROM chat_runs"
_NOT_EDITED = ("id", "fire_count")


class RunAndScheduleTables:
    """Run records and schedules; the connection plumbing is the subclass's."""

    async def _run(
        self, work: Callable[[sqlite3.Connection], _T], *, write: bool = True
    ) -> _T:  # pragma: no cover - defined by the subclass
        raise NotImplementedError

    async def _write(self, sql: str, params: tuple[Any, ...] = ()) -> int:
        raise NotImplementedError  # pragma: no cover - defined by the subclass

    async def _all(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        raise NotImplementedError  # pragma: no cover - defined by the subclass

    async def _one(self, sql: str, params: tuple[Any, ...] = ()) -> tuple[Any, ...] | None:
        raise NotImplementedError  # pragma: no cover - defined by the subclass

    # -- run records ----------------------------------------------------------------------------

    async def start_run(self, row: RunRow) -> None:
        """Record a run that starts; a run resumed under its id keeps its first start and
        source, and is running again."""
        await self._write(
            f"INSERT INTO chat_runs ({', '.join(RUN_COLUMNS)}) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET "
            "status = 'running', error = NULL, finished_at = NULL",
            row.to_row(),
        )

    async def finish_run(
        self, run_id: str, status: str, error: str | None, usage: str | None, now: float
    ) -> None:
        await self._write(
            "UPDATE chat_runs SET status = ?, error = ?, finished_at = ?, "
            "usage_json = COALESCE(?, usage_json) WHERE id = ?",
            (status, error, now, usage, run_id),
        )

    async def list_runs(
        self,
        *,
        session_id: str | None,
        source: str | None,
        since: float | None,
        limit: int,
        offset: int,
    ) -> list[RunRow]:
        where: list[str] = ["1 = 1"]
        params: list[Any] = []
        if session_id is not None:
            where.append("session_id = ?")
            params.append(session_id)
        if source is not None:
            where.append("source = ?")
            params.append(source)
        if since is not None:
            where.append("finished_at > ?")
            params.append(since)
        rows = await self._all(
            f"{_RUNS} WHERE {' AND '.join(where)} ORDER BY started_at DESC LIMIT ? OFFSET ?",
            (*params, limit, offset),
        )
        return [RunRow.from_row(r) for r in rows]

    async def forget_runs(self) -> None:
        """Every run record goes (every chat was deleted)."""
        await self._write("DELETE FROM chat_runs")

    async def latest_statuses(self, session_ids: Sequence[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        for sid in session_ids:
            row = await self._one(
                "SELECT status FROM chat_runs WHERE session_id = ? "
                "ORDER BY started_at DESC LIMIT 1",
                (sid,),
            )
            if row is not None:
                out[sid] = str(row[0])
        return out

    async def sweep_running(self, now: float, owned: Sequence[str] = ()) -> int:
        """Records a dead process left ``running`` become ``interrupted`` (``owned``: the
        run ids some live process drives, left alone)."""
        ids = tuple(owned)
        keep = f" AND id NOT IN ({', '.join('?' * len(ids))})" if ids else ""
        return await self._write(
            "UPDATE chat_runs SET status = 'interrupted', finished_at = ? "
            f"WHERE status = 'running'{keep}",
            (now, *ids),
        )

    # -- schedules ------------------------------------------------------------------------------

    async def put_schedule(self, row: ScheduleRow, *, insert: bool) -> None:
        values = row.to_row()
        if insert:
            marks = ", ".join("?" * len(values))
            await self._write(
                f"INSERT INTO chat_schedules ({', '.join(SCHEDULE_COLUMNS)}) VALUES ({marks})",
                values,
            )
            return
        # fire_count is the firing side's: an edit racing a fire does not set it back
        kept = [
            (c, v) for c, v in zip(SCHEDULE_COLUMNS, values, strict=True) if c not in _NOT_EDITED
        ]
        sets = ", ".join(f"{c} = ?" for c, _ in kept)
        await self._write(
            f"UPDATE chat_schedules SET {sets} WHERE id = ?", (*(v for _, v in kept), values[0])
        )

    async def mark_fired(
        self,
        schedule_id: str,
        *,
        next_fire: float,
        active: bool,
        last_session_id: str | None,
        finished_reason: str | None,
    ) -> None:
        # a schedule stopped meanwhile (by the run this fire started, say) stays stopped,
        # with its reason: a fire's bookkeeping never resurrects it
        await self._write(
            "UPDATE chat_schedules SET next_fire = ?, "
            "active = CASE WHEN active = 1 THEN ? ELSE 0 END, "
            "last_session_id = COALESCE(?, last_session_id), "
            "finished_reason = CASE WHEN active = 1 THEN ? ELSE finished_reason END, "
            "fire_count = fire_count + 1, updated_at = ? WHERE id = ?",
            (next_fire, int(active), last_session_id, finished_reason, time.time(), schedule_id),
        )

    async def set_schedule_active(
        self,
        schedule_id: str,
        *,
        active: bool,
        next_fire: float | None,
        finished_reason: str | None,
    ) -> None:
        await self._write(
            "UPDATE chat_schedules SET active = ?, next_fire = COALESCE(?, next_fire), "
            "finished_reason = ?, updated_at = ? WHERE id = ?",
            (int(active), next_fire, finished_reason, time.time(), schedule_id),
        )

    async def schedules(self, *, due_by: float | None = None) -> list[ScheduleRow]:
        if due_by is None:
            rows = await self._all(f"{_SCHEDULES} ORDER BY created_at")
        else:
            rows = await self._all(
                f"{_SCHEDULES} WHERE active = 1 AND next_fire <= ? ORDER BY next_fire", (due_by,)
            )
        return [ScheduleRow.from_row(r) for r in rows]

    async def schedule(self, schedule_id: str) -> ScheduleRow | None:
        row = await self._one(f"{_SCHEDULES} WHERE id = ?", (schedule_id,))
        return None if row is None else ScheduleRow.from_row(row)

    async def delete_schedule(self, schedule_id: str) -> bool:
        def work(conn: sqlite3.Connection) -> bool:
            gone = conn.execute("DELETE FROM chat_schedules WHERE id = ?", (schedule_id,))
            conn.execute("DELETE FROM chat_runs WHERE source = ?", (f"schedule:{schedule_id}",))
            return gone.rowcount == 1

        return await self._run(work)

    async def claim_fire(
        self, schedule_id: str, expected_next: float, next_fire: float, *, active: bool = True
    ) -> bool:
        """Move a due schedule to its next time (``active=False``: end it), only if no one
        else has: of several servers sharing the file, exactly one wins each fire."""
        count = await self._write(
            "UPDATE chat_schedules SET next_fire = ?, active = ?, fire_count = fire_count + 1, "
            "updated_at = ? WHERE id = ? AND active = 1 AND next_fire = ?",
            (next_fire, int(active), time.time(), schedule_id, expected_next),
        )
        return count == 1

    async def set_last_session(self, schedule_id: str, session_id: str, *, count: bool) -> None:
        """The chat a fire ran in; ``count``: a fire nobody claimed (run now) is counted."""
        await self._write(
            "UPDATE chat_schedules SET last_session_id = ?, fire_count = fire_count + ?, "
            "updated_at = ? WHERE id = ?",
            (session_id, int(count), time.time(), schedule_id),
        )
