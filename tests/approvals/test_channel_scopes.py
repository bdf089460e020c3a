"""``ApprovalChannel`` by hand: each call id lives in a scope, ``register`` hands back a future
that the decision resolves, and a streamed run's approvals still go through it."""

from __future__ import annotations

import asyncio

from lovia import Agent, Runner, tool
from lovia.approvals import ApprovalChannel
from lovia.events import ApprovalRequired
from lovia.testing import ScriptedProvider, call, text


async def test_one_call_id_in_two_scopes_is_decided_apart() -> None:
    channel = ApprovalChannel()
    in_a = channel.register("c1", scope="a")
    in_b = channel.register("c1", scope="b")
    assert channel.register("c1", scope="a") is in_a  # registering again: the same wait

    assert channel.resolve("c1", True, scope="a") is True
    assert in_a.result() is True and not in_b.done()
    assert channel.resolve("c1", False, scope="a") is False  # decided already
    assert channel.is_pending("c1", scope="b") and not channel.is_pending("c1")

    channel.release(scope="b")
    assert in_b.result() is False
    assert channel.decision("c1", scope="b") is not None


async def test_defer_leaves_the_future_waiting_and_discard_cancels_it() -> None:
    channel = ApprovalChannel()
    waiting = channel.register("c2")
    assert channel.defer("c2") is True
    assert not waiting.done()
    channel.discard("c2")
    assert waiting.cancelled()
    assert channel.approve("c2") is False  # gone


async def test_release_without_scope_leaves_scoped_calls_alone() -> None:
    channel = ApprovalChannel()
    plain = channel.register("c3")
    scoped = channel.register("c3", scope="s")
    channel.release(decision=True)
    assert plain.result() is True and not scoped.done()
    assert channel.reject("c3", scope="s", reason="no") is True
    assert scoped.result() is False


async def test_a_streamed_run_is_approved_through_its_channel() -> None:
    ran: list[int] = []

    @tool(needs_approval=True)
    def pay(cents: int) -> str:
        ran.append(cents)
        return "paid"

    agent = Agent(
        name="a",
        model=ScriptedProvider([call("pay", {"cents": 5}), text("ok")]),
        tools=[pay],
    )
    handle = Runner.stream(agent, "pay")
    async for event in handle:
        if isinstance(event, ApprovalRequired):
            event.approve()
    result = await asyncio.wait_for(handle.result(), 5)
    assert result.output == "ok" and ran == [5]
