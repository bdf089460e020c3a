"""Run supervision: one live run per chat, every run checkpointed, a stopped run kept.

A live run belongs to the server, not to the HTTP request that started it: closing the
page does not stop it. Its events are buffered (``LiveRun.events``) so a reloaded page
replays them and then follows the rest. Stopping cancels the run, then writes what it got
so far to the session as a completed segment with dangling tool calls removed, plus any
text the model was streaming when it stopped, and deletes the checkpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

from .. import approvals
from .._run.handle import RunHandle
from .._run.resume import reachable_agents
from .._run.runner import Runner
from ..agent import Agent
from ..errors import ApprovalPending, RunCancelled, UserError
from ..events import ApprovalRequired
from ..reliability import CancelToken
from ..steering import Mailbox
from ..stores.checkpoint import IfRunExists, RunSnapshot
from ..stores.lease import LeaseStore
from ..stores.run_lease import RunLease, default_owner, holder_is_dead
from ..stores.run_options import CheckpointOptions
from ..transcript import (
    AssistantTextEntry,
    InputEntry,
    ToolResultEntry,
    TranscriptEntry,
    dangling_tool_calls,
    drop_dangling_tool_calls,
)
from .book import ChatBook, chat_claim_key
from .claims import BRIEF_WAIT_S, ChatBusy, take_claim
from .runstart import RunObserver, RunStart
from .setup import SetupCheck

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


def entry_agent(agents: Mapping[str, Agent], active_name: str) -> Agent | None:
    """The agent to resume a run with whose active agent is ``active_name``: the first
    of ``agents`` whose handoff graph holds it, else the first one (``None`` when empty)."""
    for agent in agents.values():
        if active_name in reachable_agents(agent):
            return agent
    return next(iter(agents.values()), None)


MAILBOX_LIMIT = 32
"""Messages that may wait in a live run's mailbox; one more is refused (``MailboxFull``)."""


class MailboxFull(UserError):
    """The chat's live run has ``MAILBOX_LIMIT`` messages waiting already (the API answers
    429; the message was not queued)."""


class ApprovalConflict(ChatBusy):
    """A decision that cannot be taken: the call was decided otherwise, or is not waiting
    for a decision any more (the API answers 409; nothing was written)."""


class ApprovalStale(ApprovalConflict):
    """A decision for something other than what waits now: the run it names no longer
    waits, or the call of that id waits with another tool or arguments (``code``:
    ``"approval_stale"``), or the call id alone is ambiguous (``"approval_ambiguous"``).
    The API answers 409 with that code; nothing was written, nothing run."""

    code: str = "approval_stale"


class LiveRun:
    """One run in flight: its buffered events and the clients following them."""

    def __init__(self, chat_id: str, run_id: str, agent_name: str, input_text: str | None):
        self.chat_id = chat_id
        self.run_id = run_id
        self.agent_name = agent_name
        self.input_text = input_text
        self.started_at = time.time()
        self.events: list[dict[str, Any]] = []
        self.done = False
        self.stopping = False
        self.partial_text = ""  # text of the model turn in flight, kept on stop
        self.resumed = False  # a resume of an unfinished run (its message is in its checkpoint)
        self.token = CancelToken()
        self.mailbox = Mailbox()  # messages sent while the run is live join it here
        self.closing = False  # the mailbox was emptied for the last time: no more joins
        self.next_run: LiveRun | None = None  # the run that answers messages it did not see
        self.resumed_by: LiveRun | None = None  # the run a decision resumed this parked one as
        self.claim: RunLease | None = None  # the chat's claim, held until the run is settled
        self.finished = asyncio.Event()
        self._changed = asyncio.Condition()
        self.task: asyncio.Task[None] | None = None
        self.source = "user"  # what started it: "user", "schedule:<id>", ...
        self.park = True  # a call that needs approval waits for a person (else: handler/deny)
        self.context: dict[str, Any] | None = None  # the client's context (run_deps)
        self.served_as = agent_name  # the name the agent is served under (a chat keeps it)

    async def publish(self, event: dict[str, Any], *, last: bool = False) -> int:
        """Add ``event``; returns its number (1-based, as ``follow`` counts)."""
        async with self._changed:
            self.events.append(event)
            seq = len(self.events)
            if last:
                self.done = True
            self._changed.notify_all()
        return seq

    async def follow(self, after: int = 0) -> AsyncIterator[tuple[int, dict[str, Any]]]:
        """Events from number ``after + 1`` on (1-based), until the terminal one."""
        seen = max(0, after)
        while True:
            async with self._changed:
                while seen >= len(self.events) and not self.done:
                    await self._changed.wait()
                batch = self.events[seen:]
                finished = self.done
            for event in batch:
                seen += 1
                yield seen, event
            if finished and seen >= len(self.events):
                return

    def accepts_messages(self) -> bool:
        """Whether a message sent now can still join this run (through its mailbox)."""
        return not (self.done or self.stopping or self.closing or self.token.cancelled)

    def close_mailbox(self) -> list[Any]:
        """No more joins; the messages that joined too late for the run to see them."""
        self.closing = True
        return self.mailbox.drain()

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "agent_name": self.agent_name,
            "input": self.input_text,
            "started_at": self.started_at,
            "events": len(self.events),
            "source": self.source,
        }


class RunSupervisor:
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
        self.lease_ttl = lease_ttl  # how long a crashed server's run stays locked
        self.mailbox_limit = MAILBOX_LIMIT  # messages waiting for a live run, at most
        self.chats = chats
        self.live: dict[str, LiveRun] = {}
        self._reserved: set[str] = set()
        self._brief: dict[str, asyncio.Event] = {}  # reserved by a brief hold (``claimed``)
        self._resuming: set[str] = set()  # run ids a begin() here is about to drive
        # the runs started here, while anything (a stream waiting on a parked one) holds them
        self._runs: weakref.WeakValueDictionary[str, LiveRun] = weakref.WeakValueDictionary()
        self._closing = False
        self.setup = SetupCheck(self.agents, probe=probe)
        # Runner.stream options of every run (budget, retry, context_policy, tracer)
        self.run_options: dict[str, Any] = {}
        # an AgentQueue (lovia.workers): runs are queued for `lovia worker` processes and
        # followed from the database instead of driven here
        self.queue: Any = None
        # told of each run's start and end (run records, lifecycle events); each may fail
        self.observers: list[RunObserver] = []

    @property
    def closing(self) -> bool:
        """Whether the server is shutting down (no run starts any more)."""
        return self._closing

    def busy_here(self, chat_id: str) -> bool:
        """Whether this server is answering, or writing to, the chat right now."""
        return chat_id in self.live or chat_id in self._reserved

    # -- choosing the agent -------------------------------------------------------------------

    def agent(self, name: str | None) -> Agent:
        if not self.agents:
            raise UserError("no agent is configured", hint=NO_MODEL_HINT)
        if name is None:
            return next(iter(self.agents.values()))
        found = self.agents.get(name)
        if found is None:
            raise UserError(f"unknown agent {name!r}", hint=f"use one of: {', '.join(self.agents)}")
        return found

    def _served_as(self, asked: str | None, agent: Agent) -> str:
        """The name ``agent`` is served under (a chat is recorded under it)."""
        if asked is not None:
            return asked
        return next((k for k, a in self.agents.items() if a is agent), agent.name)

    def served_name(self, agent: Agent) -> str | None:
        """The name ``agent`` is served under (the key of ``agents``, which may differ from
        ``agent.name``), or ``None`` when it is not served itself."""
        return next((k for k, a in self.agents.items() if a is agent), None)

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
    ) -> LiveRun:
        """Claim the chat (or take over ``claim``, already held), ``await prepare()``
        (rewind, settle...) for the run's input, and start the run; ``queued`` messages
        wait in its mailbox for its first turn.

        ``ChatBusy`` when the chat already has a live run, here or on another server sharing
        the stores: the claim is taken before ``prepare`` writes anything, so a refused
        request leaves the chat as it was. The claim is held until the run has ended and
        been settled."""
        await self._after_brief_here(chat_id)
        if chat_id in self.live or chat_id in self._reserved:
            raise ChatBusy(
                f"chat {chat_id!r} already has a live run",
                hint="stop it first, or wait for it to finish",
            )
        self._reserved.add(chat_id)
        if resume_run_id is not None:
            self._resuming.add(resume_run_id)
        try:
            agent = self.agent(agent_name)
            problem = self.setup.blocking(agent)
            if problem is not None:  # every run would fail: refused before anything is written
                raise UserError(
                    f"the model of agent {problem.agent!r} cannot be used: {problem.message}",
                    hint=problem.hint,
                )
            if claim is None:
                claim = await self._claim(chat_id)
            text = await prepare()
            policy: IfRunExists = "resume_only" if resume_run_id else "fail"
            run_id = resume_run_id or uuid.uuid4().hex
            if resume_run_id is None:
                await self.settle_pending(chat_id)
            run = LiveRun(chat_id, run_id, agent.name, text)
            run.served_as = self._served_as(agent_name, agent)
            run.resumed = resume_run_id is not None
            start = start or RunStart()
            run.source, run.park, run.context = start.source, start.park, start.context
            run_input: Any = text or ""
            if start.input is not None and resume_run_id is None:
                run_input = start.input
            for content in queued or ():
                run.mailbox.push(content)  # joined the run before this one too late: first here
            options = {**self.run_options, **start.options}
            if start.deps is not None:
                options["deps"] = start.deps
            work = self._work(run, agent, run_input, options, policy, resume_run_id is not None)
            run.claim, claim = claim, None
            parked = self._runs.get(resume_run_id) if resume_run_id is not None else None
            if parked is not None:
                parked.resumed_by = run  # its streams go on with this run, however quick
            self._runs[run_id] = run
            self.live[chat_id] = run
            self.chats.touch(chat_id, text)
            await self._tell("on_start", run)
            run.task = asyncio.ensure_future(work)
            return run
        finally:
            if claim is not None:
                await claim.release()
            self._reserved.discard(chat_id)
            if resume_run_id is not None:
                self._resuming.discard(resume_run_id)

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
            return self._pump_queued(run, events)
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
        return self._pump(run, handle)

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
            if live.accepts_messages():
                if len(live.mailbox) >= self.mailbox_limit:
                    raise MailboxFull(
                        f"chat {chat_id!r} has {len(live.mailbox)} messages waiting for its "
                        "live run already; this one was not sent",
                        hint="wait until the run reads them (at its next step) or stop it, "
                        "then send again",
                    )
                token = await live.mailbox.put(text)  # in the run's checkpoint before 200
                event = {"type": "user_message_queued", "content": text, "token": token}
                return live, await live.publish(event)
            await live.finished.wait()

        async def prepare() -> str:
            return text

        how = await start() if callable(start) else start
        return await self.begin(chat_id, prepare, agent_name=agent_name, start=how), None

    async def _claim(self, chat_id: str, *, brief: bool = False) -> RunLease:
        """Take the chat's claim (a lease on ``lovia-chat:<id>`` in the checkpointer) or
        raise ``ChatBusy``. Every server sharing the stores takes it before it writes to the
        chat, so two servers never rewind, settle or answer one chat at once; a ``brief``
        holder (an edit, not a run) is waited for (``chats.claims``)."""
        return await take_claim(self.chats.checkpointer, chat_id, ttl=self.lease_ttl, brief=brief)

    @contextlib.asynccontextmanager
    async def claimed(self, chat_id: str) -> AsyncIterator[None]:
        """Hold the chat's claim for the block (``ChatBusy`` when a run of it is live): a
        brief hold, which other requests for the chat wait for instead of being refused."""
        await self._after_brief_here(chat_id)
        if chat_id in self.live or chat_id in self._reserved:
            raise ChatBusy(f"chat {chat_id!r} has a live run", hint="stop it first")
        self._reserved.add(chat_id)
        done = self._brief[chat_id] = asyncio.Event()
        try:
            claim = await self._claim(chat_id, brief=True)
            try:
                yield
            finally:
                await claim.release()
        finally:
            self._reserved.discard(chat_id)
            del self._brief[chat_id]
            done.set()

    async def _after_brief_here(self, chat_id: str) -> None:
        """Wait (up to ``BRIEF_WAIT_S``) while this server holds ``chat_id`` briefly."""
        deadline = time.monotonic() + BRIEF_WAIT_S
        while (done := self._brief.get(chat_id)) is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                return  # the caller then finds the chat reserved and refuses
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(done.wait(), left)

    async def _pump_queued(self, run: LiveRun, events: AsyncIterator[dict[str, Any]]) -> None:
        """A run a worker drives: its progress as the queue reads it from the database."""
        try:
            terminal: dict[str, Any] | None = None
            async for data in events:
                if data.get("type") in ("run_completed", "run_failed"):
                    terminal = data
                    break
                await run.publish(data)
            if terminal is not None:
                await self._on_end(run, terminal)
        except Exception as exc:
            _log_end(run, exc)
        finally:
            await self._ended(run)

    async def _pump(self, run: LiveRun, handle: RunHandle) -> None:
        try:
            terminal: dict[str, Any] | None = None
            async for event in handle:
                if isinstance(event, ApprovalRequired) and self._asks_a_person(run, event):
                    event.defer()  # parked in the checkpoint: a person decides on the page
                data = _event_dict(event)
                if event.type == "text_delta":
                    run.partial_text += str(data.get("delta", ""))
                elif event.type in ("message_completed", "turn_started"):
                    run.partial_text = ""
                if event.terminal:
                    last = getattr(getattr(event, "result", None), "last_input_tokens", None)
                    if isinstance(last, int) and isinstance(data.get("result"), dict):
                        data["result"]["usage"] = {
                            **(data["result"].get("usage") or {}),
                            "last_input_tokens": last,  # the size of the last prompt
                        }
                    terminal = data
                    break
                await run.publish(data)
            try:  # the run has let its lease go once its task is done: settling can take it
                await handle.result()
            except Exception as exc:
                _log_end(run, exc)
            if terminal is not None:
                await self._on_end(run, terminal)
        finally:
            await self._ended(run)

    async def _ended(self, run: LiveRun) -> None:
        """A run's task is over: it leaves the live runs, its claim is let go, and a run
        that ended without a terminal event is told to its followers as lost."""
        if self.live.get(run.chat_id) is run:
            del self.live[run.chat_id]
        claim, run.claim = run.claim, None
        if claim is not None:
            await asyncio.shield(claim.release())
        if not run.done:
            await run.publish({"type": "run_failed", "error": _LOST}, last=True)
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
            await self._keep_message(run, terminal)
        self.chats.touch(run.chat_id, run.input_text)
        if late and not self._closing and run.claim is not None:
            follow_up = await self._answer_late(run, late)
            if follow_up is not None:
                terminal = {**terminal, "next_run_id": follow_up.run_id}
        claim, run.claim = run.claim, None
        if claim is not None:  # free before anyone hears of the end: they may send at once
            await claim.release()
        if self.live.get(run.chat_id) is run:
            del self.live[run.chat_id]
        terminal = {
            **terminal,
            "timing": {"finished_at": time.time(), "duration": time.time() - run.started_at},
        }
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
        if self.live.get(run.chat_id) is run:
            del self.live[run.chat_id]
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

    async def _keep_message(self, run: LiveRun, terminal: dict[str, Any]) -> None:
        """A run that failed before its checkpoint held the user's message (its model could
        not even be built): write the message to the chat, marked failed with the error, so
        it does not vanish. A run whose checkpoint has it stays pending (Retry, Keep)."""
        try:
            snapshot = await self.chats.checkpointer.load(run.run_id)
            if snapshot is not None and any(
                isinstance(e, InputEntry) and e.role == "user" for e in snapshot.entries
            ):
                return
            error = terminal.get("error") if isinstance(terminal.get("error"), dict) else None
            await self.settle(
                run.chat_id, run.run_id, "", run.input_text, ended="failed", error=error
            )
        except Exception as exc:  # nothing worse than before: the run failed either way
            log.warning("could not keep the message of the failed run %s: %s", run.run_id, exc)

    def _asks_a_person(self, run: LiveRun, event: ApprovalRequired) -> bool:
        """Whether a call that needs approval waits for a person on the page: yes, unless
        the agent asking has an ``approval_handler`` (it decides, and may defer itself)."""
        if not self.park_approvals or not run.park:
            return False
        name = event.agent_name
        for entry in self.agents.values():
            agent = reachable_agents(entry).get(name or entry.name)
            if agent is not None:
                return agent.approval_handler is None
        return True

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
    ) -> LiveRun:
        """Record a person's decision on a call the chat's parked run waits for, then resume
        the run (an approved call runs once; a rejected one gets its refusal as result).

        ``run_id`` and ``digest`` name what the person was shown: ``ApprovalStale`` when the
        chat's waiting run is another one, or the call of that id now waits with another
        tool or arguments. The chat's claim and the run's lease are taken before the
        decision is written: ``ChatBusy`` when another server drives the chat,
        ``ApprovalConflict`` when the call was decided otherwise or waits for nothing;
        either way nothing was written."""
        parked = await self.chats.pending_head(chat_id)
        if run_id is not None and (parked is None or parked.run_id != run_id):
            now = "no run of the chat waits" if parked is None else f"run {parked.run_id!r} waits"
            raise ApprovalStale(
                f"run {run_id!r} of chat {chat_id!r} no longer waits for a decision on call "
                f"{call_id!r} ({now}); nothing was decided",
                hint="reload the chat and decide on what it shows now",
            )
        if parked is None or not any(p.call_id == call_id for p in parked.pending_approvals):
            raise ApprovalConflict(
                f"chat {chat_id!r} has no call {call_id!r} waiting for a decision",
                hint="it was decided already (and the run went on), or the chat moved on: "
                "reload the chat to see where it stands",
            )
        run_id = parked.run_id
        digests = None if digest is None else {call_id: digest}
        entry = self.entry_agent_for(parked.agent_name)

        async def prepare() -> str | None:
            async with self._holding(chat_id, run_id):
                try:
                    await approvals.decide_holding(  # the lease is ours already
                        self.chats.checkpointer,
                        run_id,
                        {call_id: approve},
                        reason=reason,
                        take_lease=False,
                        digests=digests,
                        # with workers, the job that resumes the run commits with the decision
                        then=None if self.queue is None else self.queue.resumption(run_id),
                    )
                except UserError as exc:
                    if getattr(exc, "code", None) in ("approval_stale", "approval_ambiguous"):
                        raise ApprovalStale(
                            exc.message, hint=exc.hint, code=getattr(exc, "code", None)
                        ) from exc
                    raise ApprovalConflict(
                        f"cannot {'approve' if approve else 'reject'} call {call_id!r} of "
                        f"chat {chat_id!r}: {exc.message}",
                        hint="a decision is final; reload the chat to see where it stands",
                    ) from exc
            return await self.chats.run_title(parked)

        served = self.served_name(entry)
        return await self.begin(chat_id, prepare, agent_name=served, resume_run_id=run_id)

    # -- stopping -----------------------------------------------------------------------------

    async def stop(self, chat_id: str) -> LiveRun | None:
        """Stop the chat's live run and wait until its partial transcript is saved (a run
        that is starting here is waited for, then stopped)."""
        run = self.live.get(chat_id)
        while run is None and chat_id in self._reserved:
            await asyncio.sleep(0.01)
            run = self.live.get(chat_id)
        if run is None:
            return None
        run.stopping = True
        run.token.cancel("stopped by the user")
        await run.finished.wait()
        return run

    async def settle(
        self,
        chat_id: str,
        run_id: str,
        partial_text: str = "",
        input_text: str | None = None,
        *,
        ended: str = "stopped",
        error: dict[str, Any] | None = None,
        late: list[Any] | None = None,
    ) -> list[TranscriptEntry]:
        """Write a run that will not go on to the session as a completed segment:
        dangling tool calls removed, the streamed text kept, ``{"ended": ended}`` as the
        segment's meta (the page marks such an answer); then delete its checkpoint.

        ``ChatBusy`` when another server (or worker) drives the run: it holds the run's lease,
        and settling would write only part of its answer. The settle holds the lease itself,
        so nobody starts driving the run meanwhile."""
        async with self._holding(chat_id, run_id):
            return await self._settle(
                chat_id, run_id, partial_text, input_text, ended, error, late or []
            )

    async def _settle(
        self,
        chat_id: str,
        run_id: str,
        partial_text: str,
        input_text: str | None,
        ended: str,
        error: dict[str, Any] | None = None,
        late: list[Any] | None = None,
    ) -> list[TranscriptEntry]:
        cp = self.chats.checkpointer
        snapshot = await cp.load(run_id)
        entries: list[TranscriptEntry] = list(snapshot.entries) if snapshot is not None else []
        if input_text and not any(isinstance(e, InputEntry) and e.role == "user" for e in entries):
            # the run ended before its checkpoint held the message: the message is kept
            entries.insert(0, InputEntry(role="user", content=input_text))
        if snapshot is not None and snapshot.pending_approvals:
            entries = await self._refuse_parked(snapshot, entries, ended)
        entries = drop_dangling_tool_calls(entries)
        if partial_text.strip():
            entries.append(AssistantTextEntry(content=partial_text))
        # messages sent while it ran that it never saw: kept after it, in order
        entries.extend(InputEntry(role="user", content=content) for content in late or ())
        if entries:
            meta: dict[str, Any] = {"ended": ended}
            if snapshot is not None and snapshot.error and ended != "stopped":
                meta["error"] = snapshot.error
            elif error is not None:
                meta["error"] = error
            await self.chats.session.append(chat_id, entries, run_id=run_id, meta=meta)
        await cp.delete(run_id)
        return entries

    async def _refuse_parked(
        self, snapshot: RunSnapshot, entries: list[TranscriptEntry], ended: str
    ) -> list[TranscriptEntry]:
        """A parked run that will not go on: its calls waiting for a decision are rejected
        (recorded, so a late decider gets a conflict) and answered with the refusal the
        model would have seen, so the kept transcript pairs every call with a result."""
        reason = "stopped" if ended == "stopped" else "the conversation went on without it"
        undecided = [p.call_id for p in snapshot.pending_approvals if p.decision is None]
        if undecided and snapshot.status == "interrupted":
            with contextlib.suppress(UserError):  # decided or gone meanwhile: refused anyway
                await approvals.decide_holding(  # settle holds the run's lease
                    self.chats.checkpointer,
                    snapshot.run_id,
                    dict.fromkeys(undecided, False),
                    reason=reason,
                    take_lease=False,
                )
        parked = {p.call_id: p for p in snapshot.pending_approvals}
        refusals: list[TranscriptEntry] = [
            ToolResultEntry(
                call_id=call.call_id,
                output=f"Tool {call.name} was not approved. Reason: {reason}",
                is_error=True,
            )
            for call in dangling_tool_calls(entries)
            if call.call_id in parked
        ]  # the parked calls are the last turn's: their results follow its other results
        return [*entries, *refusals]

    async def settle_pending(self, chat_id: str, *, ended: str | None = None) -> str | None:
        """Before a new run, keep what an unfinished earlier run of the chat said (marked
        with ``ended``, by default the run's status: ``failed``, ``interrupted``...).

        ``ChatBusy`` when that run is live, here or on another server sharing the stores.
        The caller holds the chat's claim (``claimed`` or ``begin``)."""
        pending = await self.chats.pending_head(chat_id)
        if pending is None:
            return None
        live_here = {r.run_id for r in self.live.values()} | self._resuming
        if pending.run_id in live_here:
            raise _busy(chat_id, pending.run_id, "this server")
        await self.settle(chat_id, pending.run_id, ended=ended or pending.status)
        return pending.run_id

    async def stop_parked(self, chat_id: str) -> str | None:
        """Stop the chat's unfinished run that is not live anywhere: calls waiting for an
        approval are rejected (reason "stopped"), and the run is kept as a stopped answer,
        so no approval is left pending. The caller holds the chat's claim."""
        pending = await self.chats.pending_head(chat_id)
        if pending is None:
            return None
        return await self.settle_pending(
            chat_id, ended="stopped" if pending.pending_approvals else None
        )

    async def delete_chat(self, chat_id: str) -> list[str]:
        """Delete the chat and its runs' checkpoints; ``ChatBusy`` while a run of it is live,
        here or on another server (that server would write the chat back when it ends)."""
        async with self.claimed(chat_id):
            pending = await self.chats.pending_head(chat_id)
            if pending is None:
                return await self.chats.delete(chat_id)
            async with self._holding(chat_id, pending.run_id):
                return await self.chats.delete(chat_id)

    @contextlib.asynccontextmanager
    async def _holding(self, chat_id: str, run_id: str) -> AsyncIterator[None]:
        """Hold ``run_id``'s lease (when the checkpointer has leases) for the block."""
        store = self.chats.checkpointer
        if not isinstance(store, LeaseStore):
            yield  # a custom checkpointer without leases: nothing to check against
            return
        owner = default_owner()
        if not await store.acquire_lease(run_id, owner, self.lease_ttl):
            holder = await store.lease_holder(run_id)
            if holder is not None and holder_is_dead(holder):
                await store.release_lease(run_id, holder)  # its server crashed: take it over
            if not await store.acquire_lease(run_id, owner, self.lease_ttl):
                raise _busy(chat_id, run_id, holder or "another server")
        try:
            yield
        finally:
            await store.release_lease(run_id, owner)

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


def _event_dict(event: Any) -> dict[str, Any]:
    """``event.to_dict()``, with an approval's digest (a tool's images are in its own dict)."""
    data: dict[str, Any] = event.to_dict()
    if isinstance(event, ApprovalRequired):
        data["digest"] = event.digest  # what a decision names to bind to this call
    return data


def _log_end(run: LiveRun, exc: Exception) -> None:
    if isinstance(exc, ApprovalPending):
        log.info("run %s of chat %s waits for an approval", run.run_id, run.chat_id)
    elif not isinstance(exc, RunCancelled):
        log.warning("run %s of chat %s failed: %s", run.run_id, run.chat_id, exc)


def _busy(chat_id: str, run_id: str, where: str) -> ChatBusy:
    return ChatBusy(
        f"chat {chat_id!r} is busy: its run {run_id!r} is live on {where}",
        hint="wait for that run to finish (or stop it where it runs); a crashed server's "
        "run frees itself after its lease_ttl",
    )


_LOST = {"type": "RuntimeError", "message": "the run ended without a terminal event", "hint": None}
NO_MODEL_HINT = (
    "set LOVIA_MODEL (e.g. 'openai:gpt-4.1' with OPENAI_API_KEY, or "
    "'anthropic:claude-sonnet-4-5' with ANTHROPIC_API_KEY), or start 'lovia web --demo'"
)
