"""``lovia sessions ...`` and ``lovia runs ...``: look at and maintain the stores in ``--db``."""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import time
from pathlib import Path
from typing import Any

from ..errors import StoreError, UserError
from ..stores.capabilities import ListsRunHeads, has_capability
from ..stores.checkpoint import RUN_STATUSES, RunSnapshot
from ..stores.open import is_postgres_url
from ..transcript import entry_to_dict
from .common import (
    add_agent_options,
    add_db_option,
    counted,
    db_stores,
    print_json,
    refuse_overwriting_a_database,
    shown_db,
    stored_run,
)
from .forks import add_fork_arguments, add_session_fork_arguments, runs_fork, sessions_fork
from .held import known_session, sessions_clear, sessions_rewind, sessions_trim
from .parked import runs_approvals, runs_approve, runs_reject, runs_resume
from .render import describe_entry, plain
from .retest import runs_retest
from .web_options import non_negative_int

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
DIGEST = (
    "the call's digest, as 'lovia runs approvals' shows it: refused (exit 1, nothing "
    "decided) when the call now waits with another tool or other arguments"
)


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
        "--keep-chars",
        type=non_negative_int,
        default=400,
        metavar="N",
        help="characters kept (default 400)",
    )
    p.add_argument(
        "--keep-runs",
        type=non_negative_int,
        default=1,
        metavar="N",
        help="latest runs untouched (default 1)",
    )
    p = _command(cmds, "rewind", "keep only the first N entries", sessions_rewind)
    p.add_argument("session_id", help=SESSION_ID)
    p.add_argument(
        "--keep", type=non_negative_int, required=True, metavar="N", help="entries to keep"
    )
    p = _command(cmds, "clear", "delete a session and its runs' checkpoints", sessions_clear)
    p.add_argument("session_id", help=SESSION_ID)
    p = _command(
        cmds, "fork", "copy a session (or its runs up to one) into a new one", sessions_fork
    )
    add_session_fork_arguments(p, SESSION_ID)


def add_runs_parser(sub: Any) -> None:
    top = sub.add_parser(
        "runs",
        help="list, show, resume and delete checkpointed runs",
        description="Runs are checkpoints: one per run, saved after every step.",
    )
    cmds = top.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = _command(cmds, "list", "list runs, newest first", runs_list)
    p.add_argument("--status", action="append", choices=RUN_STATUSES, help="only this status")
    p = _command(
        cmds, "show", "print a run: its head, timeline (turns, tool calls) and entries", runs_show
    )
    p.add_argument("run_id", help=RUN_ID)
    p.add_argument(
        "--follow",
        action="store_true",
        help="follow a running run: print its turns and tool calls as they land, until it ends",
    )
    p = _command(cmds, "resume", "finish a run that did not complete", runs_resume)
    p.add_argument("run_id", help=RUN_ID)
    add_agent_options(p)
    p = _command(cmds, "fork", "copy a run up to a step into a new run, to resume", runs_fork)
    add_fork_arguments(p, RUN_ID)
    p = _command(cmds, "export", "write a run's snapshot (entries and head) as JSON", runs_export)
    p.add_argument("run_id", help=RUN_ID)
    p.add_argument("--out", metavar="FILE", help="write to FILE instead of standard output")
    p = _command(cmds, "retest", "re-run a run against its recorded model turns", runs_retest)
    p.add_argument("run_id", nargs="?", help=RUN_ID + " (not with --from)")
    p.add_argument(
        "--from",
        dest="from_file",
        metavar="FILE",
        help="the recording from a file 'lovia runs export' wrote, instead of --db",
    )
    add_agent_options(p)
    p = _command(cmds, "approvals", "list tool calls waiting for approval", runs_approvals)
    p.add_argument("run_id", nargs="?", help="one run (default: every parked run)")
    p = _command(cmds, "approve", "approve a parked tool call (it runs on resume)", runs_approve)
    p.add_argument("run_id", help=RUN_ID)
    p.add_argument("call_id", help=CALL_ID)
    _resume_agent_options(p)
    p.add_argument("--digest", help=DIGEST)
    p = _command(cmds, "reject", "reject a parked tool call", runs_reject)
    p.add_argument("run_id", help=RUN_ID)
    p.add_argument("call_id", help=CALL_ID)
    p.add_argument("--digest", help=DIGEST)
    p.add_argument("--reason", help="shown to the model with the rejection")
    _resume_agent_options(p)
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


def _resume_agent_options(parser: argparse.ArgumentParser) -> None:
    """``--app``/``--demo`` on a decision: not loaded, only put in the ``lovia runs resume``
    command it prints, so that command runs as printed."""
    group = parser.add_argument_group("the agent for the resume command it prints")
    group.add_argument("--app", metavar="MODULE:ATTR", help="the agent that resumes the run")
    group.add_argument("--demo", action="store_true", help="the offline demo agent resumes it")


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
            "forked_from": i.forked_from,
        }
        for i in infos
    ]
    if args.json:
        print_json(rows)
    elif not rows:
        print("no sessions")
    for r in [] if args.json else rows:
        runs = counted(r["runs"], "run")
        origin = r["forked_from"]
        note = f"  (fork of {origin.get('session_id')})" if origin else ""
        line = f"{r['session_id']}  {_when(r['updated_at'])}  {runs}  {r['title'] or ''}{note}"
        print(plain(line))  # a title is the first message's text: anyone's
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
        await _write_out(args, text)
        if not args.json:
            print(f"wrote {counted(len(segments), 'run')} to {args.out}")
    else:
        print(text)
    return 0


async def _write_out(args: argparse.Namespace, text: str) -> None:
    path: str = args.out
    refuse_overwriting_a_database(path, args.db)
    try:
        await asyncio.to_thread(Path(path).write_text, text + "\n", encoding="utf-8")
    except OSError as exc:
        raise UserError(
            f"cannot write {path!r}: {exc.strerror or exc}",
            hint="pass --out a file path in a folder you can write (not a folder)",
        ) from exc


# -- runs -------------------------------------------------------------------------------------


async def runs_export(args: argparse.Namespace) -> int:
    """A run's whole snapshot (entries and head) as JSON: what ``lovia runs retest --from``
    and ``RunSnapshot.from_json`` read back."""
    snap = await stored_run(args)
    text = json.dumps(snap.to_dict(), ensure_ascii=False, indent=2)
    if args.out:
        await _write_out(args, text)
        if not args.json:
            entries = counted(len(snap.entries), "entry", "entries")
            print(f"wrote run {snap.run_id!r} ({entries}) to {args.out}")
    else:
        print(text)
    return 0


def _run_row(s: RunSnapshot) -> dict[str, Any]:
    return _head_row(s.run_id, s.head, len(s.entries))


def _head_row(run_id: str, head: Any, entries: int) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "status": head.status,
        "session_id": head.session_id,
        "agent_name": head.agent_name,
        "turns": head.turns,
        "entries": entries,
        "updated_at": head.updated_at,
        "error": head.error,
        "awaiting_approval": [p.call_id for p in head.pending_approvals if p.decision is None],
    }


async def runs_list(args: argparse.Namespace) -> int:
    async with db_stores(args, read_only=True) as (_session, cp):
        if has_capability(cp, ListsRunHeads):  # a run whose entries are damaged is listed
            infos = await cp.list_run_heads(statuses=args.status)
            rows = [_head_row(i.run_id, i.head, i.entry_count) for i in infos]
        else:
            rows = [_run_row(s) for s in await cp.list_runs(statuses=args.status)]
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


async def runs_show(args: argparse.Namespace) -> int:
    from .timeline import follow_run, timeline_lines, usage_line

    snap = await stored_run(args, note=True)
    if args.follow and not args.json:
        return await follow_run(args, snap)
    if args.json:
        timeline = {"usage": snap.usage.to_dict(), "timeline": snap.head.timeline}
        print_json(
            {**_run_row(snap), **timeline, "entries": [entry_to_dict(e) for e in snap.entries]}
        )
        return 0
    row = _run_row(snap)
    print(
        f"run {snap.run_id}: {snap.status}, agent {snap.agent_name}, {counted(snap.turns, 'turn')}"
    )
    print(f"session: {row['session_id'] or '-'}; updated {_when(snap.updated_at)}")
    print(usage_line(snap.head))
    if snap.error:
        print(plain(f"error: {snap.error.get('message')}", lines=True))  # may quote a tool
    for line in timeline_lines(snap.head, snap.entries):
        print(plain(line))
    if snap.entries:
        print("entries:")
    for i, e in enumerate(snap.entries):
        print(f"[{i}] {describe_entry(e)}")
    return 0


async def runs_delete(args: argparse.Namespace) -> int:
    from ..errors import RunBusy
    from ..stores.run_lease import default_owner

    try:
        await stored_run(args)  # an unknown id is refused before the file is opened to write
    except StoreError:
        pass  # a damaged run: deleting it is what its error message says to do
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
            try:
                existed = await cp.load(args.run_id) is not None
            except StoreError:
                existed = True  # stored, but damaged
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
        print(f"would prune {counted(len(doomed), 'run')} (dry run: nothing was deleted)")
        return 0
    async with db_stores(args) as (_session, cp):
        pruned = await cp.prune(older_than=args.older_than, statuses=statuses)
    if args.json:
        print_json({"pruned": pruned})
    elif is_postgres_url(args.db):
        print(f"pruned {counted(pruned, 'run')}")
    else:
        vacuum = f"sqlite3 {shown_db(args.db)} VACUUM"
        print(f"pruned {counted(pruned, 'run')}; run '{vacuum}' to shrink the file")
    return 0
