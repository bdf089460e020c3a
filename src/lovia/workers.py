"""Agent runs as jobs on the arq queue (Redis): many worker processes, one shared database.

::

    # worker.py  -- start with:  arq worker.WorkerSettings   (once per process you want)
    from lovia.workers import AgentQueue
    queue = AgentQueue(agent, "postgresql://app@db:5432/app")
    WorkerSettings = queue.worker_settings(job_timeout=600)

    # producer
    from arq import create_pool
    from lovia.workers import enqueue_run
    redis = await create_pool(queue.redis_settings)
    await enqueue_run(redis, run_id=order.id, input="Refund order 42", session_id="user-7")

A job is keyed by its ``run_id`` (it is also the arq job id, so arq refuses a second copy
while the first is queued, running or its result is kept). The job runs the agent with
``CheckpointOptions(cp, run_id)`` and a session on the same database:

- a worker that dies (SIGKILL, OOM, a lost host) leaves its job in arq's queue; arq hands it
  to another worker once the job's in-progress marker expires (``job_timeout + 10`` s), and
  the run resumes from its checkpoint: finished steps are not done again;
- a worker that is shut down (SIGTERM) cancels its jobs, so arq requeues them at once, and
  their checkpoints say ``interrupted``;
- a duplicate delivery (a job re-enqueued later, or under another job id) replays the
  completed run without calling the model, so the caller gets the same answer;
- the run lease keeps two deliveries of one run from driving it at the same time; a second
  one waits, and if the first still holds it after ``busy_retry_after`` seconds, the job is
  handed back to arq to retry later;
- jobs are independent requests: two jobs of one session that run at once each answer the
  history they loaded, and the one that lands second (its append raised
  ``SessionConflict``) is appended after the first all the same, with a warning in the log.
  Enqueue a conversation's turns one at a time when each must see the one before.

A run that parks for an approval (a tool call deferred with ``"defer"``, see
docs/approvals.md) ends its job at once, freeing the worker: the job's result says
``"status": "awaiting_approval"`` with the pending call ids, and arq neither fails nor retries
it. ``await queue.decide(run_id, {call_id: True}, reason=None)`` records the decisions
(``lovia.approvals.decide``) and enqueues the resumption once every pending call is decided;
a duplicate resumption (deciding twice, a job delivered twice) resumes the run once, and an
approved call runs once.

Tools still run at least once: a dangling call is executed again on resume.
Needs the ``workers`` extra (``pip install 'lovia[workers,postgres]'``).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from typing import Any

from arq import Retry
from arq.connections import ArqRedis, RedisSettings, create_pool
from arq.jobs import Job
from arq.worker import func

from ._run.runner import Runner
from .agent import Agent
from .approvals import decide as decide_approvals
from .errors import ApprovalPending, RunBusy, SessionConflict, UserError
from .stores.checkpoint import CheckpointOptions, validate_id
from .stores.lease import check_lease_args
from .stores.open import open_stores

__all__ = ["JOB_NAME", "AgentQueue", "enqueue_run"]

log = logging.getLogger("lovia.workers")

JOB_NAME = "lovia_run"
"""The arq function name of agent runs."""


class AgentQueue:
    """Runs agent jobs from arq with their checkpoints and sessions in ``db``.

    ``agents`` is one agent or ``{name: agent}`` (a job may name one; the first is the
    default). ``db`` is a ``postgresql://`` URL (workers on many hosts) or a SQLite path (one
    host). ``lease_ttl`` is how long a dead worker's run stays locked before another worker
    may take it over; keep it below arq's redelivery delay (``job_timeout + 10`` s).
    """

    def __init__(
        self,
        agents: Agent | Mapping[str, Agent],
        db: str,
        *,
        table_prefix: str = "lovia_",
        redis_settings: RedisSettings | None = None,
        queue_name: str = "lovia:queue",
        lease_ttl: float = 10.0,
        busy_retry_after: float = 30.0,
        max_turns: int = 50,
    ) -> None:
        self.agents = _agents_by_name(agents)
        self.db = db
        self.table_prefix = table_prefix
        self.redis_settings = redis_settings or RedisSettings(host="127.0.0.1", port=6379)
        self.queue_name = queue_name
        self.lease_ttl = lease_ttl
        self.busy_retry_after = busy_retry_after
        self.max_turns = max_turns
        check_lease_args("run", "worker", lease_ttl)  # bad options fail here, not per job
        check_lease_args("run", "worker", busy_retry_after)
        self._stores: tuple[Any, Any] | None = None

    # -- worker lifecycle (arq's on_startup / on_shutdown) ---------------------------------

    async def startup(self, ctx: dict[str, Any]) -> None:
        """Open the stores once per worker process."""
        self._stores = open_stores(self.db, table_prefix=self.table_prefix)

    async def shutdown(self, ctx: dict[str, Any]) -> None:
        stores, self._stores = self._stores, None
        if stores is not None:
            for store in stores:
                await store.close()

    # -- the job ----------------------------------------------------------------------------

    async def run(
        self,
        ctx: dict[str, Any],
        run_id: str,
        input: Any,
        session_id: str | None = None,
        agent: str | None = None,
        resume_only: bool = False,
    ) -> dict[str, Any]:
        """The arq job: run (or resume, or replay) ``run_id``; returns a JSON-safe summary.
        ``resume_only`` (a resumption queued by ``decide``): a run that is gone meanwhile is
        a ``UserError``, not a new run without input."""
        validate_id(run_id, "run_id")
        if self._stores is None:  # a worker built without on_startup
            await self.startup(ctx)
        assert self._stores is not None
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
            return await Runner.run(
                self._agent(agent),
                input,
                session=session if session_id is not None else None,
                session_id=session_id,
                checkpoint=options,
                max_turns=self.max_turns,
            )

        try:
            try:
                result = await drive()
            except ApprovalPending as exc:
                # parked: the checkpoint head lists the calls; the worker is free again
                log.info("run %s awaits approval of %s", run_id, [c.id for c in exc.calls])
                return {
                    "run_id": run_id,
                    "status": "awaiting_approval",
                    "pending": [c.id for c in exc.calls],
                    "output": None,
                    "replayed": False,
                    "turns": None,
                    "job_try": ctx.get("job_try"),
                }
            except SessionConflict as exc:
                assert session_id is not None
                log.warning("run %s: keeping both runs of session %s: %s", run_id, session_id, exc)
                await _keep_both(checkpointer, session, run_id, session_id)
                result = await drive()  # a replay now: the run is in the session
        except RunBusy as exc:
            # another delivery drives this run right now: let arq try again later
            log.info("run %s is busy on another worker; retrying later: %s", run_id, exc)
            raise Retry(defer=self.busy_retry_after) from exc
        output = result.output
        if not isinstance(output, (str, int, float, bool, type(None), list, dict)):
            output = str(output)
        return {
            "run_id": result.run_id,
            "status": "completed",
            "output": output,
            "replayed": result.replayed,
            "turns": result.turns,
            "job_try": ctx.get("job_try"),
        }

    # -- approvals ---------------------------------------------------------------------------

    async def decide(
        self,
        run_id: str,
        decisions: dict[str, bool],
        reason: str | None = None,
        *,
        redis: ArqRedis | None = None,
    ) -> Job | None:
        """Record decisions for a parked run (``{call_id: True | False}``) and queue its
        resumption.

        The decisions are recorded as ``lovia.approvals.decide`` does (atomic; the same
        decision twice is a no-op; a conflicting one, an unknown run or call, or a run that
        is not parked is a ``UserError`` and nothing is written or queued). Once no pending
        call of the run is undecided, the resumption is queued under a job id derived from
        the run and its decided calls, so deciding again queues nothing new. Returns arq's
        ``Job``, or ``None`` when nothing was queued (calls still wait for a decision, or
        that resumption is already queued, running or holding its result). ``redis`` is
        an open arq pool; without one, a pool on this queue's Redis is opened and closed
        (then read the job through your own pool: ``Job(job.job_id, redis)``).
        """
        validate_id(run_id, "run_id")
        opened: tuple[Any, Any] | None = None
        if self._stores is None:
            opened = open_stores(self.db, table_prefix=self.table_prefix)
        stores = opened or self._stores
        assert stores is not None
        checkpointer = stores[1]
        try:
            await decide_approvals(checkpointer, run_id, decisions, reason)
            snap = await checkpointer.load(run_id)
        finally:
            if opened is not None:
                for store in opened:
                    await store.close()
        if snap is None or snap.status != "interrupted" or not snap.pending_approvals:
            return None  # resumed (or deleted) meanwhile: nothing to queue
        if any(p.decision is None for p in snap.pending_approvals):
            return None  # the run would only park again
        # one id per parked state: the same decisions queue one job, a later park another
        parked = f"{len(snap.entries)}:" + ",".join(
            sorted(p.call_id for p in snap.pending_approvals)
        )
        job_id = f"{run_id}:approved:{hashlib.sha256(parked.encode()).hexdigest()[:16]}"
        pool = redis or await create_pool(self.redis_settings)
        try:
            return await pool.enqueue_job(
                JOB_NAME,
                run_id,
                [],
                snap.session_id,
                self._entry_of(snap.agent_name, snap.turn_agent),
                True,  # resume_only
                _job_id=job_id,
                _queue_name=self.queue_name,
            )
        finally:
            if redis is None:
                await pool.aclose()

    def _entry_of(self, *names: str | None) -> str | None:
        """The name of this queue's agent from which every agent in ``names`` is reached."""
        from ._run.resume import find_agent

        for key, agent in self.agents.items():
            try:
                for name in names:
                    if name is not None:
                        find_agent(agent, name)
            except UserError:
                continue
            return key
        return None

    def worker_settings(self, **settings: Any) -> dict[str, Any]:
        """Keyword arguments for ``arq.worker.Worker`` (or an arq ``WorkerSettings`` class).

        Defaults: this queue's Redis and queue name, ``max_tries=5`` deliveries per job, and
        ``job_timeout=300`` seconds, which must exceed your longest run (arq fails a job
        that runs longer). Anything in ``settings`` overrides them.
        """
        job_timeout = settings.pop("job_timeout", 300)
        if job_timeout <= self.busy_retry_after:
            raise UserError(
                f"job_timeout={job_timeout} must exceed busy_retry_after={self.busy_retry_after}",
                hint="arq fails a job that outlives job_timeout; a busy run must give up "
                "waiting (and be retried) before that",
            )
        base: dict[str, Any] = {
            "functions": [func(self.run, name=JOB_NAME)],
            "on_startup": self.startup,
            "on_shutdown": self.shutdown,
            "redis_settings": self.redis_settings,
            "queue_name": self.queue_name,
            "max_tries": 5,
            "job_timeout": job_timeout,
            "keep_result": 3600,
        }
        base.update(settings)
        return base

    def _agent(self, name: str | None) -> Agent:
        if name is None:
            return next(iter(self.agents.values()))
        found = self.agents.get(name)
        if found is None:
            raise UserError(
                f"this worker has no agent {name!r}",
                hint=f"use one of {', '.join(self.agents)}",
            )
        return found


async def enqueue_run(
    redis: ArqRedis,
    run_id: str,
    input: Any,
    *,
    session_id: str | None = None,
    agent: str | None = None,
    queue_name: str = "lovia:queue",
    job_id: str | None = None,
) -> Job | None:
    """Queue one agent run under ``run_id`` (also its job id, unless ``job_id`` is given).

    Returns arq's ``Job``, or ``None`` when a job with that id is already queued, running
    or holding its result; re-enqueueing later is safe either way: a completed run replays.
    """
    validate_id(run_id, "run_id")
    return await redis.enqueue_job(
        JOB_NAME,
        run_id,
        input,
        session_id,
        agent,
        _job_id=job_id or run_id,
        _queue_name=queue_name,
    )


async def _keep_both(checkpointer: Any, session: Any, run_id: str, session_id: str) -> None:
    """Append a finished run whose session moved on, without the version check. Such a run
    ends ``failed`` with the conflict (its answer complete in the checkpoint); resuming it
    afterwards finishes it, and its own append is then a no-op (idempotent by run id)."""
    snap = await checkpointer.load(run_id)
    conflicted = snap is not None and (snap.error or {}).get("type") == "SessionConflict"
    if snap is None or (snap.status != "completed" and not conflicted):
        return
    meta = {"context_state": snap.context_state} if snap.context_state else None
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
