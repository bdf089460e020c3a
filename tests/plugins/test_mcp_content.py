"""How MCP content blocks reach the model (the SDK's own block types, no server needed)."""

from __future__ import annotations

import base64
import sys

import pytest

from lovia.plugins.mcp import MCPToolResult, normalize_schema, render_mcp_content

mcp_types = pytest.importorskip("mcp.types")


def test_binary_blocks_become_short_notes_never_base64() -> None:
    blocks = [
        mcp_types.TextContent(type="text", text="report:"),
        mcp_types.AudioContent(
            type="audio", data=base64.b64encode(b"\0" * 3174).decode(), mime_type="audio/wav"
        ),
        mcp_types.ResourceLink(type="resource_link", uri="file:///r.txt", name="r"),
        mcp_types.EmbeddedResource(
            type="resource",
            resource=mcp_types.TextResourceContents(uri="file:///a.txt", text="inline text"),
        ),
        mcp_types.EmbeddedResource(
            type="resource",
            resource=mcp_types.BlobResourceContents(
                uri="file:///b.bin",
                blob=base64.b64encode(b"\1" * 10).decode(),
                mime_type="application/zip",
            ),
        ),
    ]
    assert render_mcp_content(blocks).splitlines() == [
        "report:",
        "[audio: audio/wav, 3.1 KB]",
        "[resource link: file:///r.txt]",
        "inline text",
        "[resource: file:///b.bin, application/zip, 10 B]",
    ]


def test_an_error_result_reads_as_one() -> None:
    failed = MCPToolResult(
        content=[mcp_types.TextContent(type="text", text="quota")], is_error=True
    )
    assert str(failed) == "[tool error] quota"
    assert render_mcp_content([], is_error=True) == "[tool error]"


def test_structured_content_alone_is_shown_as_json() -> None:
    assert str(MCPToolResult(content=[], structured_content={"temp": 21.5})) == '{"temp": 21.5}'


def test_loose_input_schemas_become_object_schemas() -> None:
    assert normalize_schema(None) == {"type": "object", "properties": {}}
    assert normalize_schema({}) == {"type": "object", "properties": {}}
    assert normalize_schema({"type": "object"}) == {"type": "object", "properties": {}}
    kept = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    assert normalize_schema(kept) == kept


async def test_without_the_mcp_package_opening_a_server_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from lovia import UserError
    from lovia.plugins.mcp import MCPServerStdio

    monkeypatch.setitem(sys.modules, "mcp", None)  # import mcp now fails, as when not installed
    with pytest.raises(UserError) as missing:
        await MCPServerStdio(command="uvx").open()
    assert "lovia[mcp]" in (missing.value.hint or "")
