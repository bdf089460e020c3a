"""The run driver: the one async object that does a run's I/O, in fixed phases.

    setup     plan (run/plan.py) -> plugins -> history -> system prompt -> input guardrails
    turn      limits -> mailbox -> context view -> model (run/model.py) -> save
              -> tools (run/calls.py: preflight, approval, execute, save per result) -> handoff
    finish    output -> output guardrails -> checkpoint completed -> session append

Resume is the same loop entered with the snapshot's entries: unanswered calls of the last
turn run first (with that turn's number), then the loop goes on. Every event goes through one
``Emitter`` (run/emit.py); ``RunState`` (run/state.py) is the only mutable run state.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import uuid
from typing import Any

from pydantic import TypeAdapter, ValidationError

from .. import events as ev
from ..agent import Agent
from ..approvals import ApprovalChannel, unspent_approvals
from ..context.policy import ContextPolicy, ContextRequest
from ..errors import (
    ApprovalPending,
    ContextOverflowError,
    MaxTurnsExceeded,
    OutputValidationError,
    RunCancelled,
    UserError,
)
from ..guardrails import check_guardrails
from ..hooks import AgentHooks
from ..output import json_candidates, output_instructions, repair_strategy
from ..plugins.base import PluginInstance
from ..providers.base import Provider
from ..providers.registry import resolve_model
from ..reliability import CancelToken, RetryPolicy, RunBudget
from ..run_context import RunContext
from ..steering import Mailbox
from ..stores.checkpoint import CheckpointOptions, RunSnapshot, validate_id
from ..stores.maintenance import keeps_versions
from ..stores.run_lease import RunLease
from ..stores.session import Session
from ..tools import Tool
from ..tracing import (
    NoopTracer,
    link_context,
    model_call_span,
    record_model_usage,
    record_run_end,
    run_span,
)
from ..transcript import (
    AssistantTextEntry,
    InputEntry,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
    dangling_tool_calls,
    entries_to_messages,
    to_entries,
)
from ..usage import Usage
from .calls import ToolPhase
from .emit import Channel, Emitter
from .model import stream_turn
from .persist import RunRecorder
from .plan import Plan, plan, segment_answer
from .result import RunResult
from .resume import find_agent, reachable_agents, replay_agent
from .state import RunState

__all__ = ["RunDriver", "RunOptions"]

log = logging.getLogger("lovia.run")


class RunOptions:
    """The per-call options of ``Runner.run`` / ``Runner.stream`` (checked once)."""

    __slots__ = (
        "budget",
        "cancel_token",
        "checkpoint",
        "context_policy",
        "deps",
        "extra_instructions",
        "mailbox",
        "max_turns",
        "output_type",
        "parent_usage",
        "retry",
        "session",
        "session_id",
        "tracer",
    )

    def __init__(
        self,
        *,
        deps: Any = None,
        output_type: Any = None,
        extra_instructions: str | None = None,
        max_turns: int = 50,
        budget: RunBudget | None = None,
        cancel_token: CancelToken | None = None,
        mailbox: Mailbox | None = None,
        retry: RetryPolicy | None = None,
        context_policy: ContextPolicy | None = None,
        session: Session | None = None,
        session_id: str | None = None,
        checkpoint: CheckpointOptions | None = None,
        tracer: Any = None,
    ) -> None:
        self.deps = deps
        self.output_type = output_type
        self.extra_instructions = extra_instructions
        self.max_turns = max_turns
        self.budget = budget
        self.cancel_token = cancel_token if cancel_token is not None else CancelToken()
        self.mailbox = mailbox if mailbox is not None else Mailbox()
        self.retry = retry
        self.context_policy = context_policy
        self.session = session
        self.session_id = session_id
        self.checkpoint = checkpoint
        self.tracer = tracer if tracer is not None else NoopTracer()
        self.parent_usage: Usage | None = None  # an agent-as-tool sub-run counts in its caller's


class _Tooling:
    """An agent's tools (own, plugins', context policy's, handoffs') resolved once per run."""

    __slots__ = ("by_name", "specs")

    def __init__(self, tools: list[Tool]) -> None:
        self.by_name = {t.name: t for t in tools}
        self.specs = [t.schema() for t in tools]


class RunDriver:
    """Drives one run from setup to its single terminal event."""

    def __init__(
        self,
        agent: Agent,
        input: Any,
        options: RunOptions,
        *,
        channel: Channel | None = None,
        approvals: ApprovalChannel | None = None,
    ) -> None:
        self.entry_agent = agent
        self.input = input
        self.o = options
        self.cancel_token = options.cancel_token
        self.budget = options.budget
        self.checkpoint = options.checkpoint
        self.tracer = options.tracer
        self.approvals = approvals if approvals is not None else ApprovalChannel()
        self.state = RunState(agent)
        self.emitter = Emitter(agent.hooks, self.state, channel)
        self.run_id = self._run_id()
        self.recorder = RunRecorder(
            self.run_id,
            checkpointer=self.checkpoint.checkpointer if self.checkpoint else None,
            session=options.session,
            session_id=options.session_id,
            delete_on_success=bool(self.checkpoint and self.checkpoint.delete_on_success),
        )
        self.lease = RunLease.for_run(self.checkpoint)  # held from before planning to the end
        self.recorder.lease = self.lease
        self.ctx: RunContext[Any] = RunContext(
            deps=options.deps,
            run_id=self.run_id,
            session_id=options.session_id,
            budget=options.budget,
            cancel_token=options.cancel_token,
            mailbox=options.mailbox,
            state=self.state,
            tracer=options.tracer,
        )
        self.handoff_from: Agent | None = None
        self._repairs = 0  # output repairs asked for so far
        self._started = False
        self._providers: dict[int, Provider] = {}
        self._tooling: dict[int, _Tooling] = {}
        self._plugins: dict[int, list[PluginInstance]] = {}
        self._plugin_order: list[PluginInstance] = []
        self._history_read: tuple[list[Any], int | None] | None = None
        self.emitter.bind(self.ctx, self._plugin_hooks)

    def _run_id(self) -> str:
        opts = self.checkpoint
        if opts is None:
            return uuid.uuid4().hex
        if opts.resume_from is not None:
            return opts.run_id or opts.resume_from.run_id
        return opts.run_id or uuid.uuid4().hex

    # -- the whole run ----------------------------------------------------------------------

    async def run(self) -> RunResult:
        self.recorder.tracer = self.tracer
        span_cm: Any = None
        span: Any = None
        try:
            self._check_arguments()
            stored = await self._load()
            if not self._replays_without_lease(stored):
                await self.lease.acquire()
                if self.checkpoint is not None and self.checkpoint.resume_from is None:
                    stored = await self._load()  # what the store holds now that we own it
            span_cm = run_span(
                self.tracer,
                agent=self.entry_agent.name,
                run_id=self.run_id,
                session_id=self.o.session_id,
                resume_link=getattr(stored, "trace", None),
            )
            span = span_cm.__enter__()
            span.set_attribute("resumed", stored is not None and stored.status != "completed")
            self.recorder.trace_link = link_context(self.tracer)
            result = await self._run(stored)
            record_run_end(
                span,
                turns=result.turns,
                total_tokens=result.usage.total_tokens,
                input_tokens=result.usage.input_tokens,
                output_tokens=result.usage.output_tokens,
                tracer=self.tracer,
            )
            return result
        except asyncio.CancelledError:
            if self._started:
                await self.recorder.mark_interrupted(self.state)
                # hooks only: a stream reader that is gone (abandoned handle) cannot take it
                event = ev.RunFailed(RunCancelled("the task running this run was cancelled"))
                for hooks in self.emitter.hook_sets():
                    await hooks.dispatch(event, self.ctx)
            raise
        except BaseException as exc:
            if self._started:
                if isinstance(exc, ApprovalPending):
                    await self.recorder.park(self.state)
                else:
                    await self.recorder.end_badly(self.state, exc)
            if span is not None:
                span.record_exception(exc)
            await self._emit_failed(exc)
            raise
        finally:
            if span_cm is not None:
                span_cm.__exit__(None, None, None)
            await self._close_plugins()
            await self.lease.release()

    def _replays_without_lease(self, stored: RunSnapshot | None) -> bool:
        """A completed run is only replayed (no model, no tools; the session append is
        idempotent), so it needs no lease: replays stay one read."""
        opts = self.checkpoint
        return (
            opts is not None
            and stored is not None
            and stored.status == "completed"
            and opts.resume_from is None
            and opts.if_run_exists in ("resume", "resume_only")
            and not opts.delete_on_success
        )

    async def _load(self) -> RunSnapshot | None:
        opts = self.checkpoint
        if opts is None:
            return None
        if opts.resume_from is not None:
            return opts.resume_from
        snap: RunSnapshot | None = await opts.checkpointer.load(self.run_id)
        return snap

    async def _run(self, loaded: RunSnapshot | None) -> RunResult:
        opts = self.checkpoint
        stored = loaded if opts is not None and opts.resume_from is None else None
        decided = plan(opts, self.run_id, stored)
        if decided.action == "replay":
            assert decided.snapshot is not None
            return await self._replay(decided.snapshot)
        if opts is not None and decided.action == "restart":
            await opts.checkpointer.delete(self.run_id)
        if opts is not None and opts.resume_from is not None and decided.action == "resume":
            # make the store agree with the snapshot the caller holds, so saves append
            # an approval the stored run already used is not used again from a stale copy
            snap = unspent_approvals(opts.resume_from, await opts.checkpointer.load(self.run_id))
            decided = Plan("resume", snap)
            await opts.checkpointer.delete(self.run_id)
            await opts.checkpointer.append(self.run_id, snap.entries, snap.head)
        snapshot = decided.snapshot if decided.action == "resume" else None
        if snapshot is not None:  # an unreachable agent is refused before anything is written
            find_agent(self.entry_agent, snapshot.agent_name)
            if snapshot.turn_agent is not None:
                find_agent(self.entry_agent, snapshot.turn_agent)
        self._started = True  # from here on a failure is recorded in the checkpoint
        if snapshot is None and stored is None and opts is not None:
            replayed = await self._replay_from_session()
            if replayed is not None:
                return replayed
        await self._setup(snapshot)
        self.provider(self.state.agent)  # no model configured: fail before any event
        await self.emit(
            ev.RunStarted(
                self.state.agent,
                run_id=self.run_id,
                session_id=self.o.session_id,
                resumed=snapshot is not None,
            )
        )
        if snapshot is None:
            await self._start_new()
        return await self._loop(resumed=snapshot is not None)

    def _check_arguments(self) -> None:
        o = self.o
        if not isinstance(self.entry_agent, Agent):
            raise UserError(
                f"Runner.run needs an Agent, got {type(self.entry_agent).__name__}",
                hint="pass Agent(name=..., ...) as the first argument",
            )
        if not isinstance(o.max_turns, int) or o.max_turns < 0:
            raise UserError(f"max_turns must be an int >= 0, got {o.max_turns!r}")
        if o.session is not None:
            if o.session_id is None:
                raise UserError(
                    "a session needs a session_id",
                    hint="pass Runner.run(..., session=s, session_id='user-42')",
                )
            for name in ("segments", "load", "append", "clear"):
                if not callable(getattr(o.session, name, None)):
                    raise UserError(
                        f"{type(o.session).__name__} is not a session: it has no {name}()",
                        hint="pass SQLiteSession(path), InMemorySession(), or an object with "
                        "segments/load/append/clear",
                    )
        elif o.session_id is not None:
            # Logged, not a Python warning: 0.9.119 accepts this silently, and a user's suite
            # that turns warnings into errors must keep passing; the log still tells them.
            log.warning(
                "session_id=%r without session=: this run has no memory of earlier runs and "
                "is not remembered; pass session=SQLiteSession(path) too",
                o.session_id,
            )
        if o.session_id is not None:
            validate_id(o.session_id, "session_id")
        if self.checkpoint is not None and not isinstance(self.checkpoint, CheckpointOptions):
            raise UserError(
                f"checkpoint= takes CheckpointOptions, got {type(self.checkpoint).__name__}",
                hint="checkpoint=CheckpointOptions(SQLiteCheckpointer('runs.db'), run_id='job-1')",
            )
        self.all_tools(self.entry_agent)  # two tools with one name fail before any work

    async def _setup(self, snapshot: RunSnapshot | None) -> None:
        state = self.state
        o = self.o
        if snapshot is not None:
            state.agent = find_agent(self.entry_agent, snapshot.agent_name)
            state.entries = list(snapshot.entries)
            state.usage = snapshot.usage.clone()
            state.turn = snapshot.turns
            state.context_state = dict(snapshot.context_state)
            state.started_calls = list(snapshot.started_calls)
            state.pending_approvals = list(getattr(snapshot, "pending_approvals", ()) or ())
            state.budget_state = dict(getattr(snapshot, "budget", None) or {})
            if snapshot.started_at is not None:
                state.started_at = snapshot.started_at
            if self.budget is not None and state.budget_state:
                self.budget.restore(state.budget_state)
            if snapshot.turn_agent is not None:
                state.turn_agent = find_agent(self.entry_agent, snapshot.turn_agent)
            self.recorder.saved = len(state.entries)
        if o.session is not None and o.session_id is not None:
            read, self._history_read = self._history_read, None
            if snapshot is not None or read is None:  # read again on resume: the version moves on
                read = await self._read_history()
            segments, state.session_version = read
            if _conflicted(snapshot):  # its answer never saw the other run: still refused
                state.session_version = snapshot.session_version  # type: ignore[union-attr]
            state.history = [e for seg in segments for e in seg.entries]
            if snapshot is None and segments and segments[-1].meta:
                state.context_state = dict(segments[-1].meta.get("context_state") or {})
        await self._activate_plugins(state.agent)
        await self.render_system()

    async def _start_new(self) -> None:
        state = self.state
        new_input = to_entries(self.input)
        guards = [*self.entry_agent.input_guardrails, *self._plugin_guards("input")]
        if guards:
            # the whole transcript the first model call will see: system, history, new input
            seen = [*state.system_entries, *state.history, *state.entries, *new_input]
            await check_guardrails(guards, entries_to_messages(seen), self.ctx, "input")
        state.entries.extend(new_input)
        await self.save()

    async def render_system(self) -> None:
        """The system entry for the active agent: instructions, fragments, plugins, extra."""
        agent = self.state.agent
        texts = [await agent.render_system_prompt(self.ctx)]
        for inst in self._plugins.get(id(agent), ()):
            if inst.instructions:
                texts.append(inst.instructions)
        if self.o.extra_instructions:
            texts.append(self.o.extra_instructions)
        output_type = self.output_type(agent)
        if output_type is not str and not getattr(
            self.provider(agent), "supports_json_schema", False
        ):  # no native JSON-schema output: the schema goes in the system prompt
            texts.append(output_instructions(output_type))
        text = "\n\n".join(t for t in texts if t)
        self.state.system_entries = [InputEntry(role="system", content=text)] if text else []

    # -- turns ------------------------------------------------------------------------------

    async def _loop(self, *, resumed: bool) -> RunResult:
        state = self.state
        pending = dangling_tool_calls(state.entries) if resumed else []
        if pending:  # a resumed run: finish the interrupted turn first
            state.turn_agent = state.turn_agent or state.agent
            await self.emit(ev.TurnStarted(state.turn_agent, state.turn))
            await self._tools(pending, resumed=True)
        elif resumed and state.turn and isinstance(state.entries[-1], AssistantTextEntry):
            return await self._finish()  # the final answer was saved before a crash
        while True:
            self._check_limits()
            state.turn += 1
            state.turn_agent = state.agent
            await self.emit(ev.TurnStarted(state.agent, state.turn))
            await self._drain_mailbox()
            try:
                message = await self._model_turn()
            except BaseException:
                state.turn -= 1  # a model call that produced nothing is not a turn
                raise
            state.entries.extend(message)
            await self.save()
            await self.emit(ev.MessageCompleted(message))
            if self.budget is not None:
                self.budget.check(state.usage)
            calls = [e for e in message if isinstance(e, ToolCallEntry)]
            if not calls:
                await self.emit(ev.TurnEnded(state.agent, state.turn))
                if await self._ask_for_repair():
                    continue
                return await self._finish()
            await self._tools(calls, resumed=False)

    async def _ask_for_repair(self) -> bool:
        """A final answer that does not fit ``output_type``: when the agent's ``output_repair``
        gives a prompt for it, add that as a user message (the next turn answers it)."""
        agent = self.state.agent
        output_type = self.output_type(agent)
        if output_type is str:
            return False
        try:
            _parse_output(agent, output_type, _final_text(self.state.entries))
            return False
        except OutputValidationError as exc:
            strategy = repair_strategy(agent.output_repair)
            if strategy is None:
                return False  # _finish raises it
            self._repairs += 1
            prompt = strategy.build_prompt(exc, self._repairs)
        if prompt is None:
            return False
        self.state.entries.append(InputEntry(role="user", content=prompt))
        await self.save()
        return True

    async def _tools(self, calls: list[ToolCallEntry], *, resumed: bool) -> None:
        state = self.state
        turn_agent = state.turn_agent or state.agent
        self.handoff_from = None
        await ToolPhase(self, resumed=resumed).run(calls)
        await self.emit(ev.TurnEnded(turn_agent, state.turn))
        if self.handoff_from is not None:
            await self._activate_plugins(state.agent)
            await self.render_system()
            await self.emit(ev.HandoffOccurred(self.handoff_from, state.agent))

    def _check_limits(self) -> None:
        if self.state.turn >= self.o.max_turns:
            raise MaxTurnsExceeded(
                f"the run used all {self.o.max_turns} turns without a final answer",
                hint="raise Runner.run(max_turns=...) or make the task smaller",
            )
        self.cancel_token.check()
        if self.budget is not None:
            self.budget.check(self.state.usage)

    async def _drain_mailbox(self) -> None:
        items = self.o.mailbox.drain_tokens()
        if not items:
            return
        for token, content in items:
            self.state.entries.append(InputEntry(role="user", content=content))
            await self.emit(ev.UserMessageInjected(content, self.state.turn, token=token))
        await self.save()  # drained messages exist nowhere else: keep them before the model call

    async def save(self) -> None:
        await self.recorder.save(self.state)

    async def _model_turn(self) -> list[TranscriptEntry]:
        state = self.state
        agent = state.agent
        provider = self.provider(agent)
        policy = self.policy(agent)
        tooling = self.tooling(agent)
        attempt = 0
        while True:
            view = await policy.prepare(
                ContextRequest(
                    entries=[*state.system_entries, *state.history, *state.entries],
                    state=state.context_state,
                    provider=provider,
                    reported_input_tokens=state.reported_input_tokens,
                    attempt=attempt,
                )
            )
            state.context_state = view.state
            entries = await self._inject_views(view.entries)
            if view.compacted is not None:
                await self.emit(self._compaction_seen(view.compacted))
            model = getattr(provider, "model", None)
            try:
                with model_call_span(
                    self.tracer,
                    model=model,
                    turn=state.turn,
                    provider=getattr(provider, "name", None),
                ) as span:
                    turn = await self._until_cancelled(
                        stream_turn(
                            provider,
                            entries,
                            tools=tooling.specs,
                            agent=agent,
                            output_type=self.output_type(agent),
                            retry=self.o.retry or agent.retry,
                            emit=self.emit,
                            deltas=self.emitter.listening,
                        )
                    )
                    record_model_usage(
                        span,
                        input_tokens=turn.usage.input_tokens,
                        output_tokens=turn.usage.output_tokens,
                        finish_reason=turn.finish_reason,
                        tracer=self.tracer,
                    )
            except ContextOverflowError:
                if attempt:
                    raise
                attempt = 1
                continue
            state.usage = state.usage + turn.usage
            if self.o.parent_usage is not None:
                self.o.parent_usage.add(turn.usage)
            state.reported_input_tokens = turn.usage.input_tokens or None
            state.finish_reason = turn.finish_reason
            result: list[TranscriptEntry] = turn.entries
            return result

    def _compaction_seen(self, event: ev.ContextCompacted) -> ev.ContextCompacted:
        """Name the session on the event; its notice goes into the run's segment meta."""
        if event.session_id is None:
            event.session_id = self.o.session_id
        if event.notice is not None:
            self.state.context_notice = event.notice.to_dict()
        return event

    async def _inject_views(self, entries: list[TranscriptEntry]) -> list[TranscriptEntry]:
        extra: list[TranscriptEntry] = []
        for inst in self._plugins.get(id(self.state.agent), ()):
            for injector in inst.view_injectors:
                got = injector(self.ctx)
                if inspect.isawaitable(got):
                    got = await got
                if got:
                    extra.extend(to_entries(got))
        return [*entries, *extra] if extra else entries

    # -- the end ----------------------------------------------------------------------------

    async def _finish(self) -> RunResult:
        state = self.state
        agent = state.agent
        text = _final_text(state.entries)
        output, stored = _parse_output(agent, self.output_type(agent), text)
        guards = [*agent.output_guardrails, *self._plugin_guards("output")]
        if guards:
            await check_guardrails(guards, output, self.ctx, "output")
        await self.recorder.complete(state, stored)
        result = RunResult(
            output=output,
            entries=list(state.entries),
            usage=state.usage,
            turns=state.turn,
            finish_reason=state.finish_reason,
            final_agent=agent,
            run_id=self.run_id,
            session_id=self.o.session_id,
            last_input_tokens=state.reported_input_tokens,
        )
        await self.emit(ev.RunCompleted(result))
        return result

    async def _replay(self, snap: RunSnapshot) -> RunResult:
        """No model, no hooks, no guardrails; only the terminal event; session re-applied."""
        agent = replay_agent(self.entry_agent, snap.agent_name)
        output = _revive_output(agent, self.output_type(agent), snap.output)
        await self.recorder.finish_replay(snap)
        result = RunResult(
            output=output,
            entries=list(snap.entries),
            usage=snap.usage,
            turns=snap.turns,
            finish_reason=None,
            final_agent=agent,
            run_id=snap.run_id,
            session_id=self.o.session_id,
            replayed=True,
            last_input_tokens=getattr(snap, "last_input_tokens", None),
        )
        await self._send(ev.RunCompleted(result))
        return result

    async def _replay_from_session(self) -> RunResult | None:
        """A run already in the session under this run id (its checkpoint deleted on success)
        is answered from its segment, not run again."""
        o = self.o
        if o.session is None or o.session_id is None or self.checkpoint is None:
            return None
        if self.checkpoint.if_run_exists in ("restart", "fail"):
            return None
        # the run's history when it is not in the session: _setup takes it from here
        self._history_read = await self._read_history()
        for seg in self._history_read[0]:
            if seg.run_id != self.run_id:
                continue
            answer = segment_answer(list(seg.entries))
            if answer is None:
                return None
            agent = self.entry_agent
            output, _ = _parse_output(agent, self.output_type(agent), answer)
            result = RunResult(
                output=output,
                entries=list(seg.entries),
                usage=self.state.usage,
                turns=0,
                finish_reason=None,
                final_agent=agent,
                run_id=self.run_id,
                session_id=o.session_id,
                replayed=True,
            )
            await self._send(ev.RunCompleted(result))
            return result
        return None

    async def _read_history(self) -> tuple[list[Any], int | None]:
        """The session's segments and (a store that keeps one) its version, in one read."""
        session, session_id = self.o.session, self.o.session_id
        assert session is not None and session_id is not None
        if keeps_versions(session):
            history = await session.history(session_id)  # type: ignore[attr-defined]
            return history.segments, history.version
        return await session.segments(session_id), None

    # -- events -----------------------------------------------------------------------------

    async def emit(self, event: ev.Event) -> None:
        await self.emitter.emit(event)

    async def _send(self, event: ev.Event) -> None:
        """To the stream only (replays invoke no hooks)."""
        if self.emitter.channel is not None:
            await self.emitter.channel.send(event)

    async def _emit_failed(self, exc: BaseException) -> None:
        event = ev.RunFailed(exc)
        try:
            if self._started:
                await self.emit(event)
            else:
                await self._send(event)
        except BaseException as send_exc:  # the reader left; the run's own error wins
            log.debug("could not deliver RunFailed: %r", send_exc)

    async def _until_cancelled(self, coro: Any) -> Any:
        """Await ``coro``, stopping it when the cancel token fires (-> ``RunCancelled``)."""
        token = self.cancel_token
        if token.cancelled:
            coro.close()
            token.check()
        task = asyncio.ensure_future(coro)
        remove = token.add_callback(task.cancel)
        try:
            return await task
        except asyncio.CancelledError:
            if token.cancelled and task.cancelled():
                current = asyncio.current_task()
                if current is None or not getattr(current, "cancelling", lambda: 0)():
                    token.check()
            raise
        finally:
            remove()

    # -- plugins ------------------------------------------------------------------------------

    async def _activate_plugins(self, agent: Agent) -> None:
        if id(agent) in self._plugins or not agent.plugins:
            self._plugins.setdefault(id(agent), [])
            return
        instances: list[PluginInstance] = []
        self._plugins[id(agent)] = instances
        for plugin in agent.plugins:
            inst = await plugin.setup(self.ctx)
            if not isinstance(inst, PluginInstance):
                raise UserError(
                    f"plugin {getattr(plugin, 'name', plugin)!r}.setup() returned "
                    f"{type(inst).__name__}, not PluginInstance"
                )
            instances.append(inst)
            self._plugin_order.append(inst)
        self._tooling.pop(id(agent), None)

    def _plugin_hooks(self) -> list[AgentHooks]:
        instances = self._plugins.get(id(self.state.agent))
        if not instances:  # asked for every event: most agents have no plugins
            return []
        return [i.hooks for i in instances if i.hooks]

    def _plugin_guards(self, kind: str) -> list[Any]:
        out: list[Any] = []
        for inst in self._plugins.get(id(self.state.agent), ()):
            out.extend(inst.input_guardrails if kind == "input" else inst.output_guardrails)
        return out

    async def _close_plugins(self) -> None:
        while self._plugin_order:
            inst = self._plugin_order.pop()
            try:
                await inst.aclose()
            except Exception as exc:
                log.warning("a plugin failed to close: %r", exc)

    # -- per-agent resolution (cached for the run) ------------------------------------------

    def provider(self, agent: Agent) -> Provider:
        key = id(agent)
        found = self._providers.get(key)
        if found is None:
            found = self._providers[key] = resolve_model(agent.model)
        return found

    def policy(self, agent: Agent) -> ContextPolicy:
        return self.o.context_policy or agent.context_policy

    def output_type(self, agent: Agent) -> Any:
        return self.o.output_type if self.o.output_type is not None else agent.output_type

    def all_tools(self, agent: Agent) -> list[Tool]:
        tools = agent.all_tools(self.policy(agent))
        plugin_tools = [t for i in self._plugins.get(id(agent), ()) for t in i.tools]
        if plugin_tools:
            names = {t.name for t in tools}
            for t in plugin_tools:
                if t.name in names:
                    raise UserError(
                        f"agent {agent.name!r} has two tools named {t.name!r} (one from a plugin)",
                        hint="rename one of them",
                    )
                names.add(t.name)
            tools = [*tools, *plugin_tools]
        return tools

    def tooling(self, agent: Agent) -> _Tooling:
        key = id(agent)
        found = self._tooling.get(key)
        if found is None:
            found = self._tooling[key] = _Tooling(self.all_tools(agent))
        return found

    def known_agents(self) -> dict[str, Agent]:
        return reachable_agents(self.entry_agent)


def _final_text(entries: list[TranscriptEntry]) -> str:
    """The text of the last model message (the entries after the last tool result/input)."""
    parts: list[str] = []
    for e in reversed(entries):
        if isinstance(e, AssistantTextEntry):
            parts.append(e.content)
        elif isinstance(e, (ToolResultEntry, InputEntry, ToolCallEntry)):
            break
    return "".join(reversed(parts))


_ADAPTERS: dict[Any, TypeAdapter[Any]] = {}


def _adapter(output_type: Any) -> TypeAdapter[Any]:
    found = _ADAPTERS.get(output_type)
    if found is None:
        found = _ADAPTERS[output_type] = TypeAdapter(output_type)
    return found


def _parse_output(agent: Agent, output_type: Any, text: str) -> tuple[Any, Any]:
    """The final output as ``output_type`` and its JSON form for the checkpoint."""
    if output_type is str:
        return text, text
    adapter = _adapter(output_type)
    candidates = json_candidates(text)
    document = next((c for c in candidates if _is_json(c)), candidates[-1])
    try:
        value = adapter.validate_json(document)
    except ValidationError as exc:
        raise OutputValidationError(
            f"the final answer of agent {agent.name!r} does not fit its output_type: "
            f"{exc.errors()[0].get('msg') if exc.errors() else exc}",
            hint="keep Agent(output_repair=True) so the model gets another try, or describe "
            "the expected JSON in the instructions",
            raw=text if len(text) <= 200 else text[:200] + "…",
            output_type_name=getattr(output_type, "__name__", str(output_type)),
        ) from exc
    return value, adapter.dump_python(value, mode="json")


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _revive_output(agent: Agent, output_type: Any, stored: Any) -> Any:
    if output_type is str or stored is None:
        return stored
    try:
        return _adapter(output_type).validate_python(stored)
    except ValidationError as exc:
        raise OutputValidationError(
            f"the stored output no longer fits the output_type of agent {agent.name!r}",
            hint="replay with the agent version that produced it, or restart the run",
        ) from exc


def _conflicted(snapshot: RunSnapshot | None) -> bool:
    """A run whose final session append was refused as a conflict (its head says so)."""
    return (
        snapshot is not None
        and snapshot.status == "failed"
        and (snapshot.error or {}).get("type") == "SessionConflict"
    )
