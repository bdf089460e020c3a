"""@tool options: name, description, strict, Annotated descriptions, approval, policies."""

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


from typing import Annotated

from pydantic import Field

from lovia import Tool, tool


@check("renamed")
def _():
    @tool(name="find", description="Find things.")
    def search(query: str, limit: int = 5) -> list[str]:
        """Original docstring."""
        return []

    return [
        search.name,
        search.description,
        search.parameters.get("required"),
        sorted(search.parameters["properties"]),
    ]


@check("annotated")
def _():
    @tool(strict=True)
    def search_docs(
        query: Annotated[str, "Search terms"],
        limit: Annotated[int, Field(ge=1, le=10)] = 5,
    ) -> list[str]:
        """Search internal documentation."""
        return []

    p = search_docs.parameters
    return {
        "required": sorted(p.get("required", [])),
        "additional": p.get("additionalProperties"),
        "query_description": p["properties"]["query"].get("description"),
        "limit_bounds": [
            p["properties"]["limit"].get("minimum"),
            p["properties"]["limit"].get("maximum"),
        ],
    }


@check("functional_form")
def _():
    def shout(text: str) -> str:
        """Shout."""
        return text.upper()

    t = tool(shout, name="yell", retries=2, timeout=3.0, parallel=False, max_output_chars=10)
    return [isinstance(t, Tool), t.name, t.retries, t.timeout, t.parallel, t.max_output_chars]


@check("invoke_directly")
def _():
    @tool
    async def double(n: int) -> int:
        """Double."""
        return n * 2

    async def main():
        return await double.invoke({"n": 4}, None)

    return main()


@check("context_param_hidden")
def _():
    from lovia import RunContext

    @tool
    async def note(ctx: RunContext, text: str) -> str:
        """Save a note."""
        return "saved"

    return sorted(note.parameters["properties"])


@check("two_context_params")
def _():
    from lovia import RunContext, UserError

    try:

        @tool
        def bad(a: RunContext, b: RunContext) -> str:
            """Bad."""
            return ""

        return "accepted"
    except UserError:
        return "UserError"


@check("tool_dataclass")
def _():
    async def impl(args, ctx):
        return args["x"] + 1

    t = Tool(
        name="inc",
        description="Increment.",
        parameters={"type": "object", "properties": {"x": {"type": "integer"}}},
        invoke=impl,
    )
    return [t.name, t.parallel, t.needs_approval, t.retries]


print(json.dumps(RESULTS, sort_keys=True))
