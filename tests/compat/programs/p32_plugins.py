"""A plugin contributing a tool, instructions, hooks and a guardrail; setup once per run."""

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


from dataclasses import dataclass, field

from lovia import Agent, AgentHooks, PluginInstance, RunContext, Runner, events, tool
from lovia.testing import ScriptedProvider, call, text


@dataclass
class Glossary:
    terms: dict = field(default_factory=dict)
    log: list = field(default_factory=list)
    name: str = "glossary"

    async def setup(self, ctx: RunContext) -> PluginInstance:
        self.log.append(["setup", ctx.agent.name, ctx.entries == [] or len(ctx.entries)])
        terms = self.terms

        @tool
        async def define(term: str, meaning: str) -> str:
            """Record a term."""
            terms[term] = meaning
            return f"Noted: {term}."

        hooks = AgentHooks()

        @hooks.on(events.RunCompleted)
        def done(ev, ctx):
            self.log.append(["hook", ev.result.output])

        async def aclose():
            self.log.append(["aclose"])

        return PluginInstance(
            tools=[define], instructions="Use the glossary.", hooks=hooks, aclose=aclose
        )


@check("run")
def _():
    plugin = Glossary()
    provider = ScriptedProvider(
        [call("define", {"term": "SLA", "meaning": "service level"}), text("ok")]
    )
    agent = Agent(name="writer", instructions="Write.", model=provider, plugins=[plugin])
    r = Runner.run_sync(agent, "define SLA")
    return {
        "output": r.output,
        "terms": plugin.terms,
        "log": plugin.log,
        "system": provider.calls[0][0].content,
    }


@check("plugin_instance_defaults")
def _():
    inst = PluginInstance()
    return [
        inst.tools,
        inst.view_injectors,
        inst.instructions,
        inst.hooks,
        inst.input_guardrails,
        inst.output_guardrails,
    ]


@check("view_injector_not_persisted")
def _():
    from lovia.transcript import InputEntry

    @dataclass
    class Clock:
        name: str = "clock"

        async def setup(self, ctx):
            return PluginInstance(
                view_injectors=[
                    lambda ctx: [InputEntry(role="user", content="<reminder>tick</reminder>")]
                ]
            )

    provider = ScriptedProvider([text("ok")])
    r = Runner.run_sync(Agent(name="a", model=provider, plugins=[Clock()]), "hi")
    return [[m.role, m.content] for m in provider.calls[0]] + [[e.type for e in r.entries]]


@check("duplicate_plugin_names")
def _():
    from lovia import UserError

    try:
        Runner.run_sync(
            Agent(name="a", model=ScriptedProvider([text("ok")]), plugins=[Glossary(), Glossary()]),
            "hi",
        )
        return "accepted"
    except UserError:
        return "UserError"


@check("import_paths")
def _():
    import lovia.plugins as lp
    from lovia import Plugin

    return [lp.Plugin is Plugin, lp.PluginInstance is PluginInstance]


print(json.dumps(RESULTS, sort_keys=True))
