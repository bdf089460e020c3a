"""``lovia.tools.base``'s helpers for tool authors: clipping, truncating, rendering, and the
``recall_tool_result`` factory under its ``lovia.tools`` name."""

from __future__ import annotations

import json

from lovia import Agent, RunContext, Runner, ToolResultEntry, tool
from lovia.testing import ScriptedProvider, call, text
from lovia.tools import Tool, recall_tool_result, result_to_text
from lovia.tools.base import (
    apply_tool_policies,
    clip_text,
    render_tool_result,
    run_tool,
    truncate_tool_output,
)


def test_clip_text_keeps_what_fits_and_says_what_it_cut() -> None:
    body = "a" * 60 + "z" * 40
    assert clip_text(body, 100) == (body, False)
    head, cut = clip_text(body, 10, hint="ask for a smaller range")
    assert cut and head.startswith("a" * 10) and "showing 10 of 100 chars" in head
    assert "ask for a smaller range" in head and "z" not in head
    both, cut = clip_text(body, 10, keep_tail=True)
    assert cut and both.startswith("a" * 5) and both.endswith("z" * 5)
    only, cut = clip_text(body, 0)
    assert cut and only == "[... truncated: showing 0 of 100 chars.]"


def test_truncate_tool_output_keeps_head_and_tail() -> None:
    assert truncate_tool_output("short", 10) == "short"
    out = truncate_tool_output("h" * 900 + "t" * 100, 100)
    assert out.startswith("h" * 80) and out.endswith("t" * 20)
    assert "kept 100 of 1,000 chars" in out


def _ctx() -> RunContext[None]:
    return RunContext(deps=None, entries=[], agent=Agent(name="a", model=ScriptedProvider([])))


async def test_render_tool_result_prefers_the_tool_renderer_then_the_default() -> None:
    @tool(result_renderer=lambda value, ctx: {"wrapped": value})
    def own() -> int:
        return 1

    @tool
    def plain() -> int:
        return 2

    async def agent_default(value: object, ctx: RunContext[None]) -> str:
        return f"agent:{value}"

    assert json.loads(await render_tool_result(own, 1, _ctx())) == {"wrapped": 1}
    assert await render_tool_result(plain, 2, _ctx(), default=agent_default) == "agent:2"
    assert await render_tool_result(plain, {"k": [1]}, _ctx()) == '{"k": [1]}'
    assert result_to_text("as is") == "as is"


async def test_run_tool_runs_a_tool_outside_a_run() -> None:
    @tool
    def double(n: int) -> int:
        return n * 2

    assert await run_tool(double, {"n": 21}, _ctx()) == 42


async def test_recall_tool_result_gives_back_an_earlier_output() -> None:
    recall = recall_tool_result(None)
    assert isinstance(recall, Tool) and recall.name == "recall_tool_result"

    @tool
    def report() -> str:
        return "the long report"

    model = ScriptedProvider(
        [call("report", {}, call_id="r1"), call("recall_tool_result", {"ref": "r1"}), text("ok")]
    )
    agent = Agent(name="a", model=model, tools=[report, recall])
    result = await Runner.run(agent, "go")
    outputs = [e.output for e in result.entries if isinstance(e, ToolResultEntry)]
    assert outputs == ["the long report", "the long report"]


async def test_apply_tool_policies_wraps_one_attempt_first_policy_outermost() -> None:
    order: list[str] = []

    def named(label: str) -> object:
        async def policy(invoke: object, args: dict[str, object], ctx: object) -> object:
            order.append(label)
            return f"{label}({await invoke(args, ctx)})"  # type: ignore[operator]

        return policy

    async def invoke(args: dict[str, object], ctx: object) -> object:
        order.append("tool")
        return args["x"]

    out = await apply_tool_policies(invoke, [named("outer"), named("inner")], {"x": 1}, _ctx())  # type: ignore[list-item]
    assert out == "outer(inner(1))" and order == ["outer", "inner", "tool"]
