"""A run cancelled mid-way resumes from its checkpoint; pending calls re-run once."""

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


from lovia import Agent, CheckpointOptions, RunCancelled, Runner, SQLiteCheckpointer, events, tool
from lovia.testing import ScriptedProvider, call, text

executed = []


@tool
def step(n: int) -> str:
    """Do step n."""
    executed.append(n)
    return f"step {n} done"


@tool
def stop(ctx_note: str = "") -> str:
    """Stop the run."""
    executed.append("stop")
    return "stopping"


def make(script):
    return Agent(name="worker", model=ScriptedProvider(script), tools=[step])


@check("interrupted")
def _():
    async def main():
        cp = SQLiteCheckpointer("runs.db")
        from lovia import CancelToken

        token = CancelToken()

        @tool
        def step_then_cancel(n: int) -> str:
            """Do step n, then the operator presses stop."""
            executed.append(n)
            token.cancel("operator stop")
            return f"step {n} done"

        agent = Agent(
            name="worker",
            model=ScriptedProvider(
                [call("step_then_cancel", {"n": 1}, call_id="s1"), text("never")]
            ),
            tools=[step_then_cancel],
        )
        try:
            await Runner.run(
                agent, "work", checkpoint=CheckpointOptions(cp, "job"), cancel_token=token
            )
            outcome = "completed"
        except RunCancelled as exc:
            outcome = ["RunCancelled", str(exc).splitlines()[0]]
        snap = await SQLiteCheckpointer("runs.db").load("job")
        return [
            outcome,
            snap.status,
            snap.turns,
            [e.type for e in snap.entries],
            snap.error is not None,
        ]

    return main()


@check("resumed")
def _():
    async def main():
        executed.clear()
        provider = ScriptedProvider([text("all done")])

        @tool
        def step_then_cancel(n: int) -> str:
            """Do step n, then the operator presses stop."""
            executed.append(n)
            return f"step {n} done"

        agent = Agent(name="worker", model=provider, tools=[step_then_cancel])
        handle = Runner.stream(
            agent,
            "new input is ignored",
            checkpoint=CheckpointOptions(SQLiteCheckpointer("runs.db"), "job"),
        )
        evs = []
        async for ev in handle:
            if not isinstance(ev, events.TextDelta):
                evs.append(type(ev).__name__ + (f":{ev.turn}" if hasattr(ev, "turn") else ""))
        r = await handle
        snap = await SQLiteCheckpointer("runs.db").load("job")
        return {
            "output": r.output,
            "turns": r.turns,
            "entries": [e.type for e in r.entries],
            "inputs": [e.content for e in r.entries if e.type == "input"],
            "executed": list(executed),
            "events": evs,
            "model_saw": [[m.role, m.content] for m in provider.calls[0]],
            "status": snap.status,
        }

    return main()


@check("dangling_call_reexecuted")
def _():
    async def main():
        from lovia import InMemoryCheckpointer, RunHead, Usage
        from lovia.transcript import InputEntry, ToolCallEntry

        executed.clear()
        cp = InMemoryCheckpointer()
        head = RunHead(agent_name="worker", usage=Usage(), turns=1, status="interrupted")
        await cp.append(
            "crashed",
            [
                InputEntry(role="user", content="go"),
                ToolCallEntry(call_id="d1", name="step", arguments='{"n": 7}'),
            ],
            head,
        )
        r = await Runner.run(
            make([text("finished")]), "ignored", checkpoint=CheckpointOptions(cp, "crashed")
        )
        return [r.output, r.turns, list(executed), [e.type for e in r.entries]]

    return main()


print(json.dumps(RESULTS, sort_keys=True))
