"""Gated tools: approving from the stream, rejecting, approval_handler, unanswered requests."""

# ruff: noqa: E402
import asyncio
import json
import sys
import traceback

RESULTS: dict = {}


def check(name):
    """Record what ``fn`` returns (or which exception it raised) under ``name``."""

    def record(fn):
        try:
            value = fn()
            if asyncio.iscoroutine(value):
                value = asyncio.run(value)
            json.dumps(value)
        except Exception as exc:
            print(f"--- {name}:", file=sys.stderr)
            traceback.print_exc(file=sys.stderr)
            value = {"raised": type(exc).__name__}
        RESULTS[name] = value
        return fn

    return record


from lovia import Agent, Runner, events, tool
from lovia.testing import ScriptedProvider, batch, text

done = []


@tool(needs_approval=lambda args, ctx: args["amount_cents"] > 5_000)
async def refund(order_id: str, amount_cents: int) -> str:
    """Issue a refund."""
    done.append([order_id, amount_cents])
    return "refunded"


def agent(**kw):
    script = [
        batch(
            ("refund", {"order_id": "A1", "amount_cents": 6000}, "r1"),
            ("refund", {"order_id": "A2", "amount_cents": 100}, "r2"),
        ),
        text("ok"),
    ]
    return Agent(name="support", model=ScriptedProvider(script), tools=[refund], **kw)


def outcomes(result):
    return {
        e.call_id: [e.is_error, e.output if not e.is_error else e.output.split(":")[0]]
        for e in result.entries
        if e.type == "tool_result"
    }


@check("approve_in_stream")
def _():
    async def main():
        done.clear()
        handle = Runner.stream(agent(), "refund both")
        asked = []
        async for ev in handle:
            if isinstance(ev, events.ApprovalRequired):
                asked.append([ev.call.id, ev.call.name, ev.call.arguments])
                ev.approve()
        r = await handle
        return [asked, outcomes(r), sorted(done)]

    return main()


@check("reject_in_stream")
def _():
    async def main():
        done.clear()
        handle = Runner.stream(agent(), "refund both")
        async for ev in handle:
            if isinstance(ev, events.ApprovalRequired):
                ev.reject()
        r = await handle
        return [outcomes(r), sorted(done)]

    return main()


@check("handler")
def _():
    done.clear()
    r = Runner.run_sync(agent(approval_handler=lambda call, ctx: "allow"), "refund both")
    r2 = Runner.run_sync(agent(approval_handler=lambda call, ctx: False), "refund both")
    return [outcomes(r), outcomes(r2), sorted(done)]


@check("no_handler_non_streaming_denies")
def _():
    done.clear()
    r = Runner.run_sync(agent(), "refund both")
    return [outcomes(r), sorted(done)]


@check("out_of_band_channel")
def _():
    async def main():
        done.clear()
        handle = Runner.stream(agent(), "refund both")
        async for ev in handle:
            if isinstance(ev, events.ApprovalRequired):
                handle.approvals.approve(ev.call.id)
        r = await handle
        return [outcomes(r), sorted(done)]

    return main()


print(json.dumps(RESULTS, sort_keys=True))
