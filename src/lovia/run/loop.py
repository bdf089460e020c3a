"""The run loop: the one place with mutable run state.

``RunState`` holds everything that changes while a run goes on (active agent, entries, usage,
turn, context state); nothing else in lovia mutates run state. ``RunDriver`` walks fixed
phases and calls ``RunRecorder`` at fixed points:

    setup     plan (new / resume / replay) -> history -> system prompt -> input guardrails
    turn      limits -> context view -> model -> save -> tools (save per result) -> handoff
    finish    output -> output guardrails -> checkpoint completed -> session append

Resume is the same loop entered with the snapshot's entries: dangling calls of the last turn
run first (with that turn's number), then the loop goes on (C10).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter, ValidationError

from .. import events as ev
from ..agent import Agent
from ..context.policy import ContextPolicy, ContextRequest
from ..errors import (
    ContextOverflowError,
    MaxTurnsExceeded,
    OutputValidationError,
    RunCancelled,
    UserError,
)
from ..guardrails import check_guardrails
from ..hooks import AgentHooks
from ..providers.base import Provider
from ..providers.registry import resolve_model
from ..stores.checkpoint import CheckpointOptions, RunSnapshot, validate_id
from ..stores.maintenance import keeps_versions
from ..stores.session import Session
from ..tools import Tool, result_to_text, run_tool, truncate_output
from ..transcript import (
    AssistantTextEntry,
    InputEntry,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
    dangling_tool_calls,
    to_entries,
)
from ..usage import Usage
from .context import CancelToken, RunContext
from .lease import RunLease
from .model import stream_turn
from .persist import RunRecorder
from .result import RunResult
from .resume import find_agent, replay_agent

__all__ = ["RunDriver", "RunState"]

log = logging.getLogger("lovia.run")
Sink = Callable[[ev.RunEvent], None]


class RunState:
    """The mutable state of one run (owned by its ``RunDriver``)."""

    __slots__ = (
        "agent",
        "context_state",
        "entries",
        "finish_reason",
        "history",
        "reported_input_tokens",
        "session_version",
        "started_calls",
        "system_entries",
        "turn",
        "turn_agent",
        "usage",
    )

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.usage = Usage()
        self.turn = 0
        self.system_entries: list[TranscriptEntry] = []
        self.history: list[TranscriptEntry] = []
        self.entries: list[TranscriptEntry] = []
        self.context_state: dict[str, Any] = {}
        self.finish_reason: str | None = None
        self.reported_input_tokens: int | None = None
        self.started_calls: list[str] = []
        self.session_version: int | None = None  # the history's, when the session keeps one
        self.turn_agent: Agent | None = None  # who asked for this turn's calls (C10, C11)


class _Tooling:
    """An agent's tools under one context policy, resolved once per run."""

    __slots__ = ("by_name", "specs")

    def __init__(self, tools: list[Tool]) -> None:
        self.by_name = {t.name: t for t in tools}
        self.specs = [t.schema() for t in tools]


class RunDriver:
    """Drives one ``Runner.run`` call from setup to its single terminal event."""

    def __init__(
        self,
        agent: Agent,
        input: Any,
        *,
        deps: Any = None,
        max_turns: int = 50,
        cancel_token: CancelToken | None = None,
        context_policy: ContextPolicy | None = None,
        session: Session | None = None,
        session_id: str | None = None,
        checkpoint: CheckpointOptions | None = None,
        sink: Sink | None = None,
    ) -> None:
        self.entry_agent = agent
        self.input = input
        self.deps = deps
        self.max_turns = max_turns
        self.cancel_token = cancel_token or CancelToken()
        self.policy_override = context_policy
        self.session = session
        self.session_id = session_id
        self.checkpoint = checkpoint
        self.sink = sink
        self.state = RunState(agent)
        self.recorder: RunRecorder | None = None
        self.lease = RunLease.for_run(checkpoint)  # held from before _plan to the very end
        self.ctx: RunContext[Any] | None = None
        self._providers: dict[int, Provider] = {}
        self._tooling: dict[int, _Tooling] = {}
        self._listening = sink is not None or agent.hooks is not None

    # -- the whole run ----------------------------------------------------------------------

    async def run(self) -> RunResult:
        try:
            await self.lease.acquire()
            return await self._run()
        except asyncio.CancelledError:
            if self.recorder is not None:
                await self.recorder.mark_interrupted(self.state)
            self._send(ev.RunFailed(RunCancelled("the task running this run was cancelled")))
            raise
        except BaseException as exc:
            if self.recorder is not None and self.ctx is not None:
                await self.recorder.end_badly(self.state, exc)
            await self._emit_failed(exc)
            raise
        finally:
            await self.lease.release()

    async def _run(self) -> RunResult:
        self._check_arguments()
        snapshot, run_id = await self._plan()
        if snapshot is not None and snapshot.status == "completed":
            return await self._replay(snapshot)
        if snapshot is not None and not snapshot.entries:
            snapshot = None  # it failed before its input was saved: start it with this input
        await self._setup(run_id, snapshot)
        self.provider(self.state.agent)  # no model configured: fail before any event
        await self._emit(
            ev.RunStarted(run_id, self.state.agent.name, self.session_id, snapshot is not None)
        )
        if snapshot is None:
            await self._start_new()
        return await self._loop(resumed=snapshot is not None)

    def _check_arguments(self) -> None:
        if not isinstance(self.entry_agent, Agent):
            raise UserError(
                f"Runner.run needs an Agent, got {type(self.entry_agent).__name__}",
                hint="pass Agent(name=..., ...) as the first argument",
            )
        if not isinstance(self.max_turns, int) or self.max_turns < 1:
            raise UserError(f"max_turns must be a positive int, got {self.max_turns!r}")
        if self.session is not None:
            if self.session_id is None:
                raise UserError(
                    "a session needs a session_id",
                    hint="pass Runner.run(..., session=s, session_id='user-42')",
                )
            for name in ("segments", "load", "append", "clear"):
                if not callable(getattr(self.session, name, None)):
                    raise UserError(
                        f"{type(self.session).__name__} is not a session: it has no {name}()",
                        hint="pass SQLiteSession(path), InMemorySession(), or an object with "
                        "segments/load/append/clear",
                    )
        if self.session_id is not None:
            validate_id(self.session_id, "session_id")
        self.all_tools(self.entry_agent)  # two tools with one name fail before any work

    async def _plan(self) -> tuple[RunSnapshot | None, str]:
        """Decide new / resume / replay under ``if_run_exists`` (C5)."""
        opts = self.checkpoint
        if opts is None:
            return None, uuid.uuid4().hex
        cp = opts.checkpointer
        run_id = opts.run_id or uuid.uuid4().hex
        if opts.resume_from is not None:
            snap = opts.resume_from
            if snap.status != "completed":
                # make the store agree with the snapshot the caller holds, so saves append
                await cp.delete(run_id)
                await cp.append(run_id, snap.entries, snap.head)
            return snap, run_id
        snapshot = await cp.load(run_id)
        policy = opts.if_run_exists
        if snapshot is None:
            if policy == "resume_only":
                raise UserError(
                    f"no stored run {run_id!r} to resume",
                    hint="use if_run_exists='resume' to start it when it does not exist",
                )
            return None, run_id
        if policy == "fail":
            raise UserError(
                f"run {run_id!r} already exists ({snapshot.status})",
                hint="use a new run_id, or if_run_exists='resume' / 'restart'",
            )
        if policy == "restart":
            await cp.delete(run_id)
            return None, run_id
        return snapshot, run_id

    async def _setup(self, run_id: str, snapshot: RunSnapshot | None) -> None:
        state = self.state
        opts = self.checkpoint
        if snapshot is not None:
            state.agent = find_agent(self.entry_agent, snapshot.agent_name)
            state.entries = list(snapshot.entries)
            state.usage = snapshot.usage
            state.turn = snapshot.turns
            state.context_state = dict(snapshot.context_state)
            state.started_calls = list(snapshot.started_calls)
            if snapshot.turn_agent is not None:
                state.turn_agent = find_agent(self.entry_agent, snapshot.turn_agent)
        self.recorder = RunRecorder(
            run_id,
            checkpointer=opts.checkpointer if opts else None,
            session=self.session,
            session_id=self.session_id,
            delete_on_success=bool(opts and opts.delete_on_success),
            saved=len(state.entries),
            lease=self.lease,
        )
        self.ctx = RunContext(
            deps=self.deps,
            run_id=run_id,
            session_id=self.session_id,
            cancel_token=self.cancel_token,
            state=state,
        )
        if self.session is not None and self.session_id is not None:
            if keeps_versions(self.session):  # read again on resume: the version moves on
                history = await self.session.history(self.session_id)  # type: ignore[attr-defined]
                segments, state.session_version = history.segments, history.version
            else:
                segments = await self.session.segments(self.session_id)
            state.history = [e for seg in segments for e in seg.entries]
            if snapshot is None and segments and segments[-1].meta:
                state.context_state = dict(segments[-1].meta.get("context_state") or {})
        await self._render_system()

    async def _start_new(self) -> None:
        state = self.state
        assert self.ctx is not None and self.recorder is not None
        new_input = to_entries(self.input)
        await check_guardrails(self.entry_agent.input_guardrails, new_input, self.ctx, "input")
        state.entries.extend(new_input)
        await self.recorder.save(state)

    async def _render_system(self) -> None:
        assert self.ctx is not None
        instructions = self.state.agent.instructions
        if callable(instructions):
            text = instructions(self.ctx)
            if inspect.isawaitable(text):
                text = await text
        else:
            text = instructions
        if not isinstance(text, str):
            raise UserError(
                f"instructions of agent {self.state.agent.name!r} returned "
                f"{type(text).__name__}, not str"
            )
        self.state.system_entries = [InputEntry(role="system", content=text)] if text else []

    # -- turns ------------------------------------------------------------------------------

    async def _loop(self, *, resumed: bool) -> RunResult:
        state = self.state
        pending = dangling_tool_calls(state.entries) if resumed else []
        if pending:  # a resumed run: finish the interrupted turn first (C10)
            await self._tools_phase(pending, resumed=True)
            await self._emit(ev.TurnEnded(state.turn))
        elif resumed and state.turn and isinstance(state.entries[-1], AssistantTextEntry):
            return await self._finish()  # the final answer was saved before a crash
        while True:
            if self.cancel_token.cancelled:
                raise RunCancelled(self._cancel_message())
            if state.turn >= self.max_turns:
                raise MaxTurnsExceeded(
                    f"the run used all {self.max_turns} turns without a final answer",
                    hint="raise Runner.run(max_turns=...) or make the task smaller",
                )
            state.turn += 1
            state.turn_agent = state.agent
            await self._emit(ev.TurnStarted(state.turn, state.agent.name))
            try:
                message = await self._model_turn()
            except BaseException:
                state.turn -= 1  # a model call that produced nothing is not a turn
                raise
            state.entries.extend(message)
            await self._save()
            await self._emit(ev.MessageCompleted(message))
            calls = [e for e in message if isinstance(e, ToolCallEntry)]
            if not calls:
                await self._emit(ev.TurnEnded(state.turn))
                return await self._finish()
            await self._tools_phase(calls, resumed=False)
            await self._emit(ev.TurnEnded(state.turn))

    async def _save(self) -> None:
        assert self.recorder is not None
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
            if view.compacted is not None:
                await self._emit(view.compacted)
            try:
                turn = await self._until_cancelled(
                    stream_turn(
                        provider,
                        view.entries,
                        tools=tooling.specs,
                        agent=agent,
                        on_delta=self._on_delta if self._listening else None,
                    )
                )
            except ContextOverflowError:
                if attempt:
                    raise
                attempt = 1
                continue
            state.usage = state.usage + turn.usage
            state.reported_input_tokens = turn.usage.input_tokens or None
            state.finish_reason = turn.finish_reason
            entries: list[TranscriptEntry] = turn.entries
            return entries

    async def _on_delta(self, event: ev.RunEvent) -> None:
        await self._emit(event)

    # -- tools ------------------------------------------------------------------------------

    async def _tools_phase(self, calls: Sequence[ToolCallEntry], *, resumed: bool) -> None:
        state = self.state
        tooling = self.tooling(state.turn_agent or state.agent)  # the caller's tools
        handed_to: Agent | None = None
        for group in _batches(calls, tooling.by_name):
            if self.cancel_token.cancelled:
                raise RunCancelled(self._cancel_message())
            first = group[0]
            tool = tooling.by_name.get(first.name)
            if tool is not None and tool.handoff_target is not None:
                handed_to = await self._handoff(first, tool, handed_to)
                continue
            await self._run_group(group, tooling, resumed=resumed)

    async def _handoff(self, call: ToolCallEntry, tool: Tool, done: Agent | None) -> Agent:
        state = self.state
        if done is not None:
            outcome = ToolOutcome(f"Not transferred: this turn already handed off to {done.name}.")
            self._record(call, outcome)
            await self._save()
            return done
        target: Agent = tool.handoff_target
        await self._emit(ev.ToolCallStarted(call))
        previous = state.agent
        state.agent = target
        self._record(call, ToolOutcome(f"Transferred to {target.name}."))
        await self._save()  # the head now names the new agent, with the handoff's result
        await self._render_system()
        await self._emit_completed(call)
        await self._emit(ev.HandoffOccurred(previous.name, target.name))
        return target

    async def _run_group(
        self, group: list[ToolCallEntry], tooling: _Tooling, *, resumed: bool
    ) -> None:
        """Run one batch of calls with the tools of the agent that asked for them."""
        state = self.state
        runs: list[tuple[ToolCallEntry, Tool | None]] = [
            (c, tooling.by_name.get(c.name)) for c in group
        ]
        if resumed:
            runs = await self._decide_resumed(runs)
            if not runs:
                return
        # a resumed in-doubt call is listed already; listing it twice would leave it stale
        new = [c.call_id for c, _ in runs if c.call_id not in state.started_calls]
        state.started_calls.extend(new)
        if any(t is not None and t.on_resume != "rerun" for _, t in runs):
            await self._save()  # in-doubt calls are known before they start
        for call, _ in runs:
            await self._emit(ev.ToolCallStarted(call))
        tasks: dict[asyncio.Future[ToolOutcome], ToolCallEntry] = {
            asyncio.ensure_future(self._call_tool(c, t, tooling)): c for c, t in runs
        }
        await self._collect(tasks)

    async def _collect(self, tasks: dict[asyncio.Future[ToolOutcome], ToolCallEntry]) -> None:
        """Record results as tools finish; on cancellation keep finished ones, cancel the rest."""
        loop = asyncio.get_running_loop()
        stop: asyncio.Future[None] = loop.create_future()

        def wake() -> None:
            if not stop.done():
                stop.set_result(None)

        remove = self.cancel_token.add_callback(wake)
        pending: set[asyncio.Future[Any]] = set(tasks)
        cancelled = False
        try:
            while pending:
                done, pending = await asyncio.wait(
                    pending | {stop}, return_when=asyncio.FIRST_COMPLETED
                )
                pending.discard(stop)
                if stop.done() and pending:
                    await asyncio.sleep(0)  # a tool that cancelled and returned keeps its result
                    done |= {t for t in pending if t.done()}
                    pending -= done
                cancelled = await self._record_done(done, tasks) or cancelled
                if stop.done() or cancelled:
                    break
        finally:
            remove()
            for t in pending:
                t.cancel()
            if pending:
                await asyncio.wait(pending)
        if cancelled or self.cancel_token.cancelled:
            raise RunCancelled(self._cancel_message())

    async def _record_done(
        self,
        done: set[asyncio.Future[Any]],
        tasks: dict[asyncio.Future[ToolOutcome], ToolCallEntry],
    ) -> bool:
        finished = [t for t in tasks if t in done]  # call order, not completion order
        recorded: list[ToolCallEntry] = []
        cancelled = False
        for task in finished:
            exc = task.exception()
            if isinstance(exc, RunCancelled):
                cancelled = True  # its call stays without a result
                self.cancel_token.cancel(exc.message)
                continue
            if exc is not None:
                raise exc
            self._record(tasks[task], task.result())
            recorded.append(tasks[task])
        if recorded:
            await self._save()
            for call in recorded:
                await self._emit_completed(call)
        return cancelled

    async def _call_tool(
        self, call: ToolCallEntry, tool: Tool | None, tooling: _Tooling
    ) -> ToolOutcome:
        if tool is None:
            names = ", ".join(sorted(tooling.by_name)) or "none"
            return ToolOutcome(f"unknown tool {call.name!r}; available tools: {names}", True)
        assert self.ctx is not None
        outcome = await _execute(tool, self.ctx, call.arguments)
        limit = tool.max_output_chars or self.state.agent.max_tool_output_chars
        if len(outcome.output) > limit:
            outcome = ToolOutcome(truncate_output(outcome.output, limit), outcome.is_error)
        return _storable(outcome)

    async def _decide_resumed(
        self, runs: list[tuple[ToolCallEntry, Tool | None]]
    ) -> list[tuple[ToolCallEntry, Tool | None]]:
        """Apply each tool's ``on_resume`` to calls that may have run before the crash."""
        assert self.ctx is not None
        keep: list[tuple[ToolCallEntry, Tool | None]] = []
        in_doubt = set(self.state.started_calls)
        for call, tool in runs:
            if tool is None or tool.on_resume == "rerun" or call.call_id not in in_doubt:
                keep.append((call, tool))
                continue
            decision: Any = tool.on_resume
            if callable(decision):
                decision = decision(call, self.ctx)
                if inspect.isawaitable(decision):
                    decision = await decision
            if decision == "rerun":
                keep.append((call, tool))
            elif decision == "fail":
                raise UserError(
                    f"tool call {call.call_id!r} ({call.name}) was in flight when the run "
                    "stopped and its tool must not run twice",
                    hint="check whether it took effect, then record the outcome in a new run",
                )
            else:
                outcome = (
                    decision if isinstance(decision, ToolOutcome) else ToolOutcome(str(decision))
                )
                self._record(call, outcome)
                await self._save()
                await self._emit_completed(call)
        return keep

    def _record(self, call: ToolCallEntry, outcome: ToolOutcome) -> None:
        state = self.state
        state.entries.append(
            ToolResultEntry(call_id=call.call_id, output=outcome.output, is_error=outcome.is_error)
        )
        if call.call_id in state.started_calls:
            state.started_calls.remove(call.call_id)

    async def _emit_completed(self, call: ToolCallEntry) -> None:
        if not self._listening:
            return
        result = self.state.entries[-1]
        for e in reversed(self.state.entries):
            if isinstance(e, ToolResultEntry) and e.call_id == call.call_id:
                result = e
                break
        assert isinstance(result, ToolResultEntry)
        await self._emit(ev.ToolCallCompleted(call, result, result.output, result.is_error))

    # -- the end ----------------------------------------------------------------------------

    async def _finish(self) -> RunResult:
        state = self.state
        assert self.ctx is not None and self.recorder is not None
        agent = state.agent
        text = _final_text(state.entries)
        output, stored = _parse_output(agent, text)
        await check_guardrails(agent.output_guardrails, output, self.ctx, "output")
        await self.recorder.complete(state, stored)
        result = RunResult(
            output=output,
            entries=list(state.entries),
            usage=state.usage,
            turns=state.turn,
            finish_reason=state.finish_reason,
            final_agent=agent,
            run_id=self.recorder.run_id,
            session_id=self.session_id,
        )
        await self._emit(ev.RunCompleted(result))
        return result

    async def _replay(self, snap: RunSnapshot) -> RunResult:
        """C8: no model, no hooks, no guardrails; only the terminal event; session re-applied."""
        agent = replay_agent(self.entry_agent, snap.agent_name)
        output = _revive_output(agent, snap.output)
        self.recorder = RunRecorder(
            snap.run_id,
            checkpointer=self.checkpoint.checkpointer if self.checkpoint else None,
            session=self.session,
            session_id=self.session_id,
            delete_on_success=bool(self.checkpoint and self.checkpoint.delete_on_success),
        )
        await self.recorder.finish_replay(snap)
        result = RunResult(
            output=output,
            entries=list(snap.entries),
            usage=snap.usage,
            turns=snap.turns,
            finish_reason=None,
            final_agent=agent,
            run_id=snap.run_id,
            session_id=self.session_id,
            replayed=True,
        )
        self._send(ev.RunCompleted(result))
        return result

    # -- events -----------------------------------------------------------------------------

    def _hook_sets(self) -> list[AgentHooks]:
        out: list[AgentHooks] = []
        if self.entry_agent.hooks is not None:
            out.append(self.entry_agent.hooks)
        active = self.state.agent.hooks
        if active is not None and active is not self.entry_agent.hooks:
            out.append(active)
        return out

    async def _emit(self, event: ev.RunEvent) -> None:
        if not self._listening and self.state.agent.hooks is None:
            return
        assert self.ctx is not None
        for hooks in self._hook_sets():
            await hooks.dispatch(event, self.ctx)
        self._send(event)

    def _send(self, event: ev.RunEvent) -> None:
        if self.sink is not None:
            self.sink(event)

    async def _emit_failed(self, exc: BaseException) -> None:
        event = ev.RunFailed(exc)
        if self.ctx is not None:
            for hooks in self._hook_sets():
                try:
                    await hooks.dispatch(event, self.ctx)
                except Exception as hook_exc:  # the run's own error wins
                    log.warning("a RunFailed hook raised: %r", hook_exc)
        self._send(event)

    def _cancel_message(self) -> str:
        reason = self.cancel_token.reason
        return f"the run was cancelled: {reason}" if reason else "the run was cancelled"

    async def _until_cancelled(self, coro: Any) -> Any:
        """Await ``coro``, stopping it when the cancel token fires (-> ``RunCancelled``)."""
        token = self.cancel_token
        if token.cancelled:
            coro.close()
            raise RunCancelled(self._cancel_message())
        task = asyncio.ensure_future(coro)
        remove = token.add_callback(task.cancel)
        try:
            return await task
        except asyncio.CancelledError:
            if token.cancelled and task.cancelled():
                current = asyncio.current_task()
                if current is None or not current.cancelling():
                    raise RunCancelled(self._cancel_message()) from None
            raise
        finally:
            remove()

    # -- per-agent resolution (cached for the run) ------------------------------------------

    def provider(self, agent: Agent) -> Provider:
        key = id(agent)
        found = self._providers.get(key)
        if found is None:
            found = self._providers[key] = resolve_model(agent.model)
        return found

    def policy(self, agent: Agent) -> ContextPolicy:
        return self.policy_override or agent.context_policy

    def all_tools(self, agent: Agent) -> list[Tool]:
        return agent.all_tools(self.policy(agent))

    def tooling(self, agent: Agent) -> _Tooling:
        key = id(agent)
        found = self._tooling.get(key)
        if found is None:
            found = self._tooling[key] = _Tooling(self.all_tools(agent))
        return found


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    output: str
    is_error: bool = False


async def _execute(tool: Tool, ctx: RunContext[Any], arguments: str) -> ToolOutcome:
    try:
        args = json.loads(arguments or "{}")
    except json.JSONDecodeError as exc:
        return ToolOutcome(f"Invalid JSON in tool arguments: {exc}", True)
    if not isinstance(args, dict):
        return ToolOutcome(
            f"Invalid tool arguments: expected a JSON object, got {type(args).__name__}.", True
        )
    try:
        value = await run_tool(tool, args, ctx)
    except RunCancelled:
        raise
    except Exception as exc:
        return ToolOutcome(f"Tool error: {str(exc) or type(exc).__name__}", True)
    return ToolOutcome(result_to_text(value))


def _storable(outcome: ToolOutcome) -> ToolOutcome:
    """Escape lone surrogates (text decoded with ``surrogateescape``, odd file names): UTF-8
    JSON cannot hold them, so the next save would fail, and fail again on every resume."""
    try:
        outcome.output.encode("utf-8")
    except UnicodeEncodeError:
        text = outcome.output.encode("utf-8", "backslashreplace").decode("utf-8")
        return ToolOutcome(text, outcome.is_error)
    return outcome


def _batches(calls: Sequence[ToolCallEntry], tools: dict[str, Tool]) -> list[list[ToolCallEntry]]:
    """Group calls: runs of parallel tools together; a sequential tool or handoff alone."""
    groups: list[list[ToolCallEntry]] = []
    current: list[ToolCallEntry] = []
    for call in calls:
        tool = tools.get(call.name)
        alone = tool is not None and (not tool.parallel or tool.handoff_target is not None)
        if alone:
            if current:
                groups.append(current)
                current = []
            groups.append([call])
        else:
            current.append(call)
    if current:
        groups.append(current)
    return groups


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


def _parse_output(agent: Agent, text: str) -> tuple[Any, Any]:
    """The final output as ``output_type`` and its JSON form for the checkpoint."""
    if agent.output_type is str:
        return text, text
    adapter = _adapter(agent.output_type)
    try:
        value = adapter.validate_json(_strip_fences(text))
    except ValidationError as exc:
        raise OutputValidationError(
            f"the final answer of agent {agent.name!r} does not fit its output_type: "
            f"{exc.errors()[0].get('msg') if exc.errors() else exc}",
            hint="describe the expected JSON in the instructions, or use a provider that "
            "supports JSON schema output",
        ) from exc
    return value, adapter.dump_python(value, mode="json")


def _revive_output(agent: Agent, stored: Any) -> Any:
    if agent.output_type is str or stored is None:
        return stored
    try:
        return _adapter(agent.output_type).validate_python(stored)
    except ValidationError as exc:
        raise OutputValidationError(
            f"the stored output no longer fits the output_type of agent {agent.name!r}",
            hint="replay with the agent version that produced it, or restart the run",
        ) from exc


def _strip_fences(text: str) -> str:
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.split("\n", 1)[1] if "\n" in stripped else ""
        if stripped.rstrip().endswith("```"):
            stripped = stripped.rstrip()[:-3]
    return stripped
