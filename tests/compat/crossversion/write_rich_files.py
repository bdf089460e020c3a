"""Run under lovia 0.9.119: one file (``rich.db``) holding sessions and checkpoints of many kinds.

Images (inline and by URL) and reasoning, a tool error, non-ASCII and a long output that
0.9.119 then trimmed, a structured output, a system input and a rewind, runs stopped by
``max_turns`` and by a ``RunBudget`` (``interrupted``), a rejected approval, tool arguments that
are not a JSON object, a handoff to an agent that calls another agent as a tool.
"""

import asyncio
import base64

from rich_tools import City, add, big, boom, rm

from lovia import (
    Agent,
    CheckpointOptions,
    ImagePart,
    RunBudget,
    Runner,
    SQLiteCheckpointer,
    SQLiteSession,
    TextPart,
    events,
    system,
    user,
)
from lovia.testing import ScriptedProvider, batch, call, text

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


async def main():
    s = SQLiteSession("rich.db")
    cp = SQLiteCheckpointer("rich.db")
    # image + text input, reasoning answer
    a = Agent(
        name="vis",
        instructions="See.",
        model=ScriptedProvider([text("a dot", reasoning="thinking ü")]),
    )
    await Runner.run(
        a,
        [
            user(
                [
                    TextPart("what is this?"),
                    ImagePart(
                        data=base64.b64encode(PNG).decode(), mime_type="image/png", detail="low"
                    ),
                    ImagePart(url="https://example.com/a.png"),
                ]
            )
        ],
        session=s,
        session_id="s-img",
        checkpoint=CheckpointOptions(cp, "r-img"),
    )
    # tool error, unicode, big output, batch calls, then trim
    a = Agent(
        name="tools",
        model=ScriptedProvider(
            [
                batch(
                    ("boom", {"x": "1"}, "b1"),
                    ("big", {"n": 300}, "b2"),
                    ("add", {"a": 1, "b": 2}, "b3"),
                ),
                text("done ✓"),
            ]
        ),
        tools=[add, boom, big],
    )
    await Runner.run(
        a,
        "do things — ünïcode",
        session=s,
        session_id="s-tools",
        checkpoint=CheckpointOptions(cp, "r-tools"),
    )
    a = Agent(name="tools", model=ScriptedProvider([text("second")]), tools=[add, boom, big])
    await Runner.run(a, "again", session=s, session_id="s-tools")
    await s.trim_tool_results("s-tools", keep_chars=50, keep_runs=1)
    # structured output
    a = Agent(
        name="st",
        model=ScriptedProvider([text('{"name": "Kyoto", "pop": 1.46}')]),
        output_type=City,
    )
    await Runner.run(
        a, "city", session=s, session_id="s-struct", checkpoint=CheckpointOptions(cp, "r-struct")
    )
    # system input + rewind
    for i in range(3):
        a = Agent(name="rw", model=ScriptedProvider([text(f"answer {i}")]))
        await Runner.run(
            a,
            [system("Be a pirate."), user(f"q{i}")] if i == 0 else f"q{i}",
            session=s,
            session_id="s-rewind",
            checkpoint=CheckpointOptions(cp, f"r-rw{i}"),
        )
    await s.rewind("s-rewind", keep_entries=3)
    # max_turns -> interrupted
    a = Agent(
        name="loop",
        model=ScriptedProvider(
            [
                call("add", {"a": 1, "b": 1}, call_id="m1"),
                call("add", {"a": 2, "b": 2}, call_id="m2"),
                text("never"),
            ]
        ),
        tools=[add],
    )
    try:
        await Runner.run(
            a,
            "loop",
            max_turns=2,
            session=s,
            session_id="s-max",
            checkpoint=CheckpointOptions(cp, "r-max"),
        )
    except Exception as e:
        print("max:", type(e).__name__)
    # budget -> stopped
    a = Agent(
        name="bud",
        model=ScriptedProvider(
            [
                call("add", {"a": 1, "b": 1}, call_id="k1"),
                call("add", {"a": 2, "b": 2}, call_id="k2"),
                text("never"),
            ]
        ),
        tools=[add],
    )
    try:
        await Runner.run(
            a,
            "budget",
            budget=RunBudget(max_tool_calls=1),
            session=s,
            session_id="s-bud",
            checkpoint=CheckpointOptions(cp, "r-bud"),
        )
    except Exception as e:
        print("bud:", type(e).__name__)
    # approval rejected, completes
    a = Agent(
        name="ap",
        model=ScriptedProvider([call("rm", {"path": "/x"}, call_id="a1"), text("not removed")]),
        tools=[rm],
    )
    h = Runner.stream(
        a, "rm /x", session=s, session_id="s-ap", checkpoint=CheckpointOptions(cp, "r-ap")
    )
    async for ev in h:
        if isinstance(ev, events.ApprovalRequired):
            ev.reject()
    await h.result()
    # raw non-object args
    from lovia.messages import AssistantTurn, ToolCall, Usage

    weird = AssistantTurn(
        content=None,
        tool_calls=[ToolCall(id="w1", name="add", arguments="[1,2]")],
        usage=Usage(input_tokens=1, output_tokens=1),
    )
    a = Agent(name="weird", model=ScriptedProvider([weird, text("ok")]), tools=[add])
    await Runner.run(
        a, "weird", session=s, session_id="s-weird", checkpoint=CheckpointOptions(cp, "r-weird")
    )
    # handoff + agent as tool
    sub = Agent(name="sub", model=ScriptedProvider([text("sub says hi")]))
    billing = Agent(
        name="billing",
        model=ScriptedProvider(
            [call("ask_sub", {"input": "hi"}, call_id="t1"), text("billing done")]
        ),
        tools=[sub.as_tool()],
    )
    triage = Agent(
        name="triage",
        model=ScriptedProvider([call("transfer_to_billing", {"reason": "money"}, call_id="h1")]),
        handoffs=[billing],
    )
    await Runner.run(
        triage,
        "charged twice",
        session=s,
        session_id="s-hand",
        checkpoint=CheckpointOptions(cp, "r-hand"),
    )


asyncio.run(main())
