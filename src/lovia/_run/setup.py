"""A run's setup phase: arguments checked, the resumed snapshot or the session's history
loaded into the run state, plugins set up, the system prompt rendered, and a new run's input
guarded and saved."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import warnings
from typing import TYPE_CHECKING

from ..errors import UserError, UserTypeError
from ..guardrails import check_guardrails
from ..output import output_instructions
from ..reliability import CancelToken, RunBudget
from ..steering import Mailbox
from ..stores.checkpoint import RunSnapshot, validate_id
from ..stores.run_options import INPUT_KEPT, CheckpointOptions
from ..stores.sqlite_session import SQLiteSession
from ..transcript import (
    InputEntry,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
    entries_to_messages,
    to_entries,
)
from .replay import conflicted, read_history, refuse_if_in_session, refuse_if_settled
from .resume import find_agent, find_handoff_target

if TYPE_CHECKING:
    from .run import Run

__all__ = [
    "before_writes",
    "check_arguments",
    "guard_input",
    "render_system",
    "setup",
    "start_new",
]

log = logging.getLogger("lovia.run")

_OWN_DIRS = tuple(  # lovia's package and asyncio's
    os.path.dirname(path) + os.sep for path in (os.path.dirname(__file__), asyncio.__file__ or "")
)


def _callers_level() -> int:
    """The ``stacklevel`` that points a warning raised by our caller at the first frame
    outside lovia and asyncio: the user's ``Runner.run``/``run_sync`` line (for a streamed
    run, the user's line that started the event loop); 2, our caller's caller, if none."""
    frame = sys._getframe(2)  # the caller of whoever calls this
    level = 2
    while frame is not None:
        if not frame.f_code.co_filename.startswith(_OWN_DIRS):
            return level
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return 2


def _check_session(session: object) -> None:
    if isinstance(session, type):  # the class has the methods, unbound
        raise UserError(
            f"session= is the class {session.__name__}, not a session",
            hint=f"create one: session={session.__name__}(...)",
        )
    for name in ("segments", "load", "append", "clear"):
        if not callable(getattr(session, name, None)):
            raise UserError(
                f"{type(session).__name__} is not a session: it has no {name}()",
                hint="pass SQLiteSession(path), InMemorySession(), or an object with "
                "segments/load/append/clear",
            )


def check_arguments(d: Run) -> None:
    """Refuse wrong arguments before anything is read or written (the entry agent's type
    is checked where the driver is built: ``Runner``'s ``_agent``)."""
    o = d.o
    limit = o.max_turns
    # 0 or less leaves no turn: the run starts and stops with MaxTurnsExceeded, as in 0.9.119
    # (a caller's ``except MaxTurnsExceeded`` keeps working). A float is a limit too (0.9.119
    # compares it; ``float("inf")`` means no limit); NaN and non-numbers are refused.
    if not isinstance(limit, (int, float)) or limit != limit:
        raise UserError(
            f"max_turns must be a number of model turns, got {limit!r}",
            hint="pass Runner.run(..., max_turns=10); the default is 50",
        )
    for name, value, kind in (
        ("budget", o.budget, RunBudget),
        ("cancel_token", o.cancel_token, CancelToken),
        ("mailbox", o.mailbox, Mailbox),
    ):
        if value is not None and not isinstance(value, kind):
            raise UserTypeError(
                f"{name}= takes a {kind.__name__}, got {type(value).__name__}",
                hint=f"pass {name}=lovia.{kind.__name__}(...) or leave it out",
            )
    if not callable(getattr(o.tracer, "span", None)):
        raise UserTypeError(
            f"tracer= takes a tracer, got {type(o.tracer).__name__}: it has no span()",
            hint="pass a tracer from lovia.tracing (ConsoleTracer(), InMemoryTracer(), "
            "OpenTelemetryTracer()) or an object with span(name, **attributes)",
        )
    if o.session is not None:
        if o.session_id is None:
            raise UserError(
                "session_id is required when session is provided",
                hint="pass Runner.run(..., session=s, session_id='user-42')",
            )
        _check_session(o.session)
    elif o.session_id is not None:
        # 0.9.119 accepted this silently. A UserWarning, on the caller's line, is what shows
        # in a script nobody configured logging for (as docs/sessions.md says); the log line
        # is for programs that read lovia's log.
        message = (
            f"session_id={o.session_id!r} without session=: this run has no memory of earlier "
            "runs and is not remembered; pass session=SQLiteSession(path) too"
        )
        log.warning("%s", message)
        warnings.warn(message, UserWarning, stacklevel=_callers_level())
    if o.session_id is not None:
        validate_id(o.session_id, "session_id")
    if o.checkpoint is not None and not isinstance(o.checkpoint, CheckpointOptions):
        raise UserError(
            f"checkpoint= takes CheckpointOptions, got {type(o.checkpoint).__name__}",
            hint="checkpoint=CheckpointOptions(SQLiteCheckpointer('runs.db'), run_id='job-1')",
        )
    d.kit.tooling(d.entry_agent)  # two tools with one name fail before any work (kept)


def _restore_timeline(d: Run, snapshot: RunSnapshot) -> None:
    """A resumed run goes on with the timeline its head holds."""
    stored = getattr(snapshot, "timeline", None) or {}
    for kind in ("turns", "calls"):
        rows = stored.get(kind, ())
        d.state.timeline[kind] = [list(r) for r in rows if isinstance(r, list)]


async def setup(d: Run, snapshot: RunSnapshot | None) -> None:
    state = d.state
    o = d.o
    if snapshot is not None:
        state.agent = find_agent(d.entry_agent, snapshot.agent_name)
        state.entries = list(snapshot.entries)
        state.usage = snapshot.usage.clone()
        state.turn = snapshot.turns
        state.context_state = dict(snapshot.context_state)
        state.started_calls = list(snapshot.started_calls)
        state.steps = {k: dict(v) for k, v in (getattr(snapshot, "steps", None) or {}).items()}
        state.pending_approvals = list(getattr(snapshot, "pending_approvals", ()) or ())
        state.budget_state = dict(getattr(snapshot, "budget", None) or {})
        state.started_at = snapshot.started_at  # None: a head from before runs were timed
        _restore_timeline(d, snapshot)
        if d.budget is not None and state.budget_state:
            d.budget.restore(state.budget_state)
        if snapshot.turn_agent is not None:
            state.turn_agent = find_agent(d.entry_agent, snapshot.turn_agent)
        if snapshot.pending_handoff is not None:
            target = snapshot.pending_handoff
            state.pending_handoff = find_handoff_target(d.run_id, state.agent, target)
        d.recorder.saved = len(state.entries)
    if o.session is not None and o.session_id is not None:
        read, d.history_read = d.history_read, None
        if read is None and type(o.session) is SQLiteSession:
            # the built-in store hands over the entries without a Segment per stored run
            state.history, meta, state.session_version = await o.session._run_history(o.session_id)
        else:
            if read is None:  # else read since this run's lease was taken: used as it is
                read = await read_history(d)
            segments, state.session_version = read
            state.history = [e for seg in segments for e in seg.entries]
            meta = segments[-1].meta if segments else None
        state.history_version = state.session_version
        if conflicted(snapshot):  # its answer never saw the other run: still refused
            state.session_version = snapshot.session_version  # type: ignore[union-attr]
        # meta is opaque: a custom store's (or an old run's) odd one carries no state
        carried = meta.get("context_state") if isinstance(meta, dict) else None
        if snapshot is None and isinstance(carried, dict):
            state.context_state = dict(carried)
    if state.agent.plugins or state.agent.workspace is not None:  # else nothing to set up
        await d.kit.activate_plugins(state.agent)
    await render_system(d)
    d.kit.provider(state.agent)  # no model configured: fail before any event
    if snapshot is None:
        # Set up without error, the input is the run's own: before RunStarted (hooks see it
        # in ctx.entries) and kept by a tripped input guardrail's failed head, as in 0.9.119,
        # so re-submitting the run id works on the original input (C7).
        state.entries.extend(d.new_input if d.new_input is not None else _read_input(d.input))


async def before_writes(d: Run, action: str, stored: RunSnapshot | None) -> None:
    """What can refuse a run, checked before anything is written (a restart's delete, the
    run's first save): the input of a run that starts from it, under ``"restart"`` or
    ``"fail"`` a run the session already holds, and under the other policies one it holds
    without an answer. A resumed run ignores its input."""
    if action in ("new", "restart"):
        d.new_input = _read_input(d.input)
    opts = d.checkpoint
    if opts is None or opts.resume_from is not None:
        return
    if opts.if_run_exists in ("restart", "fail"):
        await refuse_if_in_session(d, stored=stored is not None)
    elif action in ("new", "resume") and not conflicted(stored):
        await refuse_if_settled(d)  # a run the session holds is answered from there


def _read_input(given: object) -> list[TranscriptEntry]:
    new_input = to_entries(given)
    if type(given) is not str and any(isinstance(e, ToolCallEntry) for e in new_input):
        _refuse_unanswered_calls(new_input)  # (a string is one user message: no calls)
    return new_input


async def start_new(d: Run, snapshot: RunSnapshot | None = None) -> None:
    """A new run's input guarded and saved; a resumed run an input guardrail refused (it
    failed on one before its first turn) is guarded again."""
    if snapshot is not None:
        refused = snapshot.status == "failed" and snapshot.turns == 0
        if refused and (snapshot.error or {}).get("type") == "GuardrailTripped":
            await guard_input(d)
        return
    await guard_input(d)
    if d.saves and not INPUT_KEPT.get():  # (kept by the caller: saved with the first turn)
        await d.save()


async def guard_input(d: Run) -> None:
    """The input guardrails over the whole transcript the first model call will see: system,
    history, the run's input. Run for a new run, and again when a run that one of them
    refused is resumed: re-submitting the run id must not get its input past them."""
    state = d.state
    guards = d.entry_agent.input_guardrails
    if d.kit.plugin_order:
        guards = [*guards, *d.kit.plugin_guards(d.entry_agent, "input")]
    if guards:
        seen = [*state.system_entries, *state.history, *state.entries]
        await check_guardrails(guards, entries_to_messages(seen), d.ctx, "input")


def _refuse_unanswered_calls(new_input: list[TranscriptEntry]) -> None:
    """A call in the input without its result would reach the model unanswered, land in the
    session that way, and run only if the run is ever resumed: refuse it before anything runs."""
    answered = {e.call_id for e in new_input if isinstance(e, ToolResultEntry)}
    ids = [e.call_id for e in new_input if isinstance(e, ToolCallEntry)]
    ids = [i for i in ids if i not in answered]
    if ids:
        raise UserError(
            f"the run input has a tool call without its result (call id {ids[0]!r})",
            hint="pass each call's ToolResultEntry with it, or remove unanswered calls with "
            "lovia.transcript.drop_dangling_tool_calls(entries)",
        )


async def render_system(d: Run) -> None:
    """The system entry for the active agent: instructions, fragments, plugins, extra."""
    agent = d.state.agent
    if type(agent.instructions) is str and not getattr(agent, "_fragments", None):
        texts = [agent.instructions]  # what render_system_prompt gives, without its awaits
    else:
        texts = [await agent.render_system_prompt(d.ctx)]
    for inst in d.kit.plugin_instances(agent):
        if inst.instructions:
            texts.append(inst.instructions)
    if d.o.extra_instructions:
        texts.append(d.o.extra_instructions)
    output_type = d.kit.output_type(agent)
    if output_type is not str and not getattr(d.kit.provider(agent), "supports_json_schema", False):
        texts.append(output_instructions(output_type))  # no native JSON-schema output
    text = texts[0] if len(texts) == 1 else "\n\n".join(t for t in texts if t)
    d.state.system_entries = [_system_entry(text)] if text else []


_SYSTEM: dict[str, InputEntry] = {}
"""System entries of recent prompts: entries are frozen values, so runs of one agent share
its system entry instead of building (and validating) it again every run."""


def _system_entry(text: str) -> InputEntry:
    found = _SYSTEM.get(text)
    if found is None:
        if len(_SYSTEM) >= 256:
            _SYSTEM.clear()
        found = _SYSTEM[text] = InputEntry(role="system", content=text)
    return found
