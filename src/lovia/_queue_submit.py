"""``lovia.workers``' producing side: submit, cancel, a run's state and approvals."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from ._queue_worker import QueueWorker
from .approvals import decide_holding
from .errors import UserError
from .stores.checkpoint import validate_id
from .stores.open import open_stores


class QueueSubmit(QueueWorker):
    """Queueing runs (or running them in-process with SQLite), cancelling them, reading
    their state, and recording approvals."""

    # -- producing --------------------------------------------------------------------------

    async def submit(
        self,
        run_id: str,
        input: Any,
        *,
        session_id: str | None = None,
        agent: str | None = None,
        conn: Any = None,
        park: bool = False,
    ) -> int | None:
        """Queue one agent run under ``run_id``; returns the job id, or ``None`` when this
        run was submitted before (nothing is queued twice; a completed run keeps its result).
        ``park=True`` (a person watches, as on a chat's page): a call that needs approval, of
        an agent without ``approval_handler``, parks the run for a person's decision
        (``decide``) instead of being refused, and the worker announces each saved step on
        ``CHANNEL`` (``stream_run`` shows it at once).

        The run's row and its job are written in one transaction: ``conn`` (an open
        ``psycopg.AsyncConnection``) makes it the caller's, committed or rolled back with the
        caller's own writes; without it the queue opens, commits and closes a connection.
        """
        payload = self._checked(run_id, input, session_id, agent)
        if not self.is_postgres:
            return await self._submit_local(run_id, input, session_id, agent)
        await self._ensure_schema()
        ids = await self._pg.submit([(run_id, payload, session_id, agent, park)], conn)
        return ids[0]

    async def submit_many(
        self, runs: Sequence[Mapping[str, Any]], *, conn: Any = None
    ) -> list[int | None]:
        """Queue several runs in one transaction and one statement, however many: each a
        mapping with ``run_id``, ``input`` and optionally ``session_id``, ``agent`` and
        ``park`` (as ``submit``). Returns each run's job id, ``None`` for one submitted
        before. Faster than one ``submit`` per run when runs arrive in bursts."""
        rows = []
        for item in runs:
            run_id, input = item["run_id"], item["input"]
            session_id, agent = item.get("session_id"), item.get("agent")
            payload = self._checked(run_id, input, session_id, agent)
            rows.append((run_id, payload, session_id, agent, bool(item.get("park", False))))
        if len({r[0] for r in rows}) != len(rows):
            raise UserError("submit_many got one run_id twice", hint="give each run its own id")
        if not rows:
            return []
        if not self.is_postgres:
            return [
                await self._submit_local(
                    r["run_id"], r["input"], r.get("session_id"), r.get("agent")
                )
                for r in runs
            ]
        await self._ensure_schema()
        return await self._pg.submit(rows, conn)

    def _checked(self, run_id: str, input: Any, session_id: str | None, agent: str | None) -> str:
        """The run's input as JSON, once its ids and agent are checked."""
        validate_id(run_id, "run_id")
        if session_id is not None:
            validate_id(session_id, "session_id")
        if agent is not None:
            self._agent(agent)  # an unknown agent fails here, not in a worker
        try:
            return json.dumps(input)
        except (TypeError, ValueError) as exc:
            raise UserError(
                f"a queued run's input must be JSON: {exc}",
                hint="pass the input as text (or JSON-safe data)",
            ) from exc

    async def _submit_local(
        self, run_id: str, input: Any, session_id: str | None, agent: str | None
    ) -> int | None:
        if self._stores is None:
            self._stores = open_stores(
                self.db, table_prefix=self.table_prefix, max_size=self.pool_size
            )
        if await self._stores[1].load(run_id) is not None:
            return None
        task = asyncio.ensure_future(self._drive(run_id, input, session_id, agent, False))
        self._local.add(task)
        task.add_done_callback(self._local.discard)
        return None

    async def cancel(self, run_id: str) -> bool:
        """Cancel ``run_id``'s job: a queued job is dropped, a running one is interrupted
        (its checkpoint keeps the steps done). False when the run has no job to cancel."""
        validate_id(run_id, "run_id")
        self._require_postgres("cancel")
        await self._ensure_schema()
        return await self._pg.cancel(run_id)

    async def state(self, run_id: str) -> dict[str, Any] | None:
        """The run's queue row: ``state`` (queued, running, retrying, awaiting_approval,
        completed, failed, cancelled), ``attempts``, ``result``, ``worker``, times."""
        validate_id(run_id, "run_id")
        if not self.is_postgres:
            return await self._local_state(run_id)
        await self._ensure_schema()
        return await self._pg.read_state(run_id)

    async def _local_state(self, run_id: str) -> dict[str, Any] | None:
        if self._stores is None:
            self._stores = open_stores(
                self.db, table_prefix=self.table_prefix, max_size=self.pool_size
            )
        snap = await self._stores[1].load(run_id)
        if snap is None:
            return None
        state = {"running": "running", "interrupted": "awaiting_approval"}.get(
            snap.status, snap.status
        )
        if snap.status == "interrupted" and not snap.pending_approvals:
            state = "running"
        return {"run_id": run_id, "state": state, "attempts": 1, "result": None}

    # -- approvals --------------------------------------------------------------------------

    async def decide(
        self, run_id: str, decisions: dict[str, bool], reason: str | None = None
    ) -> int | None:
        """Record decisions for a parked run (``{call_id: True | False}``) and queue its
        resumption once no pending call is undecided. Returns the job id, or ``None`` when
        nothing was queued (calls still wait, or that resumption is queued already).

        Deciding is idempotent: the same decisions again record nothing new and queue the
        resumption if it is not queued yet, so a caller that crashed in between repeats the
        call."""
        validate_id(run_id, "run_id")
        self._require_postgres("decide")
        await self._ensure_schema()
        opened: tuple[Any, Any] | None = None
        if self._stores is None:
            opened = open_stores(self.db, table_prefix=self.table_prefix, max_size=self.pool_size)
        stores = opened or self._stores
        assert stores is not None
        queued: list[int | None] = []
        then = self.resumption(run_id, queued)
        try:  # the decisions and the resumption's job commit together
            await decide_holding(stores[1], run_id, decisions, reason, take_lease=True, then=then)
            snap = await stores[1].load(run_id)
        finally:
            if opened is not None:
                for store in opened:
                    await store.close()
        if queued:  # queued with the decisions
            return queued[-1]
        return await self._queue_resume(run_id, snap)  # decided before: queued at most once

    async def resume(self, run_id: str) -> int | None:
        """Queue the resumption of a parked run whose calls are all decided (the decisions
        recorded by someone else, a web server say); ``None`` when nothing was queued."""
        validate_id(run_id, "run_id")
        self._require_postgres("resume")
        await self._ensure_schema()
        if self._stores is None:
            self._stores = open_stores(
                self.db, table_prefix=self.table_prefix, max_size=self.pool_size
            )
        return await self._queue_resume(run_id, await self._stores[1].load(run_id))

    def resumption(
        self, run_id: str, queued: list[int | None] | None = None
    ) -> Callable[[Any, Any], Awaitable[None]]:
        """``then`` for ``lovia.approvals.decide_holding``: queues the run's resumption in the
        decision's own transaction once no call waits undecided, so a crash leaves the
        decision and its job both or neither (the web server's approvals use it). The job's
        id (``None``: queued already) is appended to ``queued``."""

        async def then(conn: Any, head: Any) -> None:
            marker = resume_marker(head)
            if marker is not None:
                await self._ensure_schema()
                job = await self._pg.queue_resume(run_id, marker, conn)
                if queued is not None:
                    queued.append(job)

        return then

    async def _queue_resume(self, run_id: str, snap: Any) -> int | None:
        marker = None if snap is None else resume_marker(snap.head)
        if marker is None:
            return None
        return await self._pg.queue_resume(run_id, marker)


def resume_marker(head: Any) -> str | None:
    """The key of a parked run's resumption once every call it waits for is decided (the
    same for every caller, so it is queued once), else ``None``."""
    if head.status != "interrupted" or not head.pending_approvals:
        return None
    if any(p.decision is None for p in head.pending_approvals):
        return None
    calls = sorted(f"{p.call_id}/{p.digest}" for p in head.pending_approvals)
    parked = f"{head.turns}:" + ",".join(calls)
    return hashlib.sha256(parked.encode()).hexdigest()[:16]
