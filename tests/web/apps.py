"""Agents the web and CLI tests serve (importable as ``tests.web.apps:NAME`` for --app)."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from lovia import Agent, tool
from lovia.messages import AssistantTurn, Message
from lovia.testing import ScriptedProvider, call, text


@tool
async def block(note: str = "") -> str:
    """Wait a long time when LOVIA_TEST_BLOCK is set (so a test can kill the server)."""
    if os.environ.get("LOVIA_TEST_BLOCK"):
        await asyncio.sleep(600)
    return f"unblocked {note}".strip()


def _block_then_answer(messages: list[Message]) -> AssistantTurn:
    last = messages[-1]
    if last.role == "tool":
        return text(f"finished after {last.content}")
    return call("block", {"note": "once"}, call_id=f"call_block_{len(messages)}")


class Stateless:
    """A provider that answers every call with ``turn(messages)`` (wraps a fresh
    ``ScriptedProvider`` per call, so it never runs dry and keeps no state)."""

    name = "stateless"
    model = "stateless"
    supports_json_schema = False

    def __init__(self, turn: Any) -> None:
        self.turn = turn

    async def stream(self, entries: Any, **kwargs: Any) -> Any:
        async for delta in ScriptedProvider([self.turn]).stream(entries, **kwargs):
            yield delta


blocking = Agent("blocker", model=Stateless(_block_then_answer), tools=[block])
"""Calls ``block`` once, then answers; stateless, so a new process can resume it."""

agents = {"blocker": blocking}


class SlowEcho:
    """Answers ``echo: <last user message>`` after ``LOVIA_TEST_DELAY`` seconds (default
    0.2), so two servers' requests on one chat overlap; stateless like ``Stateless``."""

    name = "slow-echo"
    model = "slow-echo"
    supports_json_schema = False

    async def stream(self, entries: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(float(os.environ.get("LOVIA_TEST_DELAY", "0.2")))
        users = [e for e in entries if getattr(e, "role", None) == "user"]
        turn = text(f"echo: {users[-1].text if users else ''}")
        async for delta in ScriptedProvider([turn]).stream(entries, **kwargs):
            yield delta


slow = {"echo": Agent("echo", model=SlowEcho())}
"""Echoes the last user message after a short pause (the two-server race tests)."""


@tool(needs_approval=True)
def pay(amount: int, to: str) -> str:
    """Pay ``amount`` to ``to`` (needs a person's approval); each payment is a line in the
    file LOVIA_TEST_PAID names, so a test counts how often the tool really ran."""
    ledger = os.environ.get("LOVIA_TEST_PAID")
    if ledger:
        with open(ledger, "a", encoding="utf-8") as f:
            f.write(f"{amount} {to}\n")
    return f"paid {amount} to {to}"


PAYEE = '<img src=x onerror="document.body.dataset.pwned=1">bob'
"""Untrusted text in the call's arguments: the page must show it as text."""


def _pay_then_answer(messages: list[Message]) -> AssistantTurn:
    last = messages[-1]
    if last.role == "tool":
        return text(f"after the payment: {last.content}")
    return call("pay", {"amount": 5, "to": PAYEE}, call_id=f"call_pay_{len(messages)}")


paying = {"payer": Agent("payer", model=Stateless(_pay_then_answer), tools=[pay])}
"""Asks to pay (a tool that needs approval), then reports the tool's result."""

HIDDEN_PAYEE = "\u202emoc.live\u202c bob\u200b"
"""A payee whose invisible characters (a right-to-left override, a zero-width space) would
make the approval card show another text than the one the call carries."""


def _pay_hidden_then_answer(messages: list[Message]) -> AssistantTurn:
    last = messages[-1]
    if last.role == "tool":
        return text(f"after the payment: {last.content}")
    return call("pay", {"amount": 5, "to": HIDDEN_PAYEE}, call_id=f"call_pay_{len(messages)}")


paying_hidden = {"payer": Agent("payer", model=Stateless(_pay_hidden_then_answer), tools=[pay])}
"""Asks to pay someone whose name hides characters; then reports the tool's result."""


@tool
async def nap() -> str:
    """Sleep LOVIA_TEST_NAP seconds (default 1): a step during which a message can join."""
    await asyncio.sleep(float(os.environ.get("LOVIA_TEST_NAP", "1")))
    return "rested"


class Listener:
    """Naps once per user message it has not napped for, then answers ``heard: a | b`` with
    every user message of the chat (after LOVIA_TEST_THINK seconds, default 0); stateless."""

    name = "listener"
    model = "listener"
    supports_json_schema = False

    async def stream(self, entries: Any, **kwargs: Any) -> Any:
        users = [e.text for e in entries if e.type == "input" and e.role == "user"]
        steps = [e.type for e in entries if e.type == "tool_result" or e.type == "input"]
        if steps and steps[-1] == "input":
            turn = call("nap", {}, call_id=f"call_nap_{len(entries)}")
        else:
            await asyncio.sleep(float(os.environ.get("LOVIA_TEST_THINK", "0")))
            turn = text("heard: " + " | ".join(users))
        async for delta in ScriptedProvider([turn]).stream(entries, **kwargs):
            yield delta


listening = {"listener": Agent("listener", model=Listener(), tools=[nap])}
"""Naps, then repeats what it heard: messages sent during a nap join the run."""


@tool(needs_approval=True)
def charge(cents: int) -> str:
    """Charge ``cents`` (needs a person's approval); each charge is a line in the file
    LOVIA_TEST_CHARGED names."""
    ledger = os.environ.get("LOVIA_TEST_CHARGED")
    if ledger:
        with open(ledger, "a", encoding="utf-8") as f:
            f.write(f"{cents}\n")
    return f"charged {cents}"


def _charge_then_answer(messages: list[Message]) -> AssistantTurn:
    """``charge N``: asks to charge N with the call id ``call_0`` (ids numbered from zero,
    as some providers and local servers do), then reports the result."""
    last = messages[-1]
    if last.role == "tool":
        return text(f"done: {last.content}")
    words = str(last.content or "").split()
    cents = int(words[-1]) if words and words[-1].isdigit() else 1
    return call("charge", {"cents": cents}, call_id="call_0")


charging = {"charger": Agent("charger", model=Stateless(_charge_then_answer), tools=[charge])}
"""Asks to charge the amount the last message names, always as ``call_0``."""


def _note(ledger: str) -> None:
    with open(ledger, "a", encoding="utf-8") as f:
        f.write("title\n")


class Namer:
    """Answers a chat message with ``ok`` and a title request with ``Kill Test Title``; each
    title call is a line in the file LOVIA_TEST_TITLE_CALLS names, and with
    LOVIA_TEST_BLOCK_TITLES set a title call waits a long time (so a test can kill the
    server during it)."""

    name = "namer"
    model = "namer"
    supports_json_schema = False

    async def stream(self, entries: Any, **kwargs: Any) -> Any:
        users = [e for e in entries if getattr(e, "role", None) == "user"]
        asked = users[-1].text if users else ""
        turn = text("ok")
        if asked.startswith("Write a short title"):
            ledger = os.environ.get("LOVIA_TEST_TITLE_CALLS")
            if ledger:
                _note(ledger)
            if os.environ.get("LOVIA_TEST_BLOCK_TITLES"):
                await asyncio.sleep(600)
            turn = text("Kill Test Title")
        async for delta in ScriptedProvider([turn]).stream(entries, **kwargs):
            yield delta


named = {"namer": Agent("namer", model=Namer())}
"""Names its chats "Kill Test Title" (the durable title tests)."""
