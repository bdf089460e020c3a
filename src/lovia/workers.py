"""Agent runs as jobs on a PostgreSQL queue (procrastinate): many workers, one database.

::

    # app.py  -- start workers with:  lovia worker --app app:queue --db postgresql://...
    from lovia.workers import AgentQueue
    queue = AgentQueue(agent, "postgresql://app@db:5432/app")

    # producer (a web server, a script)
    await queue.submit("refund-42", "Refund order 42", session_id="user-7")
    async for event in queue.follow("refund-42"):
        print(event["state"])

The queue lives in the same PostgreSQL as the checkpoints and sessions: procrastinate's
tables beside lovia's ``<prefix>queue_runs`` (one row per submitted run: its input, session,
agent and state). ``submit`` writes that row and the job in one transaction (pass ``conn=``
to make it your own transaction, next to your own rows), so a crash leaves both or neither.

- a run is queued once: a second ``submit`` of a ``run_id`` queues nothing and returns
  ``None``; the job's queueing lock and lock (the run id) keep two jobs of one run from
  waiting or running at once;
- a worker that dies (SIGKILL, OOM, a lost host) stops its heartbeat; another worker finds
  its jobs stalled, checks that the run's lease has expired (the dead worker stopped
  renewing it), and hands them back to the queue; the run resumes from its checkpoint, so a
  tool whose result was saved is not run again;
- a worker stopped with SIGTERM stops taking jobs, lets its runs finish for
  ``graceful_timeout`` seconds, then interrupts the rest and hands them back at once;
- a failed job is retried (``max_attempts`` in all, with a growing wait); a run another
  worker holds (``RunBusy``) is retried after ``busy_retry_after`` seconds;
- ``cancel(run_id)`` drops a queued job, or interrupts a running one (its checkpoint keeps
  what was done).

A run that parks for an approval ends its job at once (state ``awaiting_approval``);
``await queue.decide(run_id, {call_id: True})`` records the decisions and queues the
resumption once every pending call is decided. Tools still run at least once: a call whose
result was not saved is executed again on resume.

SQLite stays the embedded default: with a SQLite path there is no queue to run;
``submit`` runs the run in this process (a background task) and ``follow`` polls.
Needs the ``workers`` extra (``pip install 'lovia[workers,postgres]'``).
"""

from __future__ import annotations

from typing import Any

from ._queue_stream import FINAL_STATES as FINAL_STATES
from ._queue_stream import QueueStream
from ._queue_worker import CHANNEL, JOB_NAME

__all__ = ["CHANNEL", "JOB_NAME", "AgentQueue", "enqueue_run"]


class AgentQueue(QueueStream):
    """Agent runs queued in ``db`` and run by ``lovia worker`` processes.

    ``agents`` is one agent or ``{name: agent}`` (a run may name one; the first is the
    default). ``db`` is a ``postgresql://`` URL (workers on many hosts) or a SQLite path (runs
    in-process, no queue). ``lease_ttl`` is how long a dead worker's run stays locked before
    another worker hands it back to the queue; ``busy_retry_after`` how long a job waits for
    a run another worker holds before it is retried later. ``pool_size`` caps each of a
    process's two connection pools (the queue's and the stores'): a worker holds up to twice
    that, plus one LISTEN connection, against PostgreSQL's ``max_connections``.
    """

    async def __aenter__(self) -> AgentQueue:
        await self.startup()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()


async def enqueue_run(
    queue: AgentQueue,
    run_id: str,
    input: Any,
    *,
    session_id: str | None = None,
    agent: str | None = None,
    conn: Any = None,
) -> int | None:
    """``queue.submit(...)`` as a function: queue one run; ``None`` when it was queued before."""
    return await queue.submit(run_id, input, session_id=session_id, agent=agent, conn=conn)
