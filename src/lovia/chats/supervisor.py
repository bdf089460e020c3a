"""Run supervision: one live run per chat, every run checkpointed, a stopped run kept.

A live run belongs to the server, not to the HTTP request that started it: closing the
page does not stop it. ``RunSupervisor`` starts runs (a message, a decision, the answer to
messages that came too late) and ends them; its parts are in their own modules: the
live run (``live``), the chats held here and their claims (``slots``, ``claims``), the
pump that buffers a run's events (``pump``), decisions (``decisions``), and stopping and
settling (``settle``, its base class ``ChatSettler``).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from .._run.runner import Runner
from ..agent import Agent
from ..errors import UserError
from ..events import ApprovalRequired
from ..stores.checkpoint import IfRunExists
from ..stores.run_lease import RunLease
from ..stores.run_options import CheckpointOptions
from .agents import NO_MODEL_HINT, entry_agent, pick_agent, served_name
from .book import ChatBook, chat_claim_key
from .claims import ChatBusy, hold_run, take_claim
from .decisions import (
    ApprovalConflict,
    ApprovalStale,
    asks_a_person,
    check_waiting,
    record_decision,
)
from .live import MAILBOX_LIMIT, LiveRun, MailboxFull
from .pump import LOST, log_end, pump_queued, pump_stream
from .runstart import RunObserver, RunStart
from .settle import ChatSettler
from .setup import SetupCheck
from .timing import result_timing

__all__ = [
    "MAILBOX_LIMIT",
    "NO_MODEL_HINT",
    "ApprovalConflict",
    "ApprovalStale",
    "ChatBusy",
    "LiveRun",
    "MailboxFull",
    "RunSupervisor",
    "chat_claim_key",
    "entry_agent",
]

log = logging.getLogger("lovia.web")


class RunSupervisor(ChatSettler):
    """Starts, stops and resumes the runs of every chat."""

    def __init__(
        self,
        agents: Mapping[str, Agent],
        chats: ChatBook,
        *,
        lease_ttl: float = 30.0,
        probe: bool = True,
        park_approvals: bool = True,
        max_turns: int = 50,
    ) -> None:
        self.agents = dict(agents)
        self.max_turns = max_turns  # model turns per run (``lovia web --max-turns``)
        # a call that needs approval parks its run until a person decides (the web page);
        # False leaves it to the agent's approval_handler, else it is refused (fail closed)
        self.park_approvals = park_approvals
        self.mailbox_limit = MAILBOX_LIMIT  # messages waiting for a live run, at most
        super().__init__(chats, lease_ttl=lease_ttl)
        self._closing = False
        self.setup = SetupCheck(self.agents, probe=probe)
        # Runner.stream options of every run (budget, retry, context_policy, tracer)
        self.run_options: dict[str, Any] = {}
        # an AgentQueue (lovia.workers): runs are queued for `lovia worker` processes and
        # followed from the database instead of driven here
        self.queue: Any = None
        # told of each run's start and end (run records, lifecycle events); each may fail
        self.observers: list[RunObserver] = []
        # how a run started without a RunStart of its own (a decision resumes a parked run,
        # messages sent too late start the next) gets one: the web server builds its deps
        # and context as the chat's run had them, with the request that caused it (a
        # decision's; None for messages sent too late). (chat id, agent, resumed, request)
        self.start_for: Callable[[str, Agent, bool, Any], Awaitable[RunStart]] | None = None
        # the agent a chat's run here drives (the web server binds its workspace to the
        # chat's session); not asked for a run a worker drives. (chat id, agent) -> agent
        self.bind_agent: Callable[[str, Agent], Awaitable[Agent]] | None = None

    @property
    def closing(self) -> bool:
        """Whether the server is shutting down (no run starts any more)."""
        return self._closing

    # -- choosing the agent -------------------------------------------------------------------

    def agent(self, name: str | None) -> Agent:
        return pick_agent(self.agents, name)

    def served_name(self, agent: Agent) -> str | None:
        """The name ``agent`` is served under (the key of ``agents``, which may differ from
        ``agent.name``), or ``None`` when it is not served itself."""
        return served_name(self.agents, agent)

    def entry_agent_for(self, active_name: str) -> Agent:
        """The configured agent whose handoff graph holds ``active_name``."""
        return entry_agent(self.agents, active_name) or self.agent(None)

    # -- starting -----------------------------------------------------------------------------

    async def begin(
        self,
        chat_id: str,
        prepare: Callable[[], Awaitable[str | None]],
        *,
        agent_name: str | None = None,
        resume_run_id: str | None = None,
        claim: RunLease | None = None,
        queued: list[Any] | None = None,
        start: RunStart | None = None,
        request: Any = None,
    ) -> LiveRun:
        """Claim the chat (or take over ``claim``, already held), ``await prepare()``
        (rewind, settle...) for the run's input, and start the run; ``queued`` messages
        wait in its mailbox for its first turn.

        ``ChatBusy`` when the chat already has a live run, here or on another server sharing
        the stores: the claim is taken before ``prepare`` writes anything, so a refused
        request leaves the chat as it was. The claim is held until the run has ended and
        been settled."""
        busy, hint = "already has a live run", "stop it first, or wait for it to finish"
        async with self.slots.reserve(chat_id, busy, hint, resuming=resume_run_id):
            try:
                agent = self.agent(agent_name)
                problem = self.setup.blocking(agent)
                if problem is not None:  # every run would fail: refused before any write
                    raise UserError(
                        f"the model of agent {problem.agent!r} cannot be used: {problem.message}",
                        hint=problem.hint,
                    )
                if claim is None:
                    # the chat's lease in the stores: no other server writes to it meanwhile
                    ckpt = self.chats.checkpointer
                    claim = await take_claim(ckpt, chat_id, ttl=self.lease_ttl, brief=False)
                if start is None and self.start_for is not None:  # may refuse: nothing written
                    resumed = resume_run_id is not None
                    start = await self.start_for(chat_id, agent, resumed, request)
                text = await prepare()
                policy: IfRunExists = "resume_only" if resume_run_id else "fail"
                run_id = resume_run_id or uuid.uuid4().hex
                if resume_run_id is None:
                    await self.settle_pending(chat_id)
                start = start or RunStart()
                run = LiveRun(chat_id, run_id, agent.name, text)
                served = agent_name if agent_name is not None else served_name(self.agents, agent)
                run.served_as = agent.name if served is None else served
                run.resumed = resume_run_id is not None
                run.source, run.park, run.context = start.source, start.park, start.context
                run_input: Any = text or ""
                if start.input is not None and resume_run_id is None:
                    run_input = start.input
                for content in queued or ():
                    run.mailbox.push(content)  # joined the run before too late: first here
                options = {**self.run_options, **start.options}
                if start.deps is not None:
                    options["deps"] = start.deps
                if self.queue is None and self.bind_agent is not None:
                    agent = await self.bind_agent(chat_id, agent)
                work = self._work(run, agent, run_input, options, policy, resume_run_id is not None)
                run.claim, claim = claim, None
                self.slots.enter(run, resumes=resume_run_id)
                self.chats.touch(chat_id, text)
                # a request cancelled from here on (its client left) leaves the run going
                await asyncio.shield(self._launch(run, work, start.enter))
                return run
            finally:
                if claim is not None:
                    await claim.release()

    async def _launch(
        self, run: LiveRun, work: Awaitable[None], enter: Callable[[], None] | None = None
    ) -> None:
        """Tell the observers ``run`` started, then start its task, in a context of its own
        where ``enter`` (the ``RunStart``'s) has set the run's context vars: the caller's
        context is left as it was."""
        await self._tell("on_start", run)
        context = contextvars.copy_context()
        if enter is not None:
            context.run(enter)
        run.task = context.run(asyncio.ensure_future, _awaited(work))  # the task copies it

    def _work(
        self,
        run: LiveRun,
        agent: Agent,
        run_input: Any,
        options: dict[str, Any],
        policy: IfRunExists,
        resumed: bool,
    ) -> Awaitable[None]:
        """What drives ``run``: its ``Runner.stream`` here, or, with a ``queue``, a worker
        (this server follows the run from the database)."""
        if self.queue is not None:
            if not isinstance(run_input, str):
                raise UserError(
                    "a message with attachments cannot be handed to a worker yet",
                    hint="send text, or serve without workers",
                )
            run.closing = True  # no mailbox: a message sent meanwhile starts the next run
            events = self.queue.stream_run(
                run.run_id,
                run_input,
                session_id=run.chat_id,
                agent=run.served_as,
                resume=resumed,
                stopped=lambda: run.stopping,
                park=run.park and self.park_approvals,
            )
            return self._drive(run, pump_queued(run, events))
        handle = Runner.stream(
            agent,
            [] if resumed else run_input,
            **options,
            cancel_token=run.token,
            mailbox=run.mailbox,
            session=self.chats.session,
            session_id=run.chat_id,
            max_turns=self.max_turns,
            checkpoint=CheckpointOptions(
                self.chats.checkpointer,
                run.run_id,
                if_run_exists=policy,
                lease_ttl=self.lease_ttl,
            ),
        )
        return self._drive(
            run, pump_stream(run, handle, lambda event: self._asks_a_person(run, event))
        )

    async def send(
        self,
        chat_id: str,
        text: str,
        *,
        agent_name: str | None = None,
        start: RunStart | Callable[[], Awaitable[RunStart]] | None = None,
    ) -> tuple[LiveRun, int | None]:
        """A user message: it joins the chat's run live on this server (through the run's
        mailbox, injected at its next turn), else starts a run. Returns the run and, when
        the message joined it, the number of the run's event that says so (else ``None``).
        ``ChatBusy`` (nothing written) when another server drives the chat."""
        if agent_name is not None:
            self.agent(agent_name)  # an unknown agent is refused, not joined to a live run
        for _ in range(3):  # a run that is just ending hands over to the one after it
            live = self.live.get(chat_id)
            if live is None:
                break
            if live.accepts_messages():  # in the run's checkpoint before 200
                return live, await live.join(text, self.mailbox_limit)
            await live.finished.wait()

        async def prepare() -> str:
            return text

        how = await start() if callable(start) else start
        return await self.begin(chat_id, prepare, agent_name=agent_name, start=how), None

    async def _drive(self, run: LiveRun, pump: Awaitable[dict[str, Any] | None]) -> None:
        """The task of ``run``: ``pump`` publishes its events (``chats.pump``) and hands
        back the terminal one, the run is settled and its end told; then it leaves."""
        try:
            terminal = await pump
            if terminal is not None:
                await self._on_end(run, terminal)
        except Exception as exc:
            log_end(run, exc)
        finally:
            await self._ended(run)

    async def _ended(self, run: LiveRun) -> None:
        """A run's task is over: it leaves the live runs, its claim is let go, and a run
        that ended without a terminal event is told to its followers as lost."""
        self.slots.leave(run)
        claim, run.claim = run.claim, None
        if claim is not None:
            await asyncio.shield(claim.release())
        if not run.done:
            await run.publish({"type": "run_failed", "error": LOST}, last=True)
        run.finished.set()

    async def _on_end(self, run: LiveRun, terminal: dict[str, Any]) -> None:
        """Settle a stopped run before anyone is told the run ended; messages that joined
        the run too late for it to see them are kept (a stopped run's transcript ends with
        them) or answered by a run started at once (the chat's claim is handed to it)."""
        late = run.close_mailbox()
        stopped = run.stopping and terminal["type"] == "run_failed"
        if stopped:
            try:
                await self.settle(
                    run.chat_id, run.run_id, run.partial_text, run.input_text, late=late
                )
                terminal = {**terminal, "stopped": True}
                late = []
            except Exception as exc:  # the run stays in the checkpoint: nothing is lost
                log.warning("could not save the stopped run %s: %s", run.run_id, exc)
        elif terminal["type"] == "run_failed" and not run.resumed:
            await self.keep_message(run, terminal)
        self.chats.touch(run.chat_id, run.input_text)
        if late and not self._closing and run.claim is not None:
            follow_up = await self._answer_late(run, late)
            if follow_up is not None:
                terminal = {**terminal, "next_run_id": follow_up.run_id}
        claim, run.claim = run.claim, None
        if claim is not None:  # free before anyone hears of the end: they may send at once
            await claim.release()
        self.slots.leave(run)
        if terminal["type"] == "run_completed":
            # the timing the run's save wrote into its segment (what a reload shows)
            timing = result_timing(terminal.get("result"))
            if timing is not None:
                terminal = {**terminal, "timing": timing}
        await self._tell("on_end", run, terminal)
        await run.publish(terminal, last=True)

    async def _tell(self, what: str, run: LiveRun, *args: Any) -> None:
        """Tell each observer; one that fails is logged and the run goes on."""
        for observer in self.observers:
            try:
                await getattr(observer, what)(run, *args)
            except Exception as exc:
                log.warning("observer %s of run %s failed: %s", what, run.run_id, exc)

    async def _answer_late(self, run: LiveRun, late: list[Any]) -> LiveRun | None:
        """Start the run that answers ``late`` messages, holding the chat's claim all along
        so no other server gets between the two runs."""
        claim, run.claim = run.claim, None
        self.slots.leave(run)
        first, rest = late[0], late[1:]

        async def prepare() -> str:
            return str(first)

        try:
            follow_up = await self.begin(run.chat_id, prepare, claim=claim, queued=rest)
        except Exception as exc:
            log.warning("could not answer the messages sent during run %s: %s", run.run_id, exc)
            try:  # they are kept in the chat, unanswered, rather than lost
                await self.settle(
                    run.chat_id, uuid.uuid4().hex, "", None, ended="failed", late=late
                )
            except Exception as again:
                log.warning("messages sent during run %s are lost: %s", run.run_id, again)
            return None
        run.next_run = follow_up
        return follow_up

    def _asks_a_person(self, run: LiveRun, event: ApprovalRequired) -> bool:
        """Whether a call that needs approval waits for a person on the page: yes, unless
        the agent asking has an ``approval_handler`` (it decides, and may defer itself)."""
        if not self.park_approvals or not run.park:
            return False
        return asks_a_person(self.agents, event)

    # -- approvals ----------------------------------------------------------------------------

    async def decide(
        self,
        chat_id: str,
        call_id: str,
        approve: bool,
        reason: str | None = None,
        *,
        run_id: str | None = None,
        digest: str | None = None,
        request: Any = None,
    ) -> LiveRun:
        """Record a person's decision on a call the chat's parked run waits for, then resume
        the run (an approved call runs once; a rejected one gets its refusal as result).

        ``run_id`` and ``digest`` name what the person was shown: ``ApprovalStale`` when the
        chat's waiting run is another one, or the call of that id now waits with another
        tool or arguments. The chat's claim and the run's lease are taken before the
        decision is written: ``ChatBusy`` when another server drives the chat,
        ``ApprovalConflict`` when the call was decided otherwise or waits for nothing;
        either way nothing was written."""
        parked = check_waiting(await self.chats.pending_head(chat_id), chat_id, call_id, run_id)
        waiting = parked.run_id
        entry = self.entry_agent_for(parked.agent_name)

        async def prepare() -> str | None:
            async with hold_run(self.chats.checkpointer, chat_id, waiting, ttl=self.lease_ttl):
                await record_decision(
                    self.chats.checkpointer,
                    chat_id,
                    waiting,
                    call_id,
                    approve,
                    reason=reason,
                    digest=digest,
                    # with workers, the job that resumes the run commits with the decision
                    then=None if self.queue is None else self.queue.resumption(waiting),
                )
            return await self.chats.run_title(parked)

        served = self.served_name(entry)
        return await self.begin(
            chat_id, prepare, agent_name=served, resume_run_id=waiting, request=request
        )

    async def close(self) -> None:
        """Server shutdown: interrupt every live run (each stays resumable)."""
        self._closing = True
        runs = list(self.live.values())
        for run in runs:
            run.token.cancel("the server is shutting down")
            if self.queue is not None and run.task is not None:
                run.task.cancel()  # a worker's run goes on; this server stops following it
        for run in runs:
            try:
                await asyncio.wait_for(run.finished.wait(), timeout=5)
            except asyncio.TimeoutError:
                log.warning("run %s did not stop within 5 s of shutdown", run.run_id)


async def _awaited(work: Awaitable[None]) -> None:
    """``work`` as a coroutine (what a task is made of)."""
    await work
