"""The tool phase of a turn: preflight each call (cancel, budget, lookup, arguments,
approval), run the ready ones (parallel where allowed), record and save each result.

Every requested call ends with exactly one ``ToolResultEntry``, except a call that was
parked for a durable approval (it waits for the resume) or cancelled while running (a resume
runs it again). A sync tool's call running on its thread when the run is cancelled is waited
for, for a short grace (``tools._threads``): if it returns in time its result is kept.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import time
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from .. import events as ev
from ..errors import ApprovalPending, BudgetExceeded, RunCancelled, UserError
from ..parts import ImagePart
from ..tools import Tool, result_to_text, run_tool
from ..tracing import handoff_span, tool_call_span
from ..transcript import ToolCallEntry, ToolResultEntry
from .approval import OPEN, approval, counted_at_start, reused_text
from .batch import collect
from .effects import call_key, in_call
from .outcome import Outcome, Ready, as_call, batches, failed, load_arguments, rendered, stored_raw
from .turn import until_cancelled

if TYPE_CHECKING:
    from ..agent import Agent
    from .run import Run
    from .state import RunState

__all__ = ["ToolPhase", "batches"]

log = logging.getLogger("lovia.run")

_NOTHING_COUNTED: Counter[str] = Counter()  # a phase's without a budget: never written


class ToolPhase:
    """Runs one turn's calls for a ``Run``."""

    def __init__(self, driver: Run, *, resumed: bool) -> None:
        self.d = driver
        self.state: RunState = driver.state
        self.resumed = resumed
        self.parked: list[ToolCallEntry] = []
        self.earlier: set[str] = set()  # ids of this phase's calls preflighted so far
        if driver.budget is not None:
            self.seen: Counter[str] = Counter()  # call ids preflighted in this phase
            self.counted = counted_at_start(driver.state)  # what the budget counted already
        else:  # nothing to count against: both stay empty (only a budget writes them)
            self.seen = self.counted = _NOTHING_COUNTED

    async def run(self, calls: Sequence[ToolCallEntry]) -> Agent | None:
        """Run ``calls``; returns the agent handed off to (or ``None``). Raises
        ``ApprovalPending`` after the turn's other calls when one was parked."""
        d = self.d
        caller = self.state.turn_agent or self.state.agent
        tooling = d.kit.tooling(caller)
        handed_to: Agent | None = self.state.pending_handoff  # the turn's first handoff wins
        blocked = False
        for group in batches(calls, tooling.by_name) if len(calls) > 1 else (calls,):
            if blocked:
                break
            d.cancel_token.check()
            first = group[0]
            tool = tooling.by_name.get(first.name)
            if tool is not None and tool.handoff_target is not None:
                self._count(first)  # a transfer is a tool call too; over budget, none happens
                handed_to = await self._handoff(first, tool, handed_to)
                continue
            ready: list[Ready] = []
            stop: BaseException | None = None
            for call in group:
                try:
                    item = await self._preflight(call, tooling.by_name.get(call.name))
                except BudgetExceeded as exc:  # calls within the limit still run, then it stops
                    stop = exc
                    break
                if item is None:
                    continue
                if isinstance(item, Ready):
                    ready.append(item)
                else:  # parked
                    self.parked.append(call)
                    if tool is not None and not tool.parallel:
                        blocked = True
            if ready:
                await self._execute(ready)
            if stop is not None:
                raise stop
        if self.parked:
            await self._park()
        return handed_to

    def _count(self, call: ToolCallEntry) -> None:
        """Count ``call`` in the budget and check it (``BudgetExceeded``: it does not start).
        A call counts once: one counted before a stop (parked, in doubt after a crash, or
        stopped by the budget before it started) is not counted again on resume."""
        d = self.d
        self.earlier.add(call.call_id)
        if d.budget is not None:
            self.seen[call.call_id] += 1
            if self.seen[call.call_id] > self.counted[call.call_id]:
                d.budget.record_tool_call()
                self.counted[call.call_id] += 1
            self._keep_count()
            d.budget.check(self.state.usage)

    def _answered(self, call_id: str) -> None:
        """A result for ``call_id`` was recorded: it is no longer open in the count."""
        state = self.state
        if call_id in state.started_calls:
            state.started_calls.remove(call_id)
        if self.counted.get(call_id, 0) > 0:
            self.counted[call_id] -= 1
            self.seen[call_id] = max(self.seen[call_id] - 1, 0)
            self._keep_count()

    def _keep_count(self) -> None:
        """The budget's counters for the head, with the ids of the counted calls that have no
        result yet (left out when there are none, as in a head written before the list)."""
        budget = self.d.budget
        if budget is not None:
            open_ids = sorted(self.counted.elements())
            self.state.budget_state = {**budget.state(), **({OPEN: open_ids} if open_ids else {})}

    # -- preflight -------------------------------------------------------------------------

    async def _preflight(  # noqa: C901 - the gates in order, as documented
        self, call: ToolCallEntry, tool: Tool | None
    ) -> Ready | str | None:
        d, state = self.d, self.state
        d.cancel_token.check()
        reused = call.call_id in self.earlier  # another call of this turn has the same id
        self._count(call)
        if tool is None:
            await self._reject(call, f"Tool {call.name!r} is not available.")
            return None
        if self.resumed and call.call_id in state.started_calls:
            decided = await self._decide_in_doubt(call, tool)
            if decided is not None:
                return None  # its outcome is recorded
        try:
            args = load_arguments(call.arguments or "{}")
        except json.JSONDecodeError as exc:
            if state.finish_reason == "length":
                text = (
                    f"Tool {call.name} arguments are incomplete: the response was cut off at "
                    "the output token limit (finish_reason=length) mid-call."
                )
            else:
                text = f"Invalid JSON in tool arguments: {exc}"
            await self._reject(call, text)
            return None
        if not isinstance(args, dict):
            await self._reject(
                call, f"Invalid tool arguments: expected a JSON object, got {type(args).__name__}."
            )
            return None
        if call.call_id in state.started_calls:
            return Ready(call, tool, args)  # approved before the crash: the approval held
        try:
            needed = tool.requires_approval(args, d.ctx)
            if type(needed) is not bool and inspect.isawaitable(needed):
                needed = await needed
        except (RunCancelled, asyncio.CancelledError):
            raise
        except Exception as exc:
            log.warning("approval check of %s failed: %r; the call is refused", call.name, exc)
            await d.emit(ev.ToolCallFailed(exc, as_call(call)))
            await self._reject(call, f"Tool {call.name} was not approved (approval check failed).")
            return None
        if not needed:
            return Ready(call, tool, args, mark=tool.on_resume != "rerun")
        if reused and any(p.call_id == call.call_id for p in self.parked):
            await self._reject(call, reused_text(call))  # decide() could not tell them apart
            return None
        decision = await approval(self.d, call, reused=reused)
        if decision.verdict == "defer" and reused:  # parked, it would share its id: dropped
            await self._reject(call, reused_text(call))
            return None
        if decision.verdict == "allow":
            return Ready(call, tool, args)
        if decision.verdict == "deny":
            text = f"Tool {call.name} was not approved."
            if decision.reason:
                text += f" Reason: {decision.reason}"
            await self._reject(call, text)
            return None
        return "parked"

    async def _park(self) -> None:
        d, state = self.d, self.state
        calls = [as_call(c) for c in self.parked]
        names = ", ".join(c.name for c in calls)
        raise ApprovalPending(
            f"run {d.run_id!r} waits for approval of {names}",
            hint=(
                "decide with lovia.approvals.decide(checkpointer, run_id, {call_id: True}), "
                "then run the same run_id again"
                if d.checkpoint is not None
                else "this run has no checkpointer, so it cannot be resumed: pass "
                "checkpoint=CheckpointOptions(...) to park runs durably"
            ),
            run_id=d.run_id,
            calls=calls,
            pending=list(state.pending_approvals),
        )

    async def _decide_in_doubt(self, call: ToolCallEntry, tool: Tool) -> Ready | str | None:
        """A call that started before the run stopped and has no result: apply ``on_resume``."""
        d = self.d
        decision: Any = tool.on_resume
        if decision == "rerun":
            return None
        if callable(decision):
            with in_call(d, call):  # the callable may look the call up by its key
                decision = decision(as_call(call), d.ctx)
                if inspect.isawaitable(decision):
                    decision = await decision
        if decision == "rerun":
            return None
        if decision == "fail":
            raise UserError(
                f"tool call {call.call_id!r} ({call.name}) was in flight when the run "
                "stopped and its tool must not run twice",
                hint="check whether it took effect, then record the outcome in a new run",
            )
        if isinstance(decision, Outcome):
            await self.record_and_announce([(call, decision)])
        else:
            await self.record_and_announce(
                [(call, Outcome(result_to_text(decision), raw=decision))]
            )
        return "done"

    async def _reject(self, call: ToolCallEntry, text: str) -> None:
        await self.record_and_announce([(call, Outcome(text, True))])

    # -- execution -------------------------------------------------------------------------

    async def _execute(self, ready: list[Ready]) -> None:
        d, state = self.d, self.state
        new = [r.call.call_id for r in ready if r.call.call_id not in state.started_calls]
        state.started_calls.extend(new)
        now = time.time()
        for r in ready:
            state.time_call_start(r.call.call_id, r.call.name, now)
        # In-doubt calls (and consumed approvals) are known before they start. A batch of
        # unapproved "rerun" calls needs no save of its own: a resume runs such a call again
        # whether or not it had started, and the next save records it anyway.
        if d.saves and (d.budget is not None or any(r.mark for r in ready)):
            await d.save()
        if d.emitter.heard():
            for r in ready:
                await d.emit(ev.ToolCallStarted(as_call(r.call)))
        if len(ready) == 1:  # one call runs in this task: no task, same cancellation
            await self._one(ready[0])
            return
        d.cancel_token.check()  # a cancel heard with ToolCallStarted: no call of it starts
        tasks: dict[asyncio.Future[Outcome], ToolCallEntry] = {
            asyncio.ensure_future(self._call(r)): r.call for r in ready
        }
        await collect(d.cancel_token, self.record_and_announce, tasks)

    async def _call(self, r: Ready) -> Outcome:
        with in_call(self.d, r.call):
            return await self._call_in_scope(r)

    async def _call_in_scope(self, r: Ready) -> Outcome:
        d = self.d
        agent = d.state.agent
        if d.traced:
            with tool_call_span(d.tracer, name=r.tool.name, call_id=r.call.call_id) as span:
                refused, value = await self._attempt(r, agent, span)
            return cast(Outcome, value) if refused else await rendered(r.tool, agent, value, d.ctx)
        try:  # the no-op tracer: no span to open (``_attempt``, inlined)
            value = await run_tool(
                r.tool,
                r.args,
                d.ctx,
                default_retries=agent.default_tool_retries,
                default_timeout=agent.default_tool_timeout,
            )
        except (RunCancelled, asyncio.CancelledError):
            raise
        except Exception as exc:
            return failed(r.tool.name, exc)
        return await rendered(r.tool, agent, value, d.ctx)

    async def _attempt(self, r: Ready, agent: Agent, span: Any) -> tuple[bool, Any]:
        """``(False, what the tool returned)`` or ``(True, the error's Outcome)``."""
        try:
            value = await run_tool(
                r.tool,
                r.args,
                self.d.ctx,
                default_retries=agent.default_tool_retries,
                default_timeout=agent.default_tool_timeout,
            )
        except (RunCancelled, asyncio.CancelledError):
            raise
        except Exception as exc:
            return True, failed(r.tool.name, exc, span)
        return False, value

    async def _one(self, r: Ready) -> None:
        """Run a single call in the run's task. When the token fires the call is cancelled
        (one that finished first keeps its result); a call raising ``RunCancelled`` stays
        without a result and cancels the run."""
        d = self.d
        try:
            outcome = await until_cancelled(d, self._call(r), keep_finished=True)
        except RunCancelled as exc:
            if not d.cancel_token.cancelled:
                d.cancel_token.cancel(exc.message)
            d.cancel_token.check()
            raise
        await self.record_and_announce([(r.call, outcome)])
        if d.cancel_token.cancelled:
            d.cancel_token.check()

    async def record_and_announce(self, results: list[tuple[ToolCallEntry, Outcome]]) -> None:
        """Append each result, save once, then tell hooks and the stream."""
        d, state = self.d, self.state
        for call, outcome in results:
            state.entries.append(
                ToolResultEntry(
                    call_id=call.call_id,
                    output=outcome.output,
                    is_error=outcome.is_error,
                    raw=stored_raw(outcome.raw),
                    parts=outcome.parts,
                )
            )
            self._answered(call.call_id)
            if state.steps:  # its recorded steps are done with
                state.steps.pop(call_key(d, call), None)
            state.time_call_end(call.call_id, time.time(), outcome.is_error)
        if d.saves:
            await d.save()
        if not d.emitter.heard():
            for _, o in results:
                if o.is_error:  # its warning line is wanted
                    break
            else:
                return
        for call, outcome in results:
            if outcome.error is not None:
                await d.emit(ev.ToolCallFailed(outcome.error, as_call(call)))
            await d.emit(
                ev.ToolCallCompleted(
                    as_call(call),
                    outcome.raw if outcome.raw is not None else outcome.output,
                    outcome.is_error,
                    outcome.output,
                    image_stubs(outcome.parts),
                )
            )

    # -- handoffs --------------------------------------------------------------------------

    async def _handoff(self, call: ToolCallEntry, tool: Tool, done: Agent | None) -> Agent | None:
        d, state = self.d, self.state
        if done is not None:
            text = (
                f"Handoff not performed: this turn already transferred to {done.name!r}. "
                "Only the first handoff in a turn takes effect."
            )
            await self.record_and_announce([(call, Outcome(text, True))])
            return done
        target: Agent = tool.handoff_target
        try:
            args = json.loads(call.arguments or "{}")
        except json.JSONDecodeError:
            args = {}
        args = args if isinstance(args, dict) else {}
        reason = args["reason"] if isinstance(args.get("reason"), str) else None
        await d.emit(ev.ToolCallStarted(as_call(call)))
        try:  # on_handoff sees ctx.agent as the agent handing off; if it raises, no transfer
            await tool.invoke(args, d.ctx)
        except (RunCancelled, asyncio.CancelledError):
            raise
        except Exception as exc:
            log.warning("on_handoff of %s failed: %r", tool.name, exc)
            text = f"Tool error: {str(exc) or type(exc).__name__}"
            await self.record_and_announce([(call, Outcome(text, True, raw=text, error=exc))])
            return done
        text = f"Transferred to {target.name}" + (f" ({reason})" if reason else "")
        with (
            tool_call_span(d.tracer, name=tool.name, call_id=call.call_id),
            handoff_span(d.tracer, from_agent=state.agent.name, to_agent=target.name),
        ):
            # the switch itself waits for the turn's other calls (loop.py, apply_handoff);
            # until then the head names the transfer as pending, with the handoff's result
            state.pending_handoff = target
            state.entries.append(ToolResultEntry(call_id=call.call_id, output=text))
            self._answered(call.call_id)
            await d.save()
        await d.emit(ev.ToolCallCompleted(as_call(call), text, False, text))
        return target


def image_stubs(parts: Sequence[Any] | None) -> tuple[dict[str, Any], ...]:
    """``{index, mime_type}`` for each image among a result's parts, numbered among images."""
    images = [p for p in parts or () if isinstance(p, ImagePart)]
    return tuple({"index": n, "mime_type": p.mime_type} for n, p in enumerate(images))
