"""Handoff details: two transfers in one turn, custom names, name slugs, history carried."""

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


from lovia import Agent, Handoff, Runner
from lovia.testing import ScriptedProvider, batch, text


@check("first_handoff_wins")
def _():
    fired = []
    a = Agent(name="alpha", model=ScriptedProvider([text("alpha here")]))
    b = Agent(name="beta", model=ScriptedProvider([text("beta here")]))
    triage = Agent(
        name="triage",
        model=ScriptedProvider(
            [batch(("transfer_to_alpha", {}, "h1"), ("transfer_to_beta", {}, "h2"))]
        ),
        handoffs=[
            Handoff(target=a, on_handoff=lambda args, ctx: fired.append("alpha")),
            Handoff(target=b, on_handoff=lambda args, ctx: fired.append("beta")),
        ],
    )
    r = Runner.run_sync(triage, "help")
    return [
        r.output,
        r.final_agent.name,
        fired,
        [[e.call_id, e.is_error] for e in r.entries if e.type == "tool_result"],
    ]


@check("custom_tool_name")
def _():
    target = Agent(name="billing", model=ScriptedProvider([text("billing here")]))
    triage = Agent(
        name="t",
        model=ScriptedProvider([batch(("go_billing", {"reason": "money"}, "h"))]),
        handoffs=[Handoff(target=target, name="go_billing")],
    )
    r = Runner.run_sync(triage, "refund")
    return [r.output, r.final_agent.name, [e.output for e in r.entries if e.type == "tool_result"]]


@check("slugged_names")
def _():
    seen = []

    class Capture:
        name = "capture"
        model = None
        supports_json_schema = False

        async def stream(self, entries, *, tools=None, response_format=None, settings=None):
            from lovia.transcript import FinishDelta, TextDelta

            seen.extend(sorted(t.get("name") or t["function"]["name"] for t in tools or []))
            yield TextDelta(text="ok")
            yield FinishDelta(reason="stop")

    targets = [
        Agent(name=n, model=ScriptedProvider([]))
        for n in ("Billing Team", "Crème brûlée", "support")
    ]
    Runner.run_sync(Agent(name="t", model=Capture(), handoffs=targets), "x")
    return [n for n in seen if n.startswith("transfer_to_")]


@check("extra_instructions_reapplied")
def _():
    billing = Agent(name="billing", instructions="Billing.", model=ScriptedProvider([text("done")]))
    triage = Agent(
        name="triage",
        instructions="Route.",
        model=ScriptedProvider([batch(("transfer_to_billing", {}, "h"))]),
        handoffs=[billing],
    )
    Runner.run_sync(triage, "q", extra_instructions="Be kind.")
    return billing.model.calls[0][0].content


print(json.dumps(RESULTS, sort_keys=True))
