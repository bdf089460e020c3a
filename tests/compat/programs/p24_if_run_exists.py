"""CheckpointOptions policies: resume, restart, fail, resume_only; positional form."""

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


from lovia import Agent, CheckpointOptions, InMemoryCheckpointer, Runner, UserError
from lovia.testing import ScriptedProvider, text

cp = InMemoryCheckpointer()
HINTS = {}


def run(answer, opts, inp="q"):
    provider = ScriptedProvider([text(answer)] if answer else [])
    try:
        r = Runner.run_sync(Agent(name="bot", model=provider), inp, checkpoint=opts)
        return [r.output, len(provider.calls)]
    except UserError as exc:
        HINTS[str(opts.run_id) + ":" + opts.if_run_exists] = bool(getattr(exc, "hint", None))
        return "UserError"


@check("policies")
def _():
    return {
        "fresh": run("one", CheckpointOptions(cp, "r1")),
        "resume_completed": run("unused", CheckpointOptions(cp, "r1")),
        "restart": run("two", CheckpointOptions(cp, "r1", if_run_exists="restart")),
        "after_restart": run(None, CheckpointOptions(cp, "r1")),
        "fail": run(None, CheckpointOptions(cp, "r1", if_run_exists="fail")),
        "fail_fresh": run("three", CheckpointOptions(cp, "r2", if_run_exists="fail")),
        "resume_only_missing": run(None, CheckpointOptions(cp, "r3", if_run_exists="resume_only")),
        "resume_only_by_id": run(
            None, CheckpointOptions(cp, "r1", if_run_exists="resume_only"), inp=[]
        ),
    }


@check("hints")
def _():
    return HINTS


@check("positional")
def _():
    opts = CheckpointOptions(cp, "r9", "restart")
    return [
        opts.run_id,
        opts.if_run_exists,
        opts.delete_on_success,
        opts.resume_from,
        opts.checkpointer is cp,
    ]


@check("defaults")
def _():
    opts = CheckpointOptions(cp, "x")
    return [opts.if_run_exists, opts.delete_on_success, opts.resume_from]


@check("delete_on_success")
def _():
    async def main():
        from lovia import InMemorySession

        s = InMemorySession()
        await Runner.run(
            Agent(name="bot", model=ScriptedProvider([text("k")])),
            "q",
            session=s,
            session_id="u",
            checkpoint=CheckpointOptions(cp, "gone", delete_on_success=True),
        )
        return [await cp.load("gone"), len(await s.segments("u"))]

    return main()


@check("in_session")
def _():
    """restart / fail for a run whose segment the session already holds."""

    async def main():
        from lovia import InMemoryCheckpointer, InMemorySession

        out = {}
        for policy, deleted in (("restart", False), ("restart", True), ("fail", True)):
            s, c = InMemorySession(), InMemoryCheckpointer()
            first = CheckpointOptions(c, "r")
            await Runner.run(
                Agent(name="bot", model=ScriptedProvider([text("first")])),
                "q",
                session=s,
                session_id="u",
                checkpoint=first,
            )
            if deleted:
                await c.delete("r")
            try:
                r = await Runner.run(
                    Agent(name="bot", model=ScriptedProvider([text("second")])),
                    "q2",
                    session=s,
                    session_id="u",
                    checkpoint=CheckpointOptions(c, "r", if_run_exists=policy),
                )
                got = r.output
            except UserError:
                got = "UserError"
            stored = [e.content for e in await s.load("u") if e.type == "assistant_text"]
            out[f"{policy}:{'deleted' if deleted else 'kept'}"] = [got, stored]
        return out

    return main()


print(json.dumps(RESULTS, sort_keys=True))
