"""``lovia sessions ...`` and ``lovia runs ...``: look at and maintain the stores in ``--db``."""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import sys
import time
from pathlib import Path
from typing import Any

from ..errors import ApprovalPending, UserError
from ..stores.checkpoint import RUN_STATUSES, CheckpointOptions, RunSnapshot
from ..stores.open import is_postgres_url
from ..transcript import entry_to_dict
from .common import (
    add_agent_options,
    add_db_option,
    db_stores,
    load_agents,
    print_json,
    shown_db,
)
from .held import known_session, sessions_clear, sessions_rewind, sessions_trim
from .render import describe_entry, print_event

__all__ = ["add_runs_parser", "add_sessions_parser"]


def _command(sub: Any, name: str, help: str, handler: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(name, help=help, description=help)
    add_db_option(parser)
    parser.add_argument("--json", action="store_true", help="print JSON for scripts")
    parser.set_defaults(handler=handler)
    return parser


SESSION_ID = "the session's id, as 'lovia sessions list' shows it"
RUN_ID = "the run's id, as 'lovia runs list' shows it"
CALL_ID = "the tool call's id, as 'lovia runs approvals' shows it"


def add_sessions_parser(sub: Any) -> None:
    top = sub.add_parser(
        "sessions",
        help="list, show, export and maintain stored conversations",
        description="Sessions are conversations (a chat of 'lovia web' is one session).",
    )
    cmds = top.add_subparsers(dest="action", metavar="ACTION", required=True)
    _command(cmds, "list", "list sessions, most recently updated first", sessions_list)
    p = _command(cmds, "show", "print a session's entries with their index", sessions_show)
    p.add_argument("session_id", help=SESSION_ID)
    p = _command(cmds, "export", "write a session's runs as JSON", sessions_export)
    p.add_argument("session_id", help=SESSION_ID)
    p.add_argument("--out", metavar="FILE", help="write to FILE instead of standard output")
    p = _command(cmds, "trim", "cut old tool outputs down", sessions_trim)
    p.add_argument("session_id", help=SESSION_ID)
    p.add_argument(
        "--keep-chars", type=int, default=400, metavar="N", help="characters kept (default 400)"
    )
    p.add_argument(
        "--keep-runs", type=int, default=1, metavar="N", help="latest runs untouched (default 1)"
    )
    p = _command(cmds, "rewind", "keep only the first N entries", sessions_rewind)
    p.add_argument("session_id", help=SESSION_ID)
    p.add_argument("--keep", type=int, required=True, metavar="N", help="entries to keep")
    p = _command(cmds, "clear", "delete a session and its runs' checkpoints", sessions_clear)
    p.add_argument("session_id", help=SESSION_ID)


def add_runs_parser(sub: Any) -> None:
    top = sub.add_parser(
        "runs",
        help="list, show, resume and delete checkpointed runs",
        description="Runs are checkpoints: one per run, saved after every step.",
    )
    cmds = top.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = _command(cmds, "list", "list runs, newest first", runs_list)
    p.add_argument("--status", action="append", choices=RUN_STATUSES, help="only this status")
    p = _command(cmds, "show", "print a run's head and entries", runs_show)
    p.add_argument("run_id", help=RUN_ID)
    p = _command(cmds, "resume", "finish a run that did not complete", runs_resume)
    p.add_argument("run_id", help=RUN_ID)
    add_agent_options(p)
    p = _command(cmds, "approvals", "list tool calls waiting for approval", runs_approvals)
    p.add_argument("run_id", nargs="?", help="one run (default: every parked run)")
    p = _command(cmds, "approve", "approve a parked tool call (it runs on resume)", runs_approve)
    p.add_argument("run_id", help=RUN_ID)
    p.add_argument("call_id", help=CALL_ID)
    p = _command(cmds, "reject", "reject a parked tool call", runs_reject)
    p.add_argument("run_id", help=RUN_ID)
    p.add_argument("call_id", help=CALL_ID)
    p.add_argument("--reason", help="shown to the model with the rejection")
    p = _command(cmds, "delete", "delete a run's checkpoint", runs_delete)
    p.add_argument("run_id", help=RUN_ID)
    p = _command(cmds, "prune", "delete old finished runs' checkpoints (sessions kept)", runs_prune)
    p.add_argument(
        "--older-than",
        type=_duration,
        metavar="AGE",
        help="runs last saved this long ago: 30d, 12h, 900",
    )
    p.add_argument("--all", action="store_true", help="runs of any age (instead of --older-than)")
    p.add_argument("--status", action="append", choices=RUN_STATUSES, help="default: finished")
    p.add_argument("--dry-run", action="store_true", help="list what would go; delete nothing")


def _when(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


# -- sessions ---------------------------------------------------------------------------------


async def sessions_list(args: argparse.Namespace) -> int:
    async with db_stores(args, read_only=True) as (session, _cp):
        infos = await session.list_sessions()
    rows = [
        {
            "session_id": i.session_id,
            "title": i.title,
            "runs": i.runs,
            "entries": i.entries,
            "created_at": i.created_at,
            "updated_at": i.updated_at,
        }
        for i in infos
    ]
    if args.json:
        print_json(rows)
    elif not rows:
        print("no sessions")
    for r in [] if args.json else rows:
        print(f"{r['session_id']}  {_when(r['updated_at'])}  {r['runs']} runs  {r['title'] or ''}")
    return 0


async def sessions_show(args: argparse.Namespace) -> int:
    async with db_stores(args, read_only=True) as (session, _cp):
        entries = await session.load(args.session_id)
    if not entries:
        await known_session(args)  # a run of it may be checkpointed before its first entry
    if args.json:
        print_json([{"index": i, **entry_to_dict(e)} for i, e in enumerate(entries)])
        return 0
    if not entries:
        print(f"session {args.session_id!r} is empty")
    for i, e in enumerate(entries):
        print(f"[{i}] {describe_entry(e)}")
    return 0


async def sessions_export(args: argparse.Namespace) -> int:
    async with db_stores(args, read_only=True) as (session, _cp):
        segments = await session.segments(args.session_id)
    if not segments:
        await known_session(args)
    data = {
        "session_id": args.session_id,
        "runs": [
            {"run_id": s.run_id, "meta": s.meta, "entries": [entry_to_dict(e) for e in s.entries]}
            for s in segments
        ],
    }
    text = json.dumps(data, ensure_ascii=False, indent=2)
    if args.out:
        try:
            await asyncio.to_thread(Path(args.out).write_text, text + "\n", encoding="utf-8")
        except OSError as exc:
            raise UserError(
                f"cannot write {args.out!r}: {exc.strerror or exc}",
                hint="pass --out a file path in a folder you can write (not a folder)",
            ) from exc
        if not args.json:
            print(f"wrote {len(segments)} runs to {args.out}")
    else:
        print(text)
    return 0


# -- runs -------------------------------------------------------------------------------------


def _run_row(s: RunSnapshot) -> dict[str, Any]:
    return {
        "run_id": s.run_id,
        "status": s.status,
        "session_id": s.session_id,
        "agent_name": s.agent_name,
        "turns": s.turns,
        "entries": len(s.entries),
        "updated_at": s.updated_at,
        "error": s.error,
        "awaiting_approval": [p.call_id for p in s.pending_approvals if p.decision is None],
    }


async def runs_list(args: argparse.Namespace) -> int:
    async with db_stores(args, read_only=True) as (_session, cp):
        runs = await cp.list_runs(statuses=args.status)
    rows = [_run_row(s) for s in runs]
    if args.json:
        print_json(rows)
        return 0
    if not rows:
        print("no runs")
    for r in rows:
        print(
            f"{r['run_id']}  {r['status']:<11}  {_when(r['updated_at'])}  "
            f"session={r['session_id'] or '-'}  turns={r['turns']}"
            + ("  awaiting approval" if r["awaiting_approval"] else "")
        )
    return 0


async def _stored_run(args: argparse.Namespace, *, note: bool = False) -> RunSnapshot:
    """The run ``args.run_id`` names, read without changing the file; ``UserError`` if none."""
    async with db_stores(args, read_only=True, note=note) as (_session, cp):
        snap: RunSnapshot | None = await cp.load(args.run_id)
    if snap is None:
        raise UserError(
            f"no run {args.run_id!r} in {shown_db(args.db)!r}", hint="see 'lovia runs list'"
        )
    return snap


async def runs_show(args: argparse.Namespace) -> int:
    snap = await _stored_run(args, note=True)
    if args.json:
        print_json({**_run_row(snap), "entries": [entry_to_dict(e) for e in snap.entries]})
        return 0
    row = _run_row(snap)
    print(f"run {snap.run_id}: {snap.status}, agent {snap.agent_name}, {snap.turns} turns")
    print(f"session: {row['session_id'] or '-'}; updated {_when(snap.updated_at)}")
    if snap.error:
        print(f"error: {snap.error.get('message')}")
    for i, e in enumerate(snap.entries):
        print(f"[{i}] {describe_entry(e)}")
    return 0


async def runs_resume(args: argparse.Namespace) -> int:
    from .._run.runner import Runner
    from ..events import ApprovalRequired, RunCompleted, RunFailed
    from .common import no_model_hint

    agents = load_agents(args.app, args.demo)
    await _stored_run(args)  # a refused resume leaves the file as it was (not even migrated)
    if not agents:
        raise UserError("no agent to resume the run with", hint=no_model_hint())
    async with db_stores(args) as (session, cp):
        snap = await cp.load(args.run_id) or await _stored_run(args)  # (deleted meanwhile?)
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
                f"approve' (or 'reject'), then 'lovia runs resume {exc.run_id}' again",
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
    from ..approvals import pending

    async with db_stores(args, read_only=True) as (_session, cp):
        if args.run_id:
            run_ids = [args.run_id]
        else:
            run_ids = [s.run_id for s in await cp.list_runs(statuses=["interrupted"])]
        rows = []
        for rid in run_ids:
            for c in await pending(cp, rid):
                rows.append(
                    {"run_id": rid, "call_id": c.id, "tool": c.name, "arguments": c.arguments}
                )
    if args.json:
        print_json(rows)
    elif not rows:
        print("no tool calls wait for approval")
    for r in [] if args.json else rows:
        print(f"{r['run_id']}  {r['call_id']}  {r['tool']}({r['arguments']})")
    return 0


async def _decide(args: argparse.Namespace, approve: bool) -> int:
    from ..approvals import decide
    from ..errors import UserError

    await _stored_run(args)  # a refused decision leaves the file as it was
    async with db_stores(args) as (_session, cp):
        try:
            await decide(cp, args.run_id, {args.call_id: approve}, getattr(args, "reason", None))
        except UserError as exc:
            if "already decided" in exc.message:  # a conflict, not a bad request: status 1
                print(f"lovia: error: {exc.message}", file=sys.stderr)
                print(f"lovia: hint: {exc.hint}", file=sys.stderr)
                return 1
            if "has no pending call" in exc.message:
                raise UserError(
                    exc.message, hint=f"see 'lovia runs approvals {args.run_id}'"
                ) from None
            raise
    verb = "approved" if approve else "rejected"
    if args.json:
        print_json({"run_id": args.run_id, "call_id": args.call_id, "decision": verb})
    else:
        print(
            f"{verb} {args.call_id} of run {args.run_id}; 'lovia runs resume {args.run_id}' goes on"
        )
    return 0


async def runs_approve(args: argparse.Namespace) -> int:
    return await _decide(args, True)


async def runs_reject(args: argparse.Namespace) -> int:
    return await _decide(args, False)


async def runs_delete(args: argparse.Namespace) -> int:
    from ..errors import RunBusy
    from ..stores.run_lease import default_owner

    await _stored_run(args)  # an unknown id is refused before the file is opened to write
    async with db_stores(args) as (_session, cp):
        owner = default_owner()
        if not await cp.acquire_lease(args.run_id, owner, 30.0):  # a live worker drives it
            holder = await cp.lease_holder(args.run_id)
            raise RunBusy(
                f"run {args.run_id!r} is being driven by {holder or 'another worker'}; "
                "nothing was deleted",
                hint="stop that worker (or let the run finish), then delete it; a crashed "
                "worker's lease expires after its lease_ttl",
            )
        try:
            existed = await cp.load(args.run_id) is not None
            await cp.delete(args.run_id)
        finally:
            await cp.release_lease(args.run_id, owner)
    if args.json:
        print_json({"deleted": args.run_id, "existed": existed})
    else:
        print(f"deleted run {args.run_id}" if existed else f"no run {args.run_id}; nothing done")
    return 0


def _duration(text: str) -> float:
    """``30d``, ``12h``, ``15m``, ``90s`` or plain seconds."""
    units = {"d": 86_400.0, "h": 3_600.0, "m": 60.0, "s": 1.0}
    scale = units.get(text[-1:].lower(), 0.0)
    try:
        value = float(text[:-1] if scale else text) * (scale or 1.0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (try 30d, 12h, 900)") from None
    return value


async def runs_prune(args: argparse.Namespace) -> int:
    if (args.older_than is None) == (not args.all):
        raise UserError(
            "say which runs to prune: --older-than DURATION or --all"
            if args.older_than is None
            else "--older-than and --all do not go together",
            hint="e.g. 'lovia runs prune --older-than 30d' (add --dry-run to see them first)",
        )
    statuses = args.status or ["completed", "failed"]
    if args.dry_run:
        cutoff = None if args.older_than is None else time.time() - args.older_than
        async with db_stores(args, read_only=True, note=False) as (_session, cp):
            runs = await cp.list_runs(statuses=statuses)
        doomed = [r for r in runs if cutoff is None or r.updated_at < cutoff]
        if args.json:
            print_json({"would_prune": [_run_row(r) for r in doomed]})
            return 0
        for r in doomed:
            print(f"{r.run_id}  {r.status:<11}  {_when(r.updated_at)}")
        print(f"would prune {len(doomed)} runs (dry run: nothing was deleted)")
        return 0
    async with db_stores(args) as (_session, cp):
        pruned = await cp.prune(older_than=args.older_than, statuses=statuses)
    if args.json:
        print_json({"pruned": pruned})
    elif is_postgres_url(args.db):
        print(f"pruned {pruned} runs")
    else:
        print(f"pruned {pruned} runs; run 'sqlite3 {shown_db(args.db)} VACUUM' to shrink the file")
    return 0
