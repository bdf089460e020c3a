"""``lovia runs resume`` and the commands that decide a run parked for an approval
(``runs approvals``, ``approve``, ``reject``): a parked run is resumed only once its calls are
decided, and a call that asks for approval during a resume parks the run again."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from typing import Any

from ..errors import ApprovalPending, UserError
from ..stores.run_options import CheckpointOptions
from .common import DEFAULT_DB, db_stores, load_agents, print_json, shown_db, stored_run
from .render import print_event

__all__ = ["resume_command", "runs_approvals", "runs_approve", "runs_reject", "runs_resume"]

APP_PLACEHOLDER = "MODULE:ATTR"


def resume_command(args: argparse.Namespace, run_id: str) -> str:
    """The ``lovia runs resume`` command line that goes on with ``run_id``: the ``--db`` and
    the agent (``--app``/``--demo``) this command was given, quoted for a shell. Without
    either (and no ``LOVIA_MODEL``), ``--app MODULE:ATTR`` stands for the user's own."""
    words = ["lovia", "runs", "resume", run_id]
    if args.db != DEFAULT_DB:
        words += ["--db", shown_db(args.db)]
    if getattr(args, "app", None):
        words += ["--app", args.app]
    elif getattr(args, "demo", False):
        words.append("--demo")
    elif not os.environ.get("LOVIA_MODEL"):
        words += ["--app", APP_PLACEHOLDER]
    return shlex.join(words)


def _agent_note(command: str, agent_name: str) -> str:
    if APP_PLACEHOLDER not in command:
        return ""
    return f" ({APP_PLACEHOLDER}: where agent {agent_name!r} is defined)"


async def runs_resume(args: argparse.Namespace) -> int:
    from .._run.runner import Runner
    from ..events import ApprovalRequired, RunCompleted, RunFailed
    from .common import no_model_hint

    agents = load_agents(args.app, args.demo)
    stored = await stored_run(
        args
    )  # a refused resume leaves the file as it was (not even migrated)
    if not agents and stored.status == "completed":  # nothing to resume: no model needed
        raise UserError(
            f"run {stored.run_id!r} has completed: there is nothing to resume",
            hint=f"'lovia runs show {stored.run_id}' prints it, its answer included",
        )
    if not agents:
        raise UserError("no agent to resume the run with", hint=no_model_hint())
    async with db_stores(args) as (session, cp):
        snap = await cp.load(args.run_id) or await stored_run(args)  # (deleted meanwhile?)
        await _refuse_undecided(cp, snap.run_id)
        from ..chats.supervisor import entry_agent

        agent = entry_agent(agents, snap.agent_name)
        assert agent is not None  # agents is not empty here
        handle = Runner.stream(
            agent,
            [],
            session=session if snap.session_id else None,
            session_id=snap.session_id,
            checkpoint=CheckpointOptions(cp, snap.run_id, if_run_exists="resume_only"),
        )
        streamed = False
        async for event in handle:
            # a failure is printed once, by main, with its hint on stderr
            if isinstance(event, ApprovalRequired):
                event.defer()  # nobody here to ask: the run parks for 'lovia runs approve'
            if args.json or isinstance(event, RunFailed):
                continue
            streamed = streamed or not isinstance(event, RunCompleted)
            print_event(event, sys.stdout)
        try:
            result = await handle.result()
        except ApprovalPending as exc:
            raise ApprovalPending(
                exc.message,
                hint=f"see 'lovia runs approvals {exc.run_id}', decide with 'lovia runs "
                f"approve' (or 'reject'), then '{resume_command(args, exc.run_id)}' again",
                run_id=exc.run_id,
                calls=exc.calls,
                pending=exc.pending,
            ) from None
    if args.json:
        print_json({"run_id": result.run_id, "output": result.output, "turns": result.turns})
    elif not streamed:  # a replay streams nothing but its end: the stored answer
        print(f"run {result.run_id} had completed; its answer:")
        print(result.output)
    return 0


async def _refuse_undecided(cp: Any, run_id: str) -> None:
    """A parked run resumed before its calls are decided would deny them: refuse instead."""
    from ..approvals import pending

    waiting = await pending(cp, run_id)
    if waiting:
        ids = ", ".join(c.id for c in waiting)
        raise UserError(
            f"run {run_id!r} waits for a decision on tool call(s) {ids}",
            hint=f"decide with 'lovia runs approve {run_id} CALL_ID' (or 'runs reject'), "
            "then resume it",
        )


async def runs_approvals(args: argparse.Namespace) -> int:
    from ..approvals import pending, pending_approvals

    async with db_stores(args, read_only=True) as (_session, cp):
        if args.run_id is not None:  # an empty id (an unset "$RUN") is refused, not "all"
            run_ids = [args.run_id]
        else:
            run_ids = [s.run_id for s in await cp.list_runs(statuses=["interrupted"])]
        rows = []
        for rid in run_ids:
            digests = {p.call_id: p.digest for p in await pending_approvals(cp, rid)}
            for c in await pending(cp, rid):
                rows.append(
                    {
                        "run_id": rid,
                        "call_id": c.id,
                        "tool": c.name,
                        "arguments": c.arguments,
                        "digest": digests.get(c.id),
                    }
                )
    if args.json:
        print_json(rows)
    elif not rows:
        print("no tool calls wait for approval")
    for r in [] if args.json else rows:
        print(f"{r['run_id']}  {r['call_id']}  {r['tool']}({r['arguments']})  digest {r['digest']}")
    if rows and not args.json:
        print("decide with: lovia runs approve RUN_ID CALL_ID --digest DIGEST (or runs reject)")
    return 0


async def _decide(args: argparse.Namespace, approve: bool) -> int:
    from ..approvals import decide

    snap = await stored_run(args)  # a refused decision leaves the file as it was
    async with db_stores(args) as (_session, cp):
        try:
            digest = getattr(args, "digest", None)
            await decide(
                cp,
                args.run_id,
                {args.call_id: approve},
                getattr(args, "reason", None),
                digests=None if digest is None else {args.call_id: digest},
            )
        except UserError as exc:
            stale = getattr(exc, "code", None) in ("approval_stale", "approval_ambiguous")
            if stale or "already decided" in exc.message:  # a conflict, not bad input: 1
                print(f"lovia: error: {exc.message}", file=sys.stderr)
                print(f"lovia: hint: {exc.hint}", file=sys.stderr)
                return 1
            if "is not waiting for an approval" in exc.message:  # its hint is the Python API's
                raise UserError(
                    exc.message, hint="'lovia runs approvals' lists the calls that wait for one"
                ) from None
            if "has no pending call" in exc.message:
                raise UserError(
                    exc.message, hint=f"see 'lovia runs approvals {args.run_id}'"
                ) from None
            raise
    verb = "approved" if approve else "rejected"
    if args.json:
        print_json({"run_id": args.run_id, "call_id": args.call_id, "decision": verb})
    else:
        command = resume_command(args, args.run_id)
        note = _agent_note(command, snap.agent_name)
        print(f"{verb} {args.call_id} of run {args.run_id}; go on with: {command}{note}")
    return 0


async def runs_approve(args: argparse.Namespace) -> int:
    return await _decide(args, True)


async def runs_reject(args: argparse.Namespace) -> int:
    return await _decide(args, False)
