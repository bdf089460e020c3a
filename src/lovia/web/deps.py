"""``RouterDeps``: everything the API's routes need, and the machinery behind them.

A plain dataclass: ``agents`` and ``store`` are required; the rest are run settings with the
defaults ``create_app`` uses. ``deps.lifespan()`` starts and stops the machinery (settles
runs a dead process left ``running``, and on shutdown winds live runs down to resumable
checkpoints); enter it from your app's lifespan when you mount ``build_api_router(deps)``
yourself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..agent import Agent
from ..chats.book import PENDING_STATUSES
from ..chats.runstart import RunStart
from ..chats.supervisor import LiveRun, RunSupervisor
from .book import StoreBook
from .chat_workspaces import ChatWorkspaces
from .errors import WebError
from .hub import EventHub
from .run_deps import RUN_CLIENT, RUN_SERVER, RunDepsFn, RunTrigger, build_run_deps
from .store import ChatStore, RunRow
from .titles import TitleMaker

if TYPE_CHECKING:
    from .schedules import Scheduler

__all__ = ["RouterDeps"]

log = logging.getLogger("lovia.web")


@dataclass
class RouterDeps:
    """The served agents, the store and the run settings of one API.

    ``max_turns``, ``budget``, ``retry``, ``context_policy`` and ``tracer`` apply to every
    run; ``titles`` names new chats in the background (with ``title_model``, default the
    agent's model); ``followups`` suggests next questions; ``approval_timeout`` refuses a
    call nobody decided within that many seconds; ``max_background_runs`` caps the runs
    live at once (429 beyond); ``run_deps`` builds each run's ``RunContext.deps``;
    ``lease_ttl`` is how long a crashed server's chat stays locked for the others;
    ``queue`` (an ``AgentQueue`` on the store's PostgreSQL) hands every run to ``lovia
    worker`` processes and follows it from the database."""

    agents: dict[str, Agent]
    store: ChatStore
    title: str = "lovia"
    context_policy: Any = None
    title_model: Any = None
    titles: bool = True
    followups: Any = False
    followup_model: Any = None
    max_turns: int = 50
    budget: Any = None
    retry: Any = None
    tracer: Any = None
    max_background_runs: int = 8
    approval_timeout: float | None = None
    scheduler_poll: float = 1.0
    questions: Any = None
    config_runtime: Any = None
    run_deps: RunDepsFn | None = None
    lease_ttl: float = 30.0
    probe: bool = True
    queue: Any = None
    _supervisor: RunSupervisor | None = field(default=None, init=False, repr=False)
    _bus: EventHub = field(default_factory=EventHub, init=False, repr=False)
    _tasks: set[asyncio.Task[Any]] = field(default_factory=set, init=False, repr=False)
    _scheduler: Any = field(default=None, init=False, repr=False)
    workspaces: ChatWorkspaces = field(default_factory=ChatWorkspaces, init=False, repr=False)
    _run_waiters: dict[str, list[asyncio.Future[LiveRun]]] = field(
        default_factory=dict, init=False, repr=False
    )

    @property
    def session(self) -> Any:
        return self.store.session

    @property
    def default_agent(self) -> str | None:
        """The agent a chat talks to when it names none: the only one, else none."""
        return next(iter(self.agents)) if len(self.agents) == 1 else None

    def panel_agent(self, name: str | None) -> Agent:
        """The agent a panel's ``?agent=`` names; without it, the only one served (400 when
        several are, 404 for a name not served)."""
        if name is None:
            if len(self.agents) != 1:
                raise WebError(
                    400,
                    "invalid_request",
                    "agent must be specified",
                    f"add ?agent= one of: {', '.join(self.agents)}",
                )
            name = next(iter(self.agents))
        agent = self.agents.get(name)
        if agent is None:
            raise WebError(404, "agent_not_found", f"unknown agent {name!r}")
        return agent

    @property
    def scheduler(self) -> Scheduler:
        """Fires the store's schedules (polled while ``lifespan`` runs)."""
        if self._scheduler is None:
            from .schedules import Scheduler

            self._scheduler = Scheduler(self)
        found: Scheduler = self._scheduler
        return found

    @property
    def bus(self) -> EventHub:
        return self._bus

    @property
    def supervisor(self) -> RunSupervisor:
        """The runs of every chat (made on first use)."""
        if self._supervisor is None:
            book = StoreBook(self.store)
            sup = RunSupervisor(
                self.agents,
                book,
                lease_ttl=self.lease_ttl,
                max_turns=self.max_turns,
                probe=self.probe,
            )
            sup.run_options = {
                k: v
                for k, v in {
                    "budget": self.budget,
                    "retry": self.retry,
                    "context_policy": self.context_policy,
                    "tracer": self.tracer,
                }.items()
                if v is not None
            }
            sup.queue = self.queue
            sup.observers.append(_Records(self))
            sup.start_for = self._start_for
            sup.bind_agent = self._bind_agent  # a chat's processes outlive its runs
            self._supervisor = sup
        return self._supervisor

    def next_run(self, chat_id: str) -> asyncio.Future[LiveRun]:
        """Resolves with the chat's next run on this server as it starts: a stream waiting
        for a decision follows it from its first event, however quickly it ends."""
        waiter: asyncio.Future[LiveRun] = asyncio.get_running_loop().create_future()
        self._run_waiters.setdefault(chat_id, []).append(waiter)
        waiter.add_done_callback(lambda w: self._forget_waiter(chat_id, w))
        return waiter

    def _forget_waiter(self, chat_id: str, waiter: asyncio.Future[LiveRun]) -> None:
        waiters = self._run_waiters.get(chat_id, [])
        if waiter in waiters:
            waiters.remove(waiter)
        if not waiters:
            self._run_waiters.pop(chat_id, None)

    def run_started(self, run: LiveRun) -> None:
        for waiter in list(self._run_waiters.get(run.chat_id, [])):
            if not waiter.done():
                waiter.set_result(run)

    def emit(self, event: str, data: Mapping[str, Any]) -> None:
        """Send a lifecycle event to ``GET /api/events``'s subscribers."""
        self._bus.emit(event, data)

    def spawn(self, work: Any) -> None:
        """Run ``work`` (a coroutine) in the background; kept until done, cancelled on
        shutdown."""
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def run_start(
        self,
        session_id: str,
        agent: Agent,
        *,
        source: str = "user",
        request: Any = None,
        context: dict[str, Any] | None = None,
        resumed: bool = False,
        park: bool = True,
        input: Any = None,
    ) -> RunStart:
        """How to start a run: its ``deps`` built by ``run_deps`` first (which may refuse)."""
        trigger = RunTrigger(session_id, agent, source, request, context or {}, resumed)
        deps = await build_run_deps(self.run_deps, trigger)

        def enter() -> None:  # in the run's own task: its tools see the chat and the server
            _keep_ui_data(self.store, session_id)
            RUN_SERVER.set(self)
            RUN_CLIENT.set(dict(context) if context else None)

        return RunStart(
            source=source, park=park, input=input, deps=deps, context=context, enter=enter
        )

    async def _bind_agent(self, chat_id: str, agent: Agent) -> Agent:
        """The agent a chat's run here drives: its workspace bound to the chat's session
        (``self.workspaces`` as it is when the run starts)."""
        return await self.workspaces.bind(chat_id, agent)

    async def _start_for(self, chat_id: str, agent: Agent, resumed: bool, request: Any) -> RunStart:
        """A run no message's request started (a decision resumes a parked run, messages
        sent too late start the next): ``run_deps`` builds its deps from the client context
        the chat's run started with and the request that caused it (the decision's, so the
        person who approved is who the resumed run works for; ``None`` for late messages)."""
        context = await self.store.get_active_context(chat_id)
        return await self.run_start(
            chat_id, agent, request=request, context=context, resumed=resumed
        )

    def agent_for(self, name: str | None) -> Agent:
        return self.supervisor.agent(name)

    def live_count(self) -> int:
        return len(self.supervisor.live)

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Any = None) -> AsyncIterator[None]:
        """Start the machinery; on exit wind live runs down to resumable checkpoints."""
        sup = self.supervisor
        if self.queue is not None:
            await self.queue.startup()
        try:
            await self.store.sweep_stale_runs()
            await self.store.adopt_sessions(every=0)
            unfinished = await sup.chats.unfinished_runs()
        except Exception as exc:  # the API still serves what it can read
            log.warning("could not read the stored runs at startup: %s", exc)
            unfinished = []
        chats = sum(1 for run in unfinished if run.session_id)
        if chats:
            log.warning(
                "%d run(s) did not finish before the last shutdown or crash; a reconnect "
                "resumes them (POST /api/chat/reconnect)",
                chats,
            )
        try:
            from .background import finish_background

            await finish_background(self, unfinished)
        except Exception as exc:  # titles and follow-ups are never load-bearing
            log.warning("could not finish the stored title/follow-up calls: %s", exc)
        self.spawn(self.scheduler.loop())
        try:
            yield
        finally:
            for task in list(self._tasks):
                task.cancel()
            await sup.close()
            await self.workspaces.aclose()  # the chats' background processes end here
            if self.queue is not None:
                await self.queue.shutdown()
            from .memories import drain_memories

            await drain_memories(self.agents.values())  # the last run's notes are kept
            self._bus.close()


def _keep_ui_data(store: ChatStore, session_id: str) -> None:
    """``put_ui_data`` in the run about to start keeps its data with this chat (set in the
    run's own context)."""
    from .components import UI_DATA_SINK

    async def sink(payload: bytes) -> str | None:
        return await store.put_ui_data(session_id, payload)

    UI_DATA_SINK.set(sink)


class _Records:
    """Keeps the chat tables and the lifecycle events in step with the runs."""

    def __init__(self, deps: RouterDeps) -> None:
        self.deps = deps
        self.titles = TitleMaker(deps)

    async def on_start(self, run: LiveRun) -> None:
        store, chat = self.deps.store, run.chat_id
        known = await store.get(chat)
        await store.upsert(chat, agent=run.served_as, title=run.input_text)
        if known is None:
            self.deps.emit(
                "session_created",
                {"session_id": chat, "agent": run.served_as, "title": run.input_text},
            )
            self.titles.start(chat, run.input_text)
        await store.start_run(
            RunRow(
                run.run_id,
                chat,
                run.served_as,
                run.source,
                "running",
                None,
                run.started_at,
                None,
                None,
            )
        )
        self.deps.run_started(run)
        await self._supersede(chat, run.run_id)
        await store.set_active_run_id(chat, run.run_id, context=run.context)
        self.deps.emit(
            "run_started",
            {
                "session_id": chat,
                "run_id": run.run_id,
                "agent": run.served_as,
                "source": run.source,
            },
        )

    async def _supersede(self, chat: str, run_id: str) -> None:
        """A new run has taken the chat: the run its pointer named before (one a 0.9.119
        program marked resumable, or one that ended) is dropped, as 0.9.119 dropped it. A
        run this project still counts as the chat's unfinished one is kept: a new message
        is refused while it waits (``run_unfinished``), and another server may drive it."""
        store = self.deps.store
        before = await store.get_active_run_id(chat)
        if before is None or before == run_id:
            return
        old = await store.checkpointer.load(before)
        if old is None:
            return
        if old.session_id == chat and old.status in PENDING_STATUSES:
            return
        await store.checkpointer.delete(before)

    async def on_end(self, run: LiveRun, terminal: dict[str, Any]) -> None:
        status, error, usage = _outcome(terminal)
        store = self.deps.store
        await store.finish_run(run.run_id, status=status, error=error, usage=usage)
        if status in ("completed", "cancelled"):
            await store.clear_active_run_id(run.chat_id, expected=run.run_id)
        await store.upsert(run.chat_id)
        self.deps.emit(
            "run_finished",
            {
                "session_id": run.chat_id,
                "run_id": run.run_id,
                "status": status,
                "error": error,
                "source": run.source,
            },
        )
        if status == "interrupted" and self.deps.approval_timeout:
            self.deps.spawn(_time_out(self.deps, run.chat_id, self.deps.approval_timeout))


def _outcome(terminal: dict[str, Any]) -> tuple[str, str | None, dict[str, Any] | None]:
    if terminal.get("type") == "run_completed":
        result = terminal.get("result") or {}
        from .wire import usage_dict

        return "completed", None, usage_dict(result.get("usage"))
    error = terminal.get("error") or {}
    # every cooperative stop reads "cancelled" (as in 0.9.119), whatever the exception said
    if terminal.get("stopped"):
        return "cancelled", "cancelled", None
    if error.get("type") == "ApprovalPending":
        return "interrupted", None, None
    if error.get("type") == "RunCancelled":
        return "interrupted", "cancelled", None
    return "failed", str(error.get("message") or error.get("type") or "failed"), None


async def _time_out(deps: RouterDeps, chat_id: str, seconds: float) -> None:
    """Refuse the calls of the chat's parked run still undecided after ``seconds``."""
    await asyncio.sleep(seconds)
    sup = deps.supervisor
    head = await sup.chats.pending_head(chat_id)
    if head is None or chat_id in sup.live:
        return
    undecided = [p.call_id for p in head.pending_approvals if p.decision is None]
    for call_id in undecided:
        try:
            await sup.decide(chat_id, call_id, False, "no decision in time")
        except Exception as exc:  # decided meanwhile, or another server has the chat
            log.info("approval timeout of chat %s: %s", chat_id, exc)
        return  # the resumed run asks again for any other call
