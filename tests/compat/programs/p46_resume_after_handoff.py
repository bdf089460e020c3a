"""Resuming a run that stopped after a handoff continues as the target agent."""

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


from lovia import (
    Agent,
    CancelToken,
    CheckpointOptions,
    InMemoryCheckpointer,
    RunCancelled,
    Runner,
    events,
)
from lovia.testing import ScriptedProvider, call, text

cp = InMemoryCheckpointer()


def build(triage_script, billing_script, hooks=None):
    billing = Agent(name="billing", instructions="Billing.", model=ScriptedProvider(billing_script))
    triage = Agent(
        name="triage",
        instructions="Route.",
        model=ScriptedProvider(triage_script),
        handoffs=[billing],
        hooks=hooks,
    )
    return triage, billing


@check("stopped")
def _():
    from lovia import AgentHooks

    token = CancelToken()
    hooks = AgentHooks()

    @hooks.on(events.HandoffOccurred)
    def stop(ev, ctx):
        token.cancel("deploy")

    triage, _ = build([call("transfer_to_billing", {}, call_id="h1")], [text("never")], hooks)
    try:
        Runner.run_sync(
            triage, "charged twice", checkpoint=CheckpointOptions(cp, "t1"), cancel_token=token
        )
        return "completed"
    except RunCancelled:

        async def snap():
            s = await cp.load("t1")
            return [s.status, s.agent_name, s.turns, s.pending_handoff, [e.type for e in s.entries]]

        return asyncio.run(snap())


@check("resumed")
def _():
    triage, billing = build([], [text("Refunded.")])
    r = Runner.run_sync(triage, "ignored", checkpoint=CheckpointOptions(cp, "t1"))
    return [
        r.output,
        r.final_agent.name,
        r.turns,
        [[m.role, m.content] for m in billing.model.calls[0]],
    ]


@check("renamed_agent_replay_degrades")
def _():
    triage, _ = build([], [])
    renamed = triage.clone(handoffs=[])
    r = Runner.run_sync(renamed, "x", checkpoint=CheckpointOptions(cp, "t1"))
    return [r.output, r.final_agent.name]


print(json.dumps(RESULTS, sort_keys=True))
