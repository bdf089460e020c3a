"""``lovia.workers``' base: the queue's options and stores, the job body, the worker loop
and the recovery of stalled jobs (see ``lovia.workers`` for the whole story).

Driver-free like ``lovia.workers``: the SQL, psycopg and procrastinate are in
``lovia.stores.pg_queue``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Mapping
from functools import partial
from typing import Any

from ._queue_deltas import DeltaSender
from ._run.persist import segment_meta
from ._run.resume import reachable_agents
from ._run.runner import Runner
from .agent import Agent
from .errors import ApprovalPending, RunBusy, SessionConflict, UserError
from .events import ApprovalRequired
from .stores.checkpoint import validate_id
from .stores.lease import check_lease_args
from .stores.open import is_postgres_url, open_stores
from .stores.pg_deltas import send_notices
from .stores.pg_queue import PgRunQueue
from .stores.run_lease import RELEASED_LATER, LeaseHandOff, holder_is_dead
from .stores.run_options import INPUT_KEPT, CheckpointOptions

log = logging.getLogger("lovia.workers")

JOB_NAME = "lovia_run"
"""The procrastinate task name of agent runs."""

CHANNEL = "lovia_queue_runs"
"""The LISTEN/NOTIFY channel a run's state changes are announced on (payload: prefix/run)."""

_STEPS = frozenset({"message_completed", "tool_call_completed"})
"""Events emitted once their step is saved: a parked run's worker announces each."""


class QueueWorker:
    """``AgentQueue``'s options, stores and lifecycle, the job a worker runs, the worker
    loop and the recovery of stalled jobs."""

    def __init__(
        self,
        agents: Agent | Mapping[str, Agent],
        db: str,
        *,
        table_prefix: str = "lovia_",
        queue_name: str = "lovia",
        lease_ttl: float = 10.0,
        busy_retry_after: float = 30.0,
        max_turns: int = 50,
        max_attempts: int = 5,
        pool_size: int = 8,
    ) -> None:
        self.agents = _agents_by_name(agents)
        self.db = db
        self.table_prefix = table_prefix
        validate_id(queue_name, "queue_name")
        self.queue_name = queue_name
        self.lease_ttl = lease_ttl
        self.busy_retry_after = busy_retry_after
        self.max_turns = max_turns
        check_lease_args("run", "worker", lease_ttl)  # bad options fail here, not per job
        check_lease_args("run", "worker", busy_retry_after)
        if not isinstance(max_attempts, int) or max_attempts < 1:
            raise UserError(
                f"max_attempts must be a positive int, got {max_attempts!r}",
                hint="max_attempts=5 tries a failing job five times in all",
            )
        self.max_attempts = max_attempts
        if not isinstance(pool_size, int) or pool_size < 1:
            raise UserError(f"pool_size must be a positive int, got {pool_size!r}")
        self.pool_size = pool_size
        self._stores: tuple[Any, Any] | None = None
        self._pg_queue: PgRunQueue | None = None
        self._local: set[asyncio.Task[Any]] = set()
        self._worker: Any = None

    @property
    def is_postgres(self) -> bool:
        return is_postgres_url(self.db)

    @property
    def _pg(self) -> PgRunQueue:
        """The runs table and procrastinate's jobs, built on first use (``lovia worker``
        sets ``db`` on the queue it loads)."""
        if self._pg_queue is None:
            self._pg_queue = PgRunQueue(
                self.db,
                table_prefix=self.table_prefix,
                queue_name=self.queue_name,
                job_name=JOB_NAME,
                channel=CHANNEL,
                pool_size=self.pool_size,
                job=self.run,
                retry_after=self._retry_after,
            )
        return self._pg_queue

    @property
    def runs_table(self) -> str:
        return f'"{self.table_prefix}queue_runs"'

    # -- lifecycle --------------------------------------------------------------------------

    async def startup(self, ctx: Any = None) -> None:
        """Open the stores (once per process) and, on PostgreSQL, the queue's tables."""
        if self._stores is None:
            self._stores = open_stores(
                self.db, table_prefix=self.table_prefix, max_size=self.pool_size
            )
        if self.is_postgres:
            await self._ensure_schema()
            await self._pg.open()

    async def shutdown(self, ctx: Any = None) -> None:
        for task in list(self._local):
            await asyncio.gather(task, return_exceptions=True)
        stores, self._stores = self._stores, None
        if stores is not None:
            for store in stores:
                await store.close()
        if self._pg_queue is not None:
            await self._pg_queue.close()

    @property
    def app(self) -> Any:
        """The procrastinate ``App`` of this queue (its one task is the agent run)."""
        self._require_postgres("a worker")
        return self._pg.app

    async def _ensure_schema(self) -> None:
        await self._pg.ensure_schema()

    def _retry_after(self, exc: BaseException, attempts: int) -> float | None:
        """A run another worker holds, or one handed back by a shutdown, waits its turn
        without using up an attempt's worth of patience; other failures back off."""
        if isinstance(exc, RunBusy):
            return self.busy_retry_after
        if isinstance(exc, asyncio.CancelledError):
            return 0.0
        if isinstance(exc, UserError) or attempts + 1 >= self.max_attempts:
            return None  # a UserError: a retry would fail the same way
        return float(2**attempts)

    def _require_postgres(self, what: str) -> None:
        if not self.is_postgres:
            raise UserError(
                f"{what} needs a postgresql:// database, got a SQLite path",
                hint="with SQLite, runs go in-process: queue.submit() runs them in this process",
            )

    # -- the job ----------------------------------------------------------------------------

    async def run(self, ctx: Any, run_id: str, resume_only: bool = False) -> dict[str, Any]:
        """The job body: run (or resume, or replay) ``run_id``; returns a JSON-safe summary."""
        validate_id(run_id, "run_id")
        if self._stores is None:
            await self.startup(ctx)
        job = getattr(ctx, "job", None)
        job_id = getattr(job, "id", None)
        row = self._pg.started_row(job_id) if job_id is not None else None
        if row is None:  # not started by its fetch (a job run by hand, a row written late)
            row = await self._pg.start_row(run_id, f"{socket.gethostname()}/{os.getpid()}")
        if row is None:
            raise UserError(f"queued run {run_id!r} has no row in {self.runs_table}")
        input, session_id, agent, attempts, park = row[:5]
        final = "failed"
        summary: dict[str, Any] = {"run_id": run_id, "status": "failed"}
        returned = False
        # the run's lease is given up in the statement that records its end, next
        handoff = LeaseHandOff()
        RELEASED_LATER.set(handoff)
        try:
            summary = await self._drive(run_id, input, session_id, agent, resume_only, park)
            summary["job_try"] = attempts
            final = summary["status"]
            returned = True
            return summary
        except RunBusy:
            final = "queued"
            raise
        except asyncio.CancelledError:
            final = "queued"  # a shutdown hands it back; a cancel() already said so
            raise
        except Exception as exc:
            tries = (job.attempts + 1) if job is not None else attempts
            last = isinstance(exc, UserError) or tries >= self.max_attempts  # as Retries says
            final = "failed" if last else "retrying"
            summary = {"run_id": run_id, "status": final, "error": repr(exc)[:500]}
            raise
        finally:
            RELEASED_LATER.set(None)
            owner = handoff.owners.pop(run_id, None)
            if returned and job_id is not None:  # recorded with the job's end, next
                self._pg.finish_with_job(job_id, run_id, final, summary, owner)
            else:
                await asyncio.shield(self._pg.finish(run_id, final, summary, owner))

    async def _drive(
        self,
        run_id: str,
        input: Any,
        session_id: str | None,
        agent: str | None,
        resume_only: bool,
        park: bool = False,
    ) -> dict[str, Any]:
        if self._stores is None:
            self._stores = open_stores(
                self.db, table_prefix=self.table_prefix, max_size=self.pool_size
            )
        session, checkpointer = self._stores
        options = CheckpointOptions(
            checkpointer,
            run_id,
            lease_ttl=self.lease_ttl,
            on_busy="wait",
            if_run_exists="resume_only" if resume_only else "resume",
            wait_timeout=self.busy_retry_after,
        )

        async def drive() -> Any:
            kwargs: dict[str, Any] = {
                "session": session if session_id is not None else None,
                "session_id": session_id,
                "checkpoint": options,
                "max_turns": self.max_turns,
            }
            entry = self._agent(agent)
            if not park:
                # the job's row keeps the input, and a retry starts the run from it: the
                # run's first save goes with its first turn (no one watches it meanwhile)
                kept = INPUT_KEPT.set(True)
                try:
                    return await Runner.run(entry, [] if resume_only else input, **kwargs)
                finally:
                    INPUT_KEPT.reset(kept)
            # a person watches (a chat's page): a call that needs approval parks the run, and
            # each saved step is announced, so the page shows it at once
            handle = Runner.stream(entry, [] if resume_only else input, **kwargs)
            deltas = DeltaSender(self.table_prefix + run_id, partial(send_notices, self._pg))
            try:
                async for event in handle:
                    if isinstance(event, ApprovalRequired):
                        asker = reachable_agents(entry).get(event.agent_name or entry.name)
                        if asker is None or asker.approval_handler is None:
                            event.defer()
                    elif event.type in _STEPS and self.is_postgres:
                        await deltas.flush()  # the turn's tokens before the turn
                        await self._pg.step_notice(run_id)
                    elif self.is_postgres:
                        deltas.see(event)  # text deltas, as the page shows them
            finally:
                await deltas.close()
            return await handle.result()

        try:
            result = await drive()
        except ApprovalPending as exc:
            log.info("run %s awaits approval of %s", run_id, [c.id for c in exc.calls])
            return {
                "run_id": run_id,
                "status": "awaiting_approval",
                "pending": [c.id for c in exc.calls],
                "output": None,
                "replayed": False,
                "turns": None,
            }
        except SessionConflict as exc:
            assert session_id is not None
            log.warning("run %s: keeping both runs of session %s: %s", run_id, session_id, exc)
            await _keep_both(checkpointer, session, run_id, session_id)
            result = await drive()  # a replay now: the run is in the session
        output = result.output
        if not isinstance(output, (str, int, float, bool, type(None), list, dict)):
            output = str(output)
        return {
            "run_id": result.run_id,
            "status": "completed",
            "output": output,
            "replayed": result.replayed,
            "turns": result.turns,
            "started_at": result.started_at,  # the timing its segment records
            "finished_at": result.finished_at,
        }

    # -- recovery ---------------------------------------------------------------------------

    async def recover_stalled(self) -> list[str]:
        """Hand back the jobs no live worker drives, once their run's lease has expired or
        its holder (on this host) is dead; returns the run ids handed back. A job is a
        candidate when its worker stopped its heartbeat (SIGKILL, a lost host), or when it
        has been running for ``3 * lease_ttl`` seconds (a worker whose connection dropped as
        it recorded the job's end leaves it running for ever). Every worker calls this every
        ``lease_ttl / 2`` seconds; a run still alive holds its lease and is left alone."""
        self._require_postgres("recovery")
        candidates = await self._pg.stalled_jobs(self.lease_ttl)
        assert self._stores is not None
        checkpointer = self._stores[1]
        handed: list[str] = []
        for job_id, run_id in candidates.items():
            holder = await checkpointer.lease_holder(run_id) if run_id else None
            if holder is not None and not holder_is_dead(holder):
                continue  # its worker may be slow, not dead: the lease says it is alive
            try:
                await self._pg.retry_now(job_id)
            except Exception as exc:  # finished or handed back meanwhile
                log.info("run %s: job %s not handed back: %s", run_id, job_id, exc)
                continue
            log.warning("run %s: no live worker drives it; handed back to the queue", run_id)
            handed.append(run_id)
        return handed

    # -- workers ----------------------------------------------------------------------------

    async def run_worker(
        self,
        *,
        concurrency: int = 4,
        graceful_timeout: float = 30.0,
        install_signal_handlers: bool = True,
        wait: bool = True,
        poll_interval: float = 1.0,
    ) -> None:
        """Run a worker in this process until it is stopped (SIGTERM/SIGINT when
        ``install_signal_handlers``), or, with ``wait=False``, until the queue is empty."""
        self._require_postgres("a worker")
        await self.startup()
        worker = self._pg.worker(  # procrastinate's own Worker, kept to stop it
            concurrency=concurrency,
            wait=wait,
            fetch_job_polling_interval=poll_interval,
            shutdown_graceful_timeout=graceful_timeout,
            install_signal_handlers=install_signal_handlers,
            update_heartbeat_interval=max(self.lease_ttl / 3, 0.2),
            stalled_worker_timeout=max(self.lease_ttl * 3, 1.0),
            name=f"lovia-{os.getpid()}",
        )
        self._worker = worker
        sweeper = asyncio.ensure_future(self._sweep()) if wait else None
        try:
            await worker.run()
        finally:
            if sweeper is not None:
                sweeper.cancel()
                await asyncio.gather(sweeper, return_exceptions=True)

    def stop_worker(self) -> None:
        """Ask the worker started by ``run_worker`` to stop as on SIGTERM."""
        worker = getattr(self, "_worker", None)
        if worker is not None:
            worker.stop()

    async def _sweep(self) -> None:
        while True:
            await asyncio.sleep(max(self.lease_ttl / 2, 0.1))
            try:
                await self.recover_stalled()
                await self._pg.refresh_job_stats()
            except Exception as exc:  # the database away: try again next time
                log.info("recovery sweep failed: %s", exc)

    def _agent(self, name: str | None) -> Agent:
        if name is None:
            return next(iter(self.agents.values()))
        found = self.agents.get(name)
        if found is None:
            raise UserError(
                f"this queue has no agent {name!r}",
                hint=f"use one of {', '.join(self.agents)}",
            )
        return found


async def _keep_both(checkpointer: Any, session: Any, run_id: str, session_id: str) -> None:
    """Append a finished run whose session moved on, without the version check. Such a run
    ends ``failed`` with the conflict (its answer complete in the checkpoint); resuming it
    afterwards finishes it, and its own append is then a no-op (idempotent by run id)."""
    handoff = RELEASED_LATER.get()
    if handoff is not None:  # the lease of the run's first drive: free for the replay's own
        await handoff.flush(checkpointer)
    snap = await checkpointer.load(run_id)
    conflicted = snap is not None and (snap.error or {}).get("type") == "SessionConflict"
    if snap is None or (snap.status != "completed" and not conflicted):
        return
    meta = segment_meta(snap.context_state or {}, (snap.started_at, snap.updated_at))
    await session.append(session_id, snap.entries, run_id=run_id, meta=meta)


def _agents_by_name(agents: Agent | Mapping[str, Agent]) -> dict[str, Agent]:
    if isinstance(agents, Agent):
        return {agents.name: agents}
    if (
        isinstance(agents, Mapping)
        and agents
        and all(isinstance(a, Agent) for a in agents.values())
    ):
        return dict(agents)
    raise UserError(
        "AgentQueue needs an Agent or a non-empty {name: agent} mapping",
        hint="pass AgentQueue(agent, db) or AgentQueue({'support': agent}, db)",
    )
