"""The run driver: the one async object that does a run's I/O, in fixed phases.

    setup     plan (plan.py), or replay (replay.py) -> setup.py: plugins -> history
              -> system prompt -> input guardrails
    turn      limits -> mailbox -> context view and model call (turn.py, model.py) -> save
              -> tools (calls.py: preflight, approval, execute, save per result) -> handoff
    finish    output (output.py) -> output guardrails -> checkpoint completed -> session append

Resume is the same loop entered with the snapshot's entries: unanswered calls of the last
turn run first (with that turn's number), then the loop goes on. Every event goes through one
``Emitter`` (emit.py); ``RunState`` (state.py) is the only mutable run state.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from .. import events as ev
from ..agent import Agent
from ..approvals import ApprovalChannel, unspent_approvals
from ..errors import (
    ApprovalPending,
    MaxTurnsExceeded,
    RunCancelled,
)
from ..guardrails import check_guardrails
from ..run_context import RunContext
from ..stores.checkpoint import RunSnapshot
from ..stores.run_lease import RunLease
from ..stores.run_options import CheckpointOptions
from ..tracing import (
    NoopTracer,
    link_context,
    record_run_end,
    record_run_model,
    run_span,
)
from ..transcript import (
    AssistantTextEntry,
    InputEntry,
    ToolCallEntry,
    TranscriptEntry,
    dangling_tool_calls,
    entry_from_dict,
)
from .agents import AgentKit
from .calls import ToolPhase
from .emit import Channel, Emitter
from .options import RunOptions
from .output import ask_for_repair, final_text, parse_output
from .persist import RunRecorder
from .plan import Plan, plan
from .replay import refused_answer, replay, replay_from_session
from .result import RunResult, run_result
from .resume import find_agent, find_handoff_target
from .setup import before_writes, check_arguments, render_system, setup, start_new
from .state import RunState
from .stored import run_id_for, take
from .turn import model_turn

__all__ = ["RunDriver", "RunOptions"]

log = logging.getLogger("lovia.run")


class RunDriver:
    """Drives one run from setup to its single terminal event."""

    run_span: Any = None  # the open ``run`` span (None untraced)

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
        self.new_input: list[TranscriptEntry] | None = None  # the input read, before any write
        self.o = options
        self.cancel_token = options.cancel_token
        self.budget = options.budget
        given = options.checkpoint  # not CheckpointOptions: check_arguments refuses it
        self.checkpoint = given if isinstance(given, CheckpointOptions) else None
        self.tracer = options.tracer
        self.traced = type(options.tracer) is not NoopTracer  # else spans are skipped
        self.approvals = approvals if approvals is not None else ApprovalChannel()
        self.state = RunState(agent)
        self.emitter = Emitter(agent.hooks, self.state, channel)
        self.run_id = run_id_for(self.checkpoint)
        self.recorder = RunRecorder(
            self.run_id,
            checkpointer=self.checkpoint.checkpointer if self.checkpoint else None,
            session=options.session,
            session_id=options.session_id,
            delete_on_success=bool(self.checkpoint and self.checkpoint.delete_on_success),
        )
        # held from before planning to the end; none without a checkpoint (no owner to name)
        self.lease = (
            RunLease.for_run(self.checkpoint)
            if self.checkpoint is not None
            else RunLease(None, None, owner="-")
        )
        self.recorder.lease = self.lease
        self.saves = self.recorder.checkpointer is not None  # else saves have nothing to write
        self.ctx: RunContext[Any] = RunContext(
            deps=options.deps,
            run_id=self.run_id,
            session_id=options.session_id,
            budget=options.budget,
            cancel_token=options.cancel_token,
            mailbox=options.mailbox,
            usage=self.state.usage,  # (read from ``state``: given so none is built)
            state=self.state,
            tracer=options.tracer,
        )
        self.repairs = 0  # output repairs asked for so far
        self._started = False
        self.history_read: tuple[list[Any], int | None] | None = None  # setup's one read
        kit = self.kit = AgentKit(agent, options, self.ctx)
        self.emitter.bind(self.ctx, kit.plugin_hooks, kit.plugin_order)

    # -- the whole run ----------------------------------------------------------------------

    async def run(self) -> RunResult:
        self.recorder.tracer = self.tracer if self.traced else None  # no events to make
        span_cm: Any = None
        span: Any = None
        try:
            check_arguments(self)
            stored = (
                await take(self.checkpoint, self.run_id, self.lease, self)
                if self.checkpoint is not None
                else None
            )
            if not self.traced:  # the no-op tracer: no span, no link
                return await self._run(stored)
            span_cm = run_span(
                self.tracer,
                agent=self.entry_agent.name,
                run_id=self.run_id,
                session_id=self.o.session_id,
                resume_link=getattr(stored, "trace", None),
            )
            span = self.run_span = span_cm.__enter__()
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
                replayed=result.replayed,
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
            self._unbind_mailbox()
            if span_cm is not None:
                span_cm.__exit__(None, None, None)
            if self.kit.plugin_order or self.kit.owns_providers:
                await self.kit.close()
            if self.lease.active:
                await self.lease.release()

    async def _run(self, loaded: RunSnapshot | None) -> RunResult:
        opts = self.checkpoint
        stored = loaded if opts is not None and opts.resume_from is None else None
        decided = plan(opts, self.run_id, stored)
        if decided.action == "replay":
            assert decided.snapshot is not None
            return await replay(self, decided.snapshot)
        await before_writes(self, decided.action, stored)  # a refused run changes nothing
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
            active = find_agent(self.entry_agent, snapshot.agent_name)
            if snapshot.turn_agent is not None:
                find_agent(self.entry_agent, snapshot.turn_agent)
            if snapshot.pending_handoff is not None:
                find_handoff_target(self.run_id, active, snapshot.pending_handoff)
        self._started = snapshot is None  # a failed replay of a resumed run leaves its head
        if opts is not None and opts.resume_from is None and decided.action != "restart":
            replayed = await replay_from_session(self, snapshot)  # new, or resuming one it holds
            if replayed is not None:
                return replayed
        self._started = True  # from here on a failure is recorded in the checkpoint
        await setup(self, snapshot)
        self._bind_mailbox(snapshot)
        # (no model configured: setup fails before any event) the run span names the model
        if self.run_span is not None:
            record_run_model(self.run_span, self.kit.provider(self.state.agent), self.tracer)
        if self.emitter.heard():
            await self.emit(
                ev.RunStarted(
                    self.state.agent,
                    run_id=self.run_id,
                    session_id=self.o.session_id,
                    resumed=snapshot is not None,
                )
            )
        await start_new(self, snapshot)  # a resumed run's input is guarded again if refused
        if snapshot is None:
            return await self._loop(resumed=False)
        return await self._loop(resumed=True, refused=refused_answer(snapshot))

    def _unbind_mailbox(self) -> None:
        """A put after the run's end writes nothing (a refused ``mailbox=`` has no binding)."""
        unbind = getattr(self.o.mailbox, "_bind", None)
        if unbind is not None:
            unbind(None)

    def _bind_mailbox(self, snapshot: RunSnapshot | None) -> None:
        """Messages the stored run had not read go back to the front of the mailbox; from
        now on ``Mailbox.put`` returns once the checkpoint holds its message."""
        mailbox = self.o.mailbox
        if snapshot is not None and snapshot.head.queued:
            restored = [entry_from_dict(q) for q in snapshot.head.queued]
            mailbox._requeue([e.content for e in restored if isinstance(e, InputEntry)])
        if not self.saves:
            return
        self.recorder.mailbox = mailbox
        mailbox._bind(self.save)

    # -- turns ------------------------------------------------------------------------------

    async def _loop(  # noqa: C901 - a turn's steps in order, the cheap checks inlined
        self, *, resumed: bool, refused: bool = False
    ) -> RunResult:
        """The turns until a final answer. ``refused``: the stored run ended on an answer its
        output guardrails or output type refused; it is not judged again, the model answers
        again after it (as a resume of any failed run continues it)."""
        state = self.state
        if self.budget is not None:
            self.budget.start()
        pending = dangling_tool_calls(state.entries) if resumed else []
        if pending:  # a resumed run: finish the interrupted turn first
            state.turn_agent = state.turn_agent or state.agent
            await self.emit(ev.TurnStarted(state.turn_agent, state.turn))
            await self._tools(pending, resumed=True)
        elif state.pending_handoff is not None:  # the run stopped before the switch
            await self.apply_handoff()
        elif (
            resumed
            and state.turn
            and isinstance(state.entries[-1], AssistantTextEntry)
            and not refused
        ):
            return await self._finish()  # the final answer was saved before a crash
        emitter, mailbox = self.emitter, self.o.mailbox
        while True:
            self._check_limits()
            state.turn += 1
            state.turn_agent = state.agent
            if emitter.heard():
                await self.emit(ev.TurnStarted(state.agent, state.turn))
            if mailbox:  # messages queued for the run
                await self._drain_mailbox()
            try:
                message = await model_turn(self)
            except BaseException:
                state.turn -= 1  # a model call that produced nothing is not a turn
                raise
            state.entries.extend(message)
            calls = [e for e in message if isinstance(e, ToolCallEntry)]
            if self.saves and (calls or not self._answer_ends_run()):
                await self.recorder.save(state)
            if emitter.heard():
                await self.emit(ev.MessageCompleted(message))
            if self.budget is not None:
                self.budget.check(state.usage)
            if not calls:
                if emitter.heard():
                    await self.emit(ev.TurnEnded(state.agent, state.turn))
                answer = final_text(message)
                if self.kit.output_type(state.agent) is not str and await ask_for_repair(
                    self, answer
                ):
                    continue
                return await self._finish(answer)
            await self._tools(calls, resumed=False)

    def _answer_ends_run(self) -> bool:
        """Whether an answer (a turn without tool calls) goes straight to the completed
        save, with nothing awaited between: no one hears the events, no output type to
        parse or repair, no guardrail or plugin to judge it. Its own save is then that one
        (any failure before it records the run with the answer, in ``end_badly``)."""
        agent = self.state.agent
        return (
            not self.emitter.heard()
            and not agent.output_guardrails
            and not self.kit.plugin_order
            and self.kit.output_type(agent) is str
        )

    async def _tools(self, calls: list[ToolCallEntry], *, resumed: bool) -> None:
        state = self.state
        turn_agent = state.turn_agent or state.agent
        await ToolPhase(self, resumed=resumed).run(calls)
        if self.emitter.heard():
            await self.emit(ev.TurnEnded(turn_agent, state.turn))
        if state.pending_handoff is not None:
            await self.apply_handoff()

    async def apply_handoff(self) -> None:
        """Switch to the target of the turn's handoff: its plugins set up (they see it as
        ``ctx.agent``), its system prompt rendered. If either fails, the handing-off agent
        is active again and the transfer stays pending, so a resume retries the switch."""
        state = self.state
        source, target = state.agent, state.pending_handoff
        assert target is not None
        state.agent = target
        try:
            await self.kit.activate_plugins(target)
            await render_system(self)
        except BaseException:
            state.agent = source
            raise
        state.pending_handoff = None
        state.turn_agent = target
        await self.save()  # C3/C11: the head names the agent now active, not the one before
        await self.emit(ev.HandoffOccurred(source, target))

    def _check_limits(self) -> None:
        if self.state.turn >= self.o.max_turns:
            limit = self.o.max_turns
            raise MaxTurnsExceeded(
                f"Run exceeded max_turns={limit} without producing output (it used all "
                f"{limit} turns)",
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

    async def save(self) -> None:  # the hot sites ask ``saves`` first
        if self.saves:
            await self.recorder.save(self.state)

    # -- the end ----------------------------------------------------------------------------

    async def _finish(self, text: str | None = None) -> RunResult:
        """Judge and record the final answer: ``text``, the last turn's, or (a run that
        crashed after saving its answer) the text the stored entries end with."""
        state = self.state
        agent = state.agent
        if text is None:
            text = final_text(state.entries)
        output_type = self.kit.output_type(agent)
        if output_type is str:
            output = stored = text
        else:
            output, stored = parse_output(agent, output_type, text)
        if agent.output_guardrails or self.kit.plugin_order:
            guards = [*agent.output_guardrails, *self.kit.plugin_guards(agent, "output")]
            if guards:
                await check_guardrails(guards, output, self.ctx, "output")
        if self.recorder.checkpointer is not None or self.recorder.session is not None:
            finished = await self.recorder.complete(state, stored)
        else:
            finished = time.time()
        result = run_result(
            output=output,
            entries=list(state.entries),
            usage=state.usage,
            turns=state.turn,
            finish_reason=state.finish_reason,
            final_agent=agent,
            run_id=self.run_id,
            session_id=self.o.session_id,
            last_input_tokens=state.reported_input_tokens,
            started_at=state.started_at,
            finished_at=finished,
        )
        if self.emitter.heard() or result.output == "":  # an empty answer is logged
            await self.emit(ev.RunCompleted(result))
        return result

    # -- events -----------------------------------------------------------------------------

    async def emit(self, event: ev.Event) -> None:
        await self.emitter.emit(event)

    async def send(self, event: ev.Event) -> None:
        """To the stream only (replays invoke no hooks)."""
        if self.emitter.channel is not None:
            await self.emitter.channel.send(event)

    async def _emit_failed(self, exc: BaseException) -> None:
        event = ev.RunFailed(exc)
        try:
            if self._started:
                await self.emit(event)
            else:
                await self.send(event)
        except BaseException as send_exc:  # the reader left; the run's own error wins
            log.debug("could not deliver RunFailed: %r", send_exc)
