"""``lovia chat``: the terminal chat. Ctrl-C stops a run the way the page's stop button does.

Commands inside the chat: ``/new`` (a fresh session), ``/history`` (entries with their
index), ``/rewind N`` (keep the first N entries), ``/help``, ``/quit``.

Answers are rendered as Markdown with ``rich`` (``pip install 'lovia[cli]'``) when the output
is a terminal, with a progress line while a tool runs; ``--plain`` prints the raw text, and
``--markdown`` renders even when the output is not a terminal.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
import threading
import uuid
from typing import Any

from ..errors import LoviaError, UserError
from .common import (
    add_agent_options,
    add_db_option,
    check_stores,
    counted,
    load_agents,
    no_model_hint,
    open_stores,
    shown_db,
)
from .render import describe_entry

__all__ = ["add_parser"]

HELP = (
    "commands: /new  /history  /rewind N  /help  /quit   "
    "(Ctrl-C stops a running answer, and at the prompt ends the chat)"
)


def add_parser(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "chat",
        help="chat with an agent in the terminal",
        description=f"Chat in the terminal; the conversation is stored in --db. {HELP}",
    )
    add_agent_options(parser)
    add_db_option(parser)
    parser.add_argument("--session", metavar="ID", help="continue this session (default: new)")
    style = parser.add_mutually_exclusive_group()
    style.add_argument(
        "--markdown",
        action="store_true",
        help="render answers as Markdown even when the output is not a terminal (needs rich)",
    )
    style.add_argument("--plain", action="store_true", help="print answers as raw text")
    parser.set_defaults(handler=run_chat)


async def _read_line(prompt: str, pending: list[asyncio.Future[str | None]]) -> str | None:
    """``input()`` on a daemon thread, so the loop keeps handling Ctrl-C and exit never waits.
    The future is in ``pending`` while it waits (Ctrl-C at the prompt resolves it with
    ``None``, as end of input does)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[str | None] = loop.create_future()
    pending[:] = [future]

    def read() -> None:
        try:
            line: str | None = input(prompt)
        except (EOFError, KeyboardInterrupt):
            line = None

        def deliver() -> None:
            if not future.done():
                future.set_result(line)

        loop.call_soon_threadsafe(deliver)

    threading.Thread(target=read, daemon=True).start()
    return await future


class PlainPrinter:
    """Answers as raw text, streamed; tool calls and their results on lines of their own."""

    def event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        out = sys.stdout
        if kind == "text_delta":
            out.write(str(event["delta"]))
        elif kind == "message_completed":
            if any(e.get("type") == "assistant_text" for e in event["entries"]):
                out.write("\n")
        elif kind == "tool_call_started":
            call = event["call"]
            out.write(f"  [tool] {call['name']}({call['arguments']}) running…\n")
        elif kind == "tool_call_completed":
            out.write(f"  [tool] {event['call']['name']} -> {event['output'][:200]}\n")
        elif kind == "run_failed":
            out.write(_failure_line(event) + "\n")
        out.flush()

    def close(self) -> None:
        sys.stdout.flush()


class RichPrinter:
    """Answers rendered as Markdown as they stream (``rich``), a spinner line while tools
    run, tool results on lines of their own."""

    def __init__(self, force: bool) -> None:
        from rich.console import Console

        self.console = Console(force_terminal=True if force else None, highlight=False)
        self.text = ""
        self.live: Any = None
        self.status: Any = None
        self.running: dict[str, str] = {}

    def _markdown(self) -> Any:
        from rich.markdown import Markdown

        return Markdown(self.text)

    def _end_text(self) -> None:
        if self.live is not None:
            self.live.update(self._markdown())
            self.live.stop()
            self.live = None
        self.text = ""

    def _show_status(self) -> None:
        names = ", ".join(self.running.values())
        if not names:
            if self.status is not None:
                self.status.stop()
                self.status = None
            return
        label = f"running {names}…"
        if self.status is None:
            self.status = self.console.status(label)
            self.status.start()
        else:
            self.status.update(label)

    def event(self, event: dict[str, Any]) -> None:
        from rich.live import Live

        kind = event.get("type")
        if kind == "text_delta":
            self.text += str(event["delta"])
            if self.live is None:
                self.live = Live(self._markdown(), console=self.console, refresh_per_second=10)
                self.live.start()
            else:
                self.live.update(self._markdown())
        elif kind == "message_completed":
            self._end_text()
        elif kind == "tool_call_started":
            self._end_text()
            call = event["call"]
            self.running[str(call["call_id"])] = str(call["name"])
            self._show_status()
        elif kind == "tool_call_completed":
            call = event["call"]
            self.running.pop(str(call["call_id"]), None)
            self._show_status()
            flag = " error" if event.get("is_error") else ""
            output = " ".join(str(event["output"]).split())[:200]
            self.console.print(f"  [tool{flag}] {call['name']} -> {output}", markup=False)
        elif kind == "run_failed":
            self.close()
            self.console.print(_failure_line(event), markup=False)

    def close(self) -> None:
        self._end_text()
        self.running.clear()
        self._show_status()


def _failure_line(event: dict[str, Any]) -> str:
    if event.get("stopped"):
        return "\n[stopped: the answer so far is kept]"
    error = event.get("error") or {}
    line = f"\n[run failed: {error.get('message')}]"
    if error.get("hint"):
        line += f"\n[to fix: {error['hint']}]"
    return line


def make_printer(args: argparse.Namespace) -> PlainPrinter | RichPrinter:
    """Markdown with rich when asked (``--markdown``) or when stdout is a terminal."""
    if args.plain:
        return PlainPrinter()
    try:
        import rich  # noqa: F401
    except ImportError:
        if args.markdown:
            raise UserError(
                "--markdown needs the rich package", hint="pip install 'lovia[cli]'"
            ) from None
        return PlainPrinter()
    if args.markdown or sys.stdout.isatty():
        return RichPrinter(force=args.markdown)
    return PlainPrinter()


async def _check_model(agents: dict[str, Any]) -> None:
    """Refuse to start on a model that cannot be used or whose server refuses the API key;
    warn when its server is unreachable."""
    from ..chats.setup import model_problem, server_problem

    agent = next(iter(agents.values()))
    problem = model_problem(agent)
    if problem is not None:
        raise UserError(
            f"the model of agent {problem.agent!r} cannot be used: {problem.message}",
            hint=problem.hint,
        )
    warning = await server_problem(agent)
    if warning is not None and warning.blocking:
        raise UserError(
            f"the model of agent {warning.agent!r} cannot be used: {warning.message}",
            hint=warning.hint,
        )
    if warning is not None:
        print(f"lovia chat: warning: {warning.message}", file=sys.stderr)
        if warning.hint:
            print(f"lovia chat: hint: {warning.hint}", file=sys.stderr)


def _check_session_id(session_id: str | None) -> None:
    """Refuse before the chat starts a ``--session`` no store takes: else every message
    failed, and "bye" still said the session was stored."""
    if session_id is not None:
        from ..stores._checks import validate_id

        validate_id(session_id, "--session")


async def run_chat(args: argparse.Namespace) -> int:
    from ..chats.book import ChatBook
    from ..chats.supervisor import RunSupervisor

    _check_session_id(args.session)
    agents = load_agents(args.app, args.demo)
    if not agents:
        raise UserError("no model configured", hint=no_model_hint())
    await _check_model(agents)
    await check_stores(args.db)  # a file it cannot use: two lines, exit 2, no prompt
    printer = make_printer(args)
    session, checkpointer = open_stores(args.db, create=True)
    # no page to decide on: a call that needs approval is left to the agent's handler
    supervisor = RunSupervisor(
        agents, ChatBook(session, checkpointer), probe=False, park_approvals=False
    )
    chat_id = args.session or uuid.uuid4().hex
    loop = asyncio.get_running_loop()

    stopping: set[asyncio.Future[Any]] = set()
    reading: list[asyncio.Future[str | None]] = []
    interrupted = False

    def on_interrupt() -> None:
        nonlocal interrupted
        if chat_id in supervisor.live:
            task = asyncio.ensure_future(supervisor.stop(chat_id))
            stopping.add(task)
            task.add_done_callback(stopping.discard)
            return
        interrupted = True  # nothing running: Ctrl-C ends the chat
        if reading and not reading[0].done():
            print(flush=True)
            reading[0].set_result(None)

    with contextlib.suppress(NotImplementedError):  # no signal handlers on some platforms
        loop.add_signal_handler(signal.SIGINT, on_interrupt)
    # after the handler: a Ctrl-C once the banner is out is the chat's own
    print(f"lovia chat: agent {next(iter(agents))}, session {chat_id}. {HELP}", flush=True)
    try:
        while not interrupted:
            line = await _read_line("you> ", reading)
            if line is None or line.strip() in ("/quit", "/exit"):
                break
            text = line.strip()
            if not text:
                continue
            if text.startswith("/"):
                chat_id = await _command(text, chat_id, supervisor)
                continue

            async def prepare(text: str = text) -> str:
                return text

            try:
                run = await supervisor.begin(chat_id, prepare)
            except LoviaError as exc:
                print(f"[{exc}]")
                continue
            try:
                async for _, event in run.follow():
                    printer.event(event)
            finally:
                printer.close()
            await run.finished.wait()
    finally:
        with contextlib.suppress(NotImplementedError):
            loop.remove_signal_handler(signal.SIGINT)
        await supervisor.close()
        await session.close()
        await checkpointer.close()
    print(f"bye (session {chat_id} is stored in {shown_db(args.db)})")
    return 130 if interrupted else 0  # the exit status of a Ctrl-C, as documented


async def _command(text: str, chat_id: str, supervisor: Any) -> str:
    name, _, rest = text.partition(" ")
    if name == "/new":
        chat_id = uuid.uuid4().hex
        print(f"[new session {chat_id}]")
    elif name == "/history":
        entries = await supervisor.chats.session.load(chat_id)
        if not entries:
            print("[no history yet]")
        for i, e in enumerate(entries):
            print(f"  [{i}] {describe_entry(e)}")
    elif name == "/rewind":
        if not rest.strip().isdigit():
            print("[usage: /rewind N  (keep the first N entries; see /history)]")
        else:
            try:
                async with supervisor.claimed(chat_id):  # not while a server answers it
                    done = await supervisor.chats.rewind(chat_id, int(rest))
            except LoviaError as exc:
                print(f"[{exc}]")
            else:
                print(f"[removed {counted(done.removed, 'entry', 'entries')}]")
    elif name == "/help":
        print(HELP)
    else:
        print(f"[unknown command {name}; {HELP}]")
    return chat_id
