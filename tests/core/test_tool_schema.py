"""@tool builds its JSON schema from the signature, docstring, Annotated and Field."""

from __future__ import annotations

from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field

from lovia import RunContext, Tool, ToolError, UserError, tool


def test_basic_types_become_json_schema_types() -> None:
    @tool
    def f(s: str, i: int, x: float, b: bool) -> str:
        """Do things."""
        return ""

    props = f.parameters["properties"]
    assert [props[k]["type"] for k in ("s", "i", "x", "b")] == [
        "string",
        "integer",
        "number",
        "boolean",
    ]
    assert f.parameters["required"] == ["s", "i", "x", "b"]
    assert f.description == "Do things."
    assert f.name == "f"


def test_lists_optional_and_literal() -> None:
    @tool
    def f(tags: list[str], limit: int | None = None, mode: Literal["a", "b"] = "a") -> str:
        return ""

    props = f.parameters["properties"]
    assert props["tags"] == {"items": {"type": "string"}, "type": "array"}  # no derived title
    assert {"type": "null"} in props["limit"]["anyOf"]
    assert props["mode"]["enum"] == ["a", "b"]
    assert f.parameters["required"] == ["tags"]


def test_pydantic_model_parameter_is_a_nested_schema() -> None:
    class Point(BaseModel):
        x: int
        y: int

    @tool
    def move(to: Point) -> str:
        return ""

    schema = move.parameters
    ref = schema["properties"]["to"]["$ref"]
    name = ref.rsplit("/", 1)[-1]
    assert set(schema["$defs"][name]["properties"]) == {"x", "y"}


def test_descriptions_from_docstring_annotated_and_field() -> None:
    @tool
    def search(
        query: str,
        lang: Annotated[str, "ISO language code"] = "en",
        limit: int = Field(10, description="How many hits", ge=1),
    ) -> str:
        """Search the web.

        Longer text that is not part of the summary.

        Args:
            query: What to look for,
                on one or more lines.
            lang: ignored, Annotated wins.
        """
        return ""

    props = search.parameters["properties"]
    assert search.description == "Search the web."
    assert props["query"]["description"] == "What to look for, on one or more lines."
    assert props["lang"]["description"] == "ISO language code"
    assert props["limit"]["description"] == "How many hits"
    assert props["limit"]["minimum"] == 1


def test_run_context_parameter_is_not_in_the_schema() -> None:
    @tool
    def f(ctx: RunContext[int], a: int) -> str:
        return ""

    assert list(f.parameters["properties"]) == ["a"]


def test_decorator_options() -> None:
    @tool(name="lookup", description="Find it.", parallel=False, timeout=2.5)
    async def f(a: int) -> str:
        return ""

    assert isinstance(f, Tool)
    assert (f.name, f.description, f.parallel, f.timeout) == ("lookup", "Find it.", False, 2.5)
    assert f.schema()["name"] == "lookup"


def test_bad_declarations_are_clear_errors() -> None:
    with pytest.raises(ToolError, match="kwargs"):

        @tool
        def f(**kwargs: int) -> str:
            return ""

    with pytest.raises(UserError, match="invalid tool name"):
        tool(name="has space")(lambda: "")
    with pytest.raises(UserError, match="timeout"):
        tool(name="ok", timeout=0)(lambda: "")


def test_schema_has_no_derived_titles_but_keeps_a_field_called_title() -> None:
    class Page(BaseModel):
        title: str
        tags: list[str] = []

    @tool
    def save(page: Page, title: str, n: int = Field(3, title="N", description="how many")) -> str:
        """Save."""
        return ""

    def titles(node: object) -> list[object]:
        if isinstance(node, dict):
            own = [node["title"]] if isinstance(node.get("title"), str) else []
            return own + [t for v in node.values() for t in titles(v)]
        return [t for v in node for t in titles(v)] if isinstance(node, list) else []

    assert titles(save.parameters) == []
    assert save.parameters["properties"]["title"] == {"type": "string"}
    assert save.parameters["properties"]["n"] == {
        "default": 3,
        "description": "how many",
        "type": "integer",
    }
    assert save.parameters["$defs"]["Page"]["properties"]["title"] == {"type": "string"}


def test_two_run_context_parameters_are_refused() -> None:
    with pytest.raises(UserError, match="RunContext") as caught:

        @tool
        def bad(a: RunContext, b: RunContext) -> str:  # type: ignore[type-arg]
            """Bad."""
            return ""

    assert caught.value.hint
