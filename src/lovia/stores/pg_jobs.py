"""procrastinate's job manager with a queued run's start and end in its own statements.

A worker fetches a job, then marks its run ``running``; it finishes the run, then the job.
Here each pair is one statement: the fetch marks the fetched job's run running (and
notifies its followers) as it takes the job, and a run that ended normally is recorded with
its job's end. That saves two round trips a run, and the one between a job's fetch and its
run's start. A run's start that found no row, and every end that is not a job's normal
finish (a retry, a failure recorded before its retry), go as before, one statement each.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterable
from typing import Any

__all__ = [
    "CANCEL_JOB",
    "JOBS_LOCK_INDEX",
    "LONG_RUNNING",
    "finish_run",
    "refresh_job_stats",
    "run_job_manager",
    "with_release",
]

# a run's job dropped (waiting) or asked to abort (running)
CANCEL_JOB = (
    "UPDATE procrastinate_jobs SET status = CASE WHEN status = 'todo' "
    "THEN 'cancelled'::procrastinate_job_status ELSE status END, "
    "abort_requested = (status = 'doing') "
    "WHERE queueing_lock = %s AND status IN ('todo', 'doing') RETURNING id"
)

LONG_RUNNING = (
    "SELECT j.id, j.args->>'run_id' FROM procrastinate_jobs j "
    "WHERE j.status = 'doing' AND j.queue_name = %s AND j.task_name = %s "
    "AND (SELECT max(e.at) FROM procrastinate_events e WHERE e.job_id = j.id "
    "AND e.type = 'started') < now() - make_interval(secs => %s)"
)


JOBS_LOCK_INDEX = (
    "CREATE INDEX IF NOT EXISTS lovia_procrastinate_jobs_lock "
    "ON procrastinate_jobs (lock) WHERE status IN ('todo', 'doing')"
)
"""procrastinate's fetch looks, for each waiting job it considers, for another job with the
same lock (every run's job has one: its run id); its own index on ``lock`` covers running
jobs only, so without this one each look scans an index of every waiting job, and a fetch
from a queue of N waiting runs costs O(N^2) until the planner's statistics catch up."""

REFRESH_JOB_STATS = (
    "SELECT n_mod_since_analyze > 50 + n_live_tup / 10 FROM pg_stat_user_tables "
    "WHERE relid = to_regclass('procrastinate_jobs')"
)
"""Whether the jobs table changed enough since its last ANALYZE for autovacuum to analyze it
(its default thresholds): a worker's sweep then does so itself, so a burst of submitted runs
is fetched with a plan that knows the burst even where autovacuum is off or late (a fetch
planned for an empty table considers every waiting job)."""

_JOB_COLUMNS = (
    "id",
    "status",
    "task_name",
    "priority",
    "lock",
    "queueing_lock",
    "args",
    "scheduled_at",
    "queue_name",
    "attempts",
    "worker_id",
)

_NO_FLUSH_WAIT = "a AS (SELECT set_config('synchronous_commit', 'off', true))"
"""A CTE that lets its statement (its own transaction) commit without waiting for the WAL's
flush: for a job's fetch and end, which hold the database's NOTIFY lock (taken by every
commit that notifies, and held through that commit's flush) and so would queue every
worker's fetches and ends behind one another's flushes. Nothing is lost for it: the
run's next durable commit (its lease, its saves, a tool's call before the tool runs)
flushes the WAL up to it; a server crash before that undoes only the fetch (the job is
fetched again and the run starts again, nothing of it saved) or the end (the job is
handed back, and replays the completed run: no model call, no tool)."""

_FETCH_AND_START = (
    "WITH j AS (SELECT " + ", ".join(_JOB_COLUMNS) + " FROM "
    "procrastinate_fetch_job_v2(%(queues)s::varchar[], %(worker_id)s)), "
    "u AS (UPDATE {runs} r SET state = 'running', attempts = r.attempts + 1, "
    "worker = %(worker)s, started_at = COALESCE(r.started_at, clock_timestamp()), "
    "updated_at = clock_timestamp() FROM j WHERE j.task_name = %(task)s "
    "AND r.run_id = j.args->>'run_id' "
    "RETURNING r.run_id, r.input, r.session_id, r.agent, r.attempts AS run_attempts, r.park), "
    "n AS (SELECT pg_notify(%(channel)s, %(prefix)s || u.run_id) FROM u), " + _NO_FLUSH_WAIT + " "
    "SELECT j.*, u.run_id, u.input, u.session_id, u.agent, u.run_attempts, u.park, "
    "(SELECT count(*) FROM n) AS notified, (SELECT count(*) FROM a) AS quick "
    "FROM j LEFT JOIN u ON true"
)

FINISH_RUN = (
    "WITH u AS (UPDATE {runs} SET state = CASE WHEN state = 'cancelled' THEN state "
    "ELSE %(state)s END, result = %(result)s::jsonb, updated_at = clock_timestamp() "
    "WHERE run_id = %(run_id)s RETURNING run_id) "
    "SELECT pg_notify(%(channel)s, %(prefix)s || run_id) FROM u"
)

_FINISH_WITH_RUN = (
    "WITH u AS (UPDATE {runs} SET state = CASE WHEN state = 'cancelled' THEN state "
    "ELSE %(state)s END, result = %(result)s::jsonb, updated_at = clock_timestamp() "
    "WHERE run_id = %(run_id)s RETURNING run_id), "
    "n AS (SELECT pg_notify(%(channel)s, %(prefix)s || run_id) FROM u), " + _NO_FLUSH_WAIT + " "
    "SELECT procrastinate_finish_job_v1(%(job_id)s, %(status)s, %(delete_job)s), "
    "(SELECT count(*) FROM n), (SELECT count(*) FROM a)"
)

# the run's lease given up in the statement that records the run's end (its owner's only)
_RELEASE = (
    "WITH l AS (UPDATE {leases} SET expires_at = '-infinity' "
    "WHERE run_id = %(run_id)s AND owner = %(owner)s), "
)


def finish_run(runs: str, leases: str | None) -> str:
    """``FINISH_RUN`` on ``runs``, giving up the run's lease in ``leases`` too (if named)."""
    statement = FINISH_RUN.format(runs=runs)
    return statement if leases is None else with_release(statement, leases)


def with_release(statement: str, leases: str) -> str:
    """``statement`` (one of the run's end) that also gives up the run's lease in ``leases``
    (``%(owner)s``'s: a lease another worker took since is left alone)."""
    return _RELEASE.format(leases=leases) + statement.removeprefix("WITH ")


async def refresh_job_stats(pool: Any) -> None:
    """ANALYZE procrastinate's jobs table when it changed enough (``REFRESH_JOB_STATS``)."""
    async with pool.connection() as conn:
        cur = await conn.execute(REFRESH_JOB_STATS)
        row = await cur.fetchone()
        if row is not None and row[0]:
            await conn.execute("ANALYZE (SKIP_LOCKED) procrastinate_jobs")


def run_job_manager(
    connector: Any, *, runs_table: str, task_name: str, channel: str, prefix: str, leases: str
) -> Any:
    """A ``JobManager`` for ``connector`` whose fetch starts the job's run and whose finish
    ends it (see the module)."""
    from procrastinate import jobs
    from procrastinate.manager import JobManager

    fetch_sql = _FETCH_AND_START.format(runs=runs_table)
    finish_sql = _FINISH_WITH_RUN.format(runs=runs_table)
    finish_run_sql = FINISH_RUN.format(runs=runs_table)
    releasing = {
        finish_sql: with_release(finish_sql, leases),
        finish_run_sql: with_release(finish_run_sql, leases),
    }
    names = {"channel": channel, "prefix": prefix}

    class RunJobManager(JobManager):
        def __init__(self) -> None:
            super().__init__(connector)
            self.started: dict[int, tuple[Any, ...]] = {}
            self.ending: dict[int, tuple[str, str, dict[str, Any], str | None]] = {}

        async def fetch_job(self, queues: Iterable[str] | None, worker_id: int) -> Any:
            row = await self.connector.execute_query_one_async(
                query=fetch_sql,
                queues=queues,
                worker_id=worker_id,
                worker=f"{socket.gethostname()}/{os.getpid()}",
                task=task_name,
                **names,
            )
            if row["id"] is None:
                return None
            job = jobs.Job.from_row({k: row[k] for k in _JOB_COLUMNS})
            if row["run_id"] is not None:
                self.started[int(row["id"])] = (
                    row["input"],
                    row["session_id"],
                    row["agent"],
                    row["run_attempts"],
                    row["park"],
                )
            return job

        async def finish_job(self, job: Any, status: Any, delete_job: bool) -> None:
            self.started.pop(job.id, None)
            ending = self.ending.pop(job.id, None)
            if ending is None:
                await super().finish_job(job=job, status=status, delete_job=delete_job)
                return
            run_id, state, summary, owner = ending
            await self.connector.execute_query_async(
                query=finish_sql if owner is None else releasing[finish_sql],
                job_id=job.id,
                status=status.value,
                delete_job=delete_job,
                run_id=run_id,
                state=state,
                result=json.dumps(summary, default=str),
                owner=owner,
                **names,
            )

        async def retry_job(self, job: Any, *args: Any, **kwargs: Any) -> None:
            self.started.pop(job.id, None)
            ending = self.ending.pop(job.id, None)
            if ending is not None:  # not expected (a run that ended well is not retried)
                run_id, state, summary, owner = ending
                await self.connector.execute_query_async(
                    query=finish_run_sql if owner is None else releasing[finish_run_sql],
                    run_id=run_id,
                    state=state,
                    result=json.dumps(summary, default=str),
                    owner=owner,
                    **names,
                )
            await super().retry_job(job, *args, **kwargs)

    return RunJobManager()
