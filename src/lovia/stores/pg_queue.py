"""The PostgreSQL side of ``lovia.workers``: the runs table, its statements and procrastinate.

One method per statement or transaction; ``lovia.workers`` decides what to run and when, and
this module alone speaks to psycopg and procrastinate for it. The drivers load on first use,
so importing ``lovia.workers`` with a SQLite path needs neither.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from .pg_jobs import CANCEL_JOB, JOBS_LOCK_INDEX, LONG_RUNNING, finish_run, refresh_job_stats
from .pg_notices import Notices, Subscription

__all__ = ["PgRunQueue"]

log = logging.getLogger("lovia.workers")

_RUNS_DDL = """CREATE TABLE IF NOT EXISTS {t} (
    run_id text PRIMARY KEY,
    input jsonb NOT NULL,
    session_id text,
    agent text,
    queue_name text NOT NULL,
    state text NOT NULL DEFAULT 'queued',
    attempts integer NOT NULL DEFAULT 0,
    job_id bigint,
    result jsonb,
    worker text,
    submitted_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    started_at timestamptz,
    updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
ALTER TABLE {t} ADD COLUMN IF NOT EXISTS park boolean NOT NULL DEFAULT false"""

# new runs' rows and their jobs (with their ids on the rows) and a notification per run, in
# one statement: the submit's only round trip before its commit. The jobs are inserted as
# procrastinate_defer_jobs_v1 does (its triggers notify the workers and log the event), with
# ids drawn first from the jobs' own sequence, in the runs' order, so each row is written
# with its job's id; a run submitted before (a conflict) gets no job and its drawn id is
# left unused. Two statements before (the rows, then the jobs): one more round trip between
# a run's submit and its commit, the wait its enqueue-to-start time counted
_SUBMIT_RUNS = (
    "WITH x AS (SELECT r, i, s, a, p, nextval(pg_get_serial_sequence('procrastinate_jobs', "
    "'id')) AS id FROM (SELECT * FROM unnest(%(runs)s::text[], %(inputs)s::text[], "
    "%(sessions)s::text[], %(agents)s::text[], %(parks)s::bool[]) WITH ORDINALITY "
    "AS y(r, i, s, a, p, n) ORDER BY n) z), "
    "ins AS (INSERT INTO {t} (run_id, input, session_id, agent, queue_name, park, job_id) "
    "SELECT r, i::jsonb, s, a, %(queue)s, p, id FROM x ORDER BY id "
    "ON CONFLICT (run_id) DO NOTHING RETURNING run_id, job_id), "
    "j AS (INSERT INTO procrastinate_jobs (id, queue_name, task_name, priority, lock, "
    "queueing_lock, args) SELECT job_id, %(queue)s, %(task)s, 0, %(lock)s || run_id, "
    "%(lock)s || run_id, jsonb_build_object('run_id', run_id, 'resume_only', false) "
    "FROM ins ORDER BY job_id RETURNING id), "
    "n AS (SELECT pg_notify(%(channel)s, %(prefix)s || run_id) FROM ins) "
    "SELECT ins.run_id, ins.job_id, (SELECT count(*) FROM j), (SELECT count(*) FROM n) "
    "FROM ins"
)

_DEFER = (
    "SELECT (procrastinate_defer_jobs_v1(ARRAY[ROW(%s, %s, 0, %s, %s, %s::jsonb, NULL)"
    "::procrastinate_job_to_defer_v1]))[1]"
)

_STATE_COLUMNS = (
    "state",
    "attempts",
    "result",
    "worker",
    "submitted_at",
    "started_at",
    "updated_at",
)

RunRow = tuple[str, str, "str | None", "str | None", bool]
"""A run to queue: run id, its input as JSON, session id, agent name, park."""

RetryAfter = Callable[[BaseException, int], "float | None"]
"""Seconds a failed job waits before its retry (given the error and the attempts made so
far), or ``None`` for no retry."""

JobBody = Callable[[Any, str, bool], Awaitable[dict[str, Any]]]
"""The job: ``(context, run_id, resume_only)`` to a JSON-safe summary."""


class PgRunQueue:
    """The runs table ``<table_prefix>queue_runs`` and procrastinate's jobs in ``db``."""

    def __init__(
        self,
        db: str,
        *,
        table_prefix: str,
        queue_name: str,
        job_name: str,
        channel: str,
        pool_size: int,
        job: JobBody,
        retry_after: RetryAfter,
    ) -> None:
        self.db = db
        self.table_prefix = table_prefix
        self.leases_table = f'"{table_prefix}run_leases"'  # PostgresCheckpointer's, same prefix
        self.queue_name = queue_name
        self.job_name = job_name
        self.channel = channel
        self.pool_size = pool_size
        self._job = job
        self._retry_after = retry_after
        self._app: Any = None
        self._ready = False
        self._notices = Notices(lambda: self._connect(autocommit=True), channel)

    @property
    def runs_table(self) -> str:
        return f'"{self.table_prefix}queue_runs"'

    def _lock(self, run_id: str) -> str:
        return f"lovia:{self.table_prefix}{run_id}"

    async def _connect(self, *, autocommit: bool = False) -> Any:
        import psycopg

        return await psycopg.AsyncConnection.connect(self.db, autocommit=autocommit)

    # -- lifecycle --------------------------------------------------------------------------

    @property
    def app(self) -> Any:
        """The procrastinate ``App`` (its one task is the job), built on first use."""
        if self._app is None:
            self._app = self._build_app()
        return self._app

    async def open(self) -> None:
        if not self.app.connector._async_pool:
            await self.app.open_async()

    async def close(self) -> None:
        await self._notices.close()
        if self._app is not None and self._app.connector._async_pool:
            await self._app.close_async()

    async def ensure_schema(self) -> None:
        """procrastinate's tables (when missing) and the runs table, once per process."""
        if self._ready:
            return
        async with await self._connect(autocommit=True) as conn:
            # one process at a time creates the tables (several workers start together)
            await conn.execute("SELECT pg_advisory_lock(hashtext('lovia queue schema'))")
            try:
                cur = await conn.execute("SELECT to_regclass('procrastinate_jobs')")
                row = await cur.fetchone()
                if row is None or row[0] is None:
                    from procrastinate.schema import SchemaManager

                    await conn.execute(SchemaManager.get_schema())
                await conn.execute(_RUNS_DDL.format(t=self.runs_table))
                await conn.execute(JOBS_LOCK_INDEX)
            finally:
                await conn.execute("SELECT pg_advisory_unlock(hashtext('lovia queue schema'))")
        self._ready = True

    # -- producing --------------------------------------------------------------------------

    async def submit(self, rows: list[RunRow], conn: Any = None) -> list[int | None]:
        """Queue the runs in one transaction, ``conn``'s (an open ``psycopg.AsyncConnection``)
        or one of its own; each run's job id, ``None`` for one submitted before."""
        if conn is not None:
            return await self._insert_many(conn, rows)
        async with await self._connect() as own:
            async with own.transaction():
                return await self._insert_many(own, rows)

    async def _insert_many(self, conn: Any, rows: list[RunRow]) -> list[int | None]:
        """Write the runs' rows, the jobs of the new ones and their notifications: one
        statement, however many runs (``_SUBMIT_RUNS``)."""
        runs, inputs, sessions, agents, parks = (list(c) for c in zip(*rows, strict=True))
        cur = await conn.execute(
            _SUBMIT_RUNS.format(t=self.runs_table),
            {
                "runs": runs,
                "inputs": inputs,
                "sessions": sessions,
                "agents": agents,
                "parks": parks,
                "queue": self.queue_name,
                "task": self.job_name,
                "lock": self._lock(""),
                "channel": self.channel,
                "prefix": self.table_prefix,
            },
        )
        by_run = {str(r[0]): int(r[1]) for r in await cur.fetchall()}
        return [by_run.get(r[0]) for r in rows]  # None: submitted before

    async def queue_resume(self, run_id: str, marker: str, conn: Any = None) -> int | None:
        """Queue the resumption ``marker`` names, unless it is queued already (``None``), in
        ``conn``'s transaction (the decision's) or one of its own."""
        if conn is None:
            async with await self._connect() as own:
                async with own.transaction():
                    return await self.queue_resume(run_id, marker, own)
        cur = await conn.execute(
            f"UPDATE {self.runs_table} SET state = 'queued', result = "
            "jsonb_build_object('resumes', %s::text), updated_at = clock_timestamp() "
            "WHERE run_id = %s AND result->>'resumes' IS DISTINCT FROM %s::text "
            "RETURNING run_id",
            (marker, run_id, marker),
        )
        if await cur.fetchone() is None:
            return None  # this resumption is queued already
        lock = self._lock(run_id)
        args = json.dumps({"run_id": run_id, "resume_only": True})
        cur = await conn.execute(_DEFER, (self.queue_name, self.job_name, lock, lock, args))
        row = await cur.fetchone()
        await self._notify(conn, run_id)
        return int(row[0])

    async def cancel(self, run_id: str) -> bool:
        """Drop the run's queued job or ask its running one to abort, and mark the run
        cancelled; False when it has no job to cancel."""
        async with await self._connect() as conn:
            async with conn.transaction():
                cur = await conn.execute(CANCEL_JOB, (self._lock(run_id),))
                hit = await cur.fetchall()
                if hit:
                    await conn.execute(
                        f"UPDATE {self.runs_table} SET state = 'cancelled', "
                        "updated_at = clock_timestamp() WHERE run_id = %s",
                        (run_id,),
                    )
                    await self._notify(conn, run_id)
        return bool(hit)

    async def _notify(self, conn: Any, run_id: str) -> None:
        await conn.execute("SELECT pg_notify(%s, %s)", (self.channel, self.table_prefix + run_id))

    # -- following --------------------------------------------------------------------------

    async def read_state(self, run_id: str, conn: Any = None) -> dict[str, Any] | None:
        """The run's row as a dict: on the queue's pool when it is open (a worker, a web
        server that started the queue), else on the connection followers share."""
        query = f"SELECT {', '.join(_STATE_COLUMNS)} FROM {self.runs_table} WHERE run_id = %s"
        if self._app is not None and self._app.connector._async_pool:
            async with self._app.connector.pool.connection() as pooled:
                cur = await pooled.execute(query, (run_id,))
                row = await cur.fetchone()
        else:
            row = await self._notices.read(query, (run_id,))
        if row is None:
            return None
        return {"run_id": run_id, **dict(zip(_STATE_COLUMNS, row, strict=True))}

    async def listen(self) -> Subscription | None:
        """A share of this process's LISTEN connection (one for all followers), or ``None``
        (polling only) when none opens; ``close()`` it when done."""
        return await self._notices.subscribe()

    @staticmethod
    def listening(listener: Subscription | None) -> bool:
        return listener is not None and not listener.closed

    async def wait_notice(self, listener: Subscription | None, run_id: str, wait: float) -> None:
        """Return once ``run_id``'s notice arrives on ``listener`` or ``wait`` seconds pass."""
        if listener is None:
            await asyncio.sleep(wait)
            return
        await listener.wait(self.table_prefix + run_id, wait)

    # -- the job ----------------------------------------------------------------------------

    async def start_row(self, run_id: str, worker: str) -> Any:
        """Mark the run running (and notify) in one statement; its row (input, session_id,
        agent, attempts, park). A pooled connection lent without a check (used within the
        last second) may have been cut meanwhile: the statement goes again on another one."""
        import psycopg

        for attempt in range(3):
            try:
                async with self.app.connector.pool.connection() as conn:
                    cur = await conn.execute(
                        f"WITH u AS (UPDATE {self.runs_table} SET state = 'running', "
                        "attempts = attempts + 1, worker = %s, "
                        "started_at = COALESCE(started_at, clock_timestamp()), "
                        "updated_at = clock_timestamp() WHERE run_id = %s "
                        "RETURNING input, session_id, agent, attempts, park) "
                        "SELECT u.*, pg_notify(%s, %s) FROM u",
                        (worker, run_id, self.channel, self.table_prefix + run_id),
                    )
                    return await cur.fetchone()
            except psycopg.OperationalError:
                if attempt == 2:
                    raise
                await asyncio.sleep(0.1 * (attempt + 1))
        return None

    def started_row(self, job_id: int) -> Any:
        """``start_row``'s row when the fetch of job ``job_id`` started its run, or ``None``."""
        return self.app.job_manager.started.pop(job_id, None)

    def finish_with_job(
        self, job_id: int, run_id: str, state: str, summary: dict[str, Any], owner: str | None
    ) -> None:
        """Record the run's end (as ``finish``) in the statement that finishes its job, which
        the worker sends as soon as the job returns."""
        self.app.job_manager.ending[job_id] = (run_id, state, summary, owner)

    async def step_notice(self, run_id: str) -> None:
        """Tell followers a step of ``run_id`` was saved (its checkpoint has it already)."""
        try:
            async with self.app.connector.pool.connection() as conn:
                await self._notify(conn, run_id)
        except Exception as exc:  # followers poll as well: a lost notice only delays them
            log.info("run %s: step notice not sent: %s", run_id, exc)

    async def finish(
        self, run_id: str, state: str, summary: dict[str, Any], owner: str | None = None
    ) -> None:
        """Record the run's end (a cancelled run stays cancelled) and notify; give up the
        run's lease of ``owner`` too."""
        import psycopg

        query = finish_run(self.runs_table, self.leases_table if owner is not None else None)
        params = {
            "state": state,
            "result": json.dumps(summary, default=str),
            "run_id": run_id,
            "channel": self.channel,
            "prefix": self.table_prefix,
            "owner": owner,
        }
        for attempt in range(3):  # a dropped connection: the pool hands out a fresh one
            try:
                async with self.app.connector.pool.connection() as conn:
                    await conn.execute(query, params)
                return
            except psycopg.Error as exc:  # the checkpoint holds the truth; a retry catches up
                log.warning("run %s: could not record state %s: %s", run_id, state, exc)
                await asyncio.sleep(0.2 * (attempt + 1))

    # -- recovery and workers ---------------------------------------------------------------

    async def stalled_jobs(self, lease_ttl: float) -> dict[int, str]:
        """``{job_id: run_id}`` of the jobs whose worker stopped its heartbeat for
        ``lease_ttl`` seconds, or that have been running for ``3 * lease_ttl``."""
        app = self.app
        stalled = await app.job_manager.get_stalled_jobs(
            queue=self.queue_name, task_name=self.job_name, seconds_since_heartbeat=lease_ttl
        )
        candidates = {int(job.id): str(job.task_kwargs.get("run_id", "")) for job in stalled}
        async with app.connector.pool.connection() as conn:
            cur = await conn.execute(LONG_RUNNING, (self.queue_name, self.job_name, 3 * lease_ttl))
            for job_id, run_id in await cur.fetchall():
                candidates[int(job_id)] = str(run_id or "")
        return candidates

    async def refresh_job_stats(self) -> None:
        """ANALYZE procrastinate's jobs table when it changed enough (see ``pg_jobs``)."""
        await refresh_job_stats(self.app.connector.pool)

    async def retry_now(self, job_id: int) -> None:
        """Hand ``job_id`` back to the queue (raises when it finished meanwhile)."""
        await self.app.job_manager.retry_job_by_id_async(
            job_id=job_id, retry_at=datetime.datetime.now(datetime.timezone.utc)
        )

    def worker(self, **options: Any) -> Any:
        """procrastinate's own ``Worker`` on this queue (``run()`` it, ``stop()`` it)."""
        return self.app._worker(queues=[self.queue_name], **options)

    def _build_app(self) -> Any:
        import procrastinate
        from procrastinate.retry import BaseRetryStrategy, RetryDecision

        retry_after = self._retry_after

        class Retries(BaseRetryStrategy):
            """A job aborted (``cancel``) or handed back waits no longer; others as
            ``retry_after`` says."""

            def get_retry_decision(self, *, exception: BaseException, job: Any) -> RetryDecision:
                now = datetime.datetime.now(datetime.timezone.utc)
                if isinstance(exception, procrastinate.exceptions.JobAborted):
                    return RetryDecision(retry_at=now)
                wait = retry_after(exception, job.attempts)
                if wait is None:
                    return None  # type: ignore[return-value]
                return RetryDecision(retry_at=now + datetime.timedelta(seconds=wait))

        from .pg_jobs import run_job_manager
        from .pg_pools import recently_checked_pool

        connector = procrastinate.PsycopgConnector(
            conninfo=self.db,
            min_size=1,
            max_size=self.pool_size,
            pool_factory=recently_checked_pool,  # checks a connection that idled over 1 s
            # each of procrastinate's statements (one function call) and each of ours is a
            # transaction of its own: autocommit spares a BEGIN and a COMMIT round trip each
            configure=_autocommit,
        )
        app = procrastinate.App(connector=connector)
        # a job's fetch starts its run, and a run that ended well is recorded with its job's end
        app.job_manager = run_job_manager(
            connector,
            runs_table=self.runs_table,
            task_name=self.job_name,
            channel=self.channel,
            prefix=self.table_prefix,
            leases=self.leases_table,
        )
        body = self._job

        async def lovia_run(context: Any, run_id: str, resume_only: bool = False) -> dict[str, Any]:
            return await body(context, run_id, resume_only)

        app.task(name=self.job_name, pass_context=True, retry=Retries())(lovia_run)
        return app


async def _autocommit(conn: Any) -> None:
    await conn.set_autocommit(True)
