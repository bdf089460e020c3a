"""Handoff: triage transfers to a specialist; events, tool names, final agent."""

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


from lovia import Agent, Handoff, Runner, events
from lovia.testing import ScriptedProvider, call, text


def build(log):
    billing = Agent(
        name="billing",
        instructions="Handle billing.",
        model=ScriptedProvider([text("Refund issued.")]),
    )
    support = Agent(name="support", instructions="Tech.", model=ScriptedProvider([]))
    triage_provider = ScriptedProvider(
        [call("transfer_to_billing", {"reason": "double charge"}, call_id="h1")]
    )
    triage = Agent(
        name="triage",
        instructions="Route.",
        model=triage_provider,
        handoffs=[
            Handoff(
                target=billing,
                description="Billing issues.",
                on_handoff=lambda args, ctx: log.append(["on_handoff", args, ctx.agent.name]),
            ),
            support,
        ],
    )
    return triage, billing


@check("run")
def _():
    async def main():
        log = []
        triage, billing = build(log)
        handle = Runner.stream(triage, "I was charged twice.")
        evs = []
        async for ev in handle:
            if isinstance(ev, events.HandoffOccurred):
                evs.append(
                    [
                        "HandoffOccurred",
                        type(ev.from_agent).__name__,
                        ev.from_agent.name,
                        ev.to_agent.name,
                    ]
                )
            elif isinstance(ev, (events.TurnStarted, events.TurnEnded)):
                evs.append([type(ev).__name__, ev.agent.name, ev.turn])
            elif isinstance(ev, events.ToolCallCompleted):
                evs.append(["ToolCallCompleted", ev.call.name, ev.is_error])
        result = await handle
        return {
            "output": result.output,
            "final_agent": result.final_agent.name,
            "final_is_billing": result.final_agent is billing,
            "turns": result.turns,
            "events": evs,
            "log": log,
            "billing_saw": [[m.role, m.content] for m in billing.model.calls[0]],
            "entries": [e.type for e in result.entries],
        }

    return main()


@check("handoff_fields")
def _():
    target = Agent(name="Billing Team", model=ScriptedProvider([]))
    h = Handoff(target=target)
    return [
        h.target.name,
        h.name,
        h.description is None or isinstance(h.description, str),
        h.on_handoff,
    ]


@check("import_paths")
def _():
    from lovia.handoff import Handoff as H

    return H is Handoff


print(json.dumps(RESULTS, sort_keys=True))
