"""What an MCP tool's result becomes for the model: text, and images as ``ImagePart``s."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ...parts import ImagePart, InvalidContent, TextPart

__all__ = ["MCPToolResult", "normalize_schema", "render_mcp_content", "result_value"]


@dataclass
class MCPToolResult:
    """One MCP tool call's raw answer: the server's ``content`` blocks, its
    ``structured_content`` (or ``None``) and its ``is_error`` flag.

    A server's ``result_renderer`` receives this; ``str(result)`` is the default text.
    """

    content: list[Any] = field(default_factory=list)
    is_error: bool = False
    structured_content: Any = None

    def __str__(self) -> str:
        return render_mcp_content(
            self.content, is_error=self.is_error, structured=self.structured_content
        )


def _mime(obj: Any) -> str:
    return str(getattr(obj, "mime_type", None) or getattr(obj, "mimeType", None) or "")


def _size(b64: str | None) -> str:
    n = max(0, len(b64) * 3 // 4 - b64[-2:].count("=")) if b64 else 0
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n / (1024 * 1024):.1f} MB"


def _block_text(block: Any) -> str:
    """One block as text: binary content becomes a short ``[kind: mime, size]`` note, never
    its base64 (which would fill the model's context)."""
    kind = getattr(block, "type", None)
    if kind == "text":
        return str(getattr(block, "text", "") or "")
    if kind in ("image", "audio"):
        return f"[{kind}: {_mime(block) or 'application/octet-stream'}, {_size(block.data)}]"
    if kind == "resource_link":
        return f"[resource link: {getattr(block, 'uri', '')}]"
    if kind == "resource":
        resource = getattr(block, "resource", None)
        text = getattr(resource, "text", None)
        if text is not None:
            return str(text)
        mime = _mime(resource) or "application/octet-stream"
        blob = getattr(resource, "blob", None)
        return f"[resource: {getattr(resource, 'uri', '')}, {mime}, {_size(blob)}]"
    dump = getattr(block, "model_dump", None)
    if callable(dump):
        data = {k: v for k, v in dump(mode="json").items() if k not in ("data", "blob")}
        return json.dumps(data, ensure_ascii=False)
    return str(block)


def render_mcp_content(
    content: list[Any], *, is_error: bool = False, structured: Any = None
) -> str:
    """MCP content blocks as the text the model reads (structured content as JSON when the
    server sent no blocks); ``is_error`` puts ``[tool error]`` in front."""
    text = "\n".join(_block_text(b) for b in content)
    if not content and structured is not None:
        text = json.dumps(structured, ensure_ascii=False, default=str)
    if is_error:
        return f"[tool error] {text}" if text else "[tool error]"
    return text


def _image_of(block: Any) -> ImagePart | None:
    """The block as an ``ImagePart``, for image blocks and embedded image blobs."""
    kind = getattr(block, "type", None)
    data: str | None = None
    mime = ""
    if kind == "image":
        data, mime = getattr(block, "data", None), _mime(block)
    elif kind == "resource":
        resource = getattr(block, "resource", None)
        data, mime = getattr(resource, "blob", None), _mime(resource)
    if not data or not mime.startswith("image/"):
        return None
    try:
        return ImagePart(data=data, mime_type=mime)
    except InvalidContent:
        return None  # malformed or oversized: the text note stands in for it


def result_value(result: MCPToolResult) -> str | list[TextPart | ImagePart]:
    """The tool's return value: plain text, or text and image parts when the server sent
    images (a list the run stores as the tool result's parts)."""
    parts: list[TextPart | ImagePart] = []
    texts: list[str] = []
    for block in result.content:
        image = _image_of(block)
        if image is None:
            texts.append(_block_text(block))
            continue
        if texts:
            parts.append(TextPart("\n".join(texts)))
            texts = []
        parts.append(image)
    if not any(isinstance(p, ImagePart) for p in parts):
        return str(result)
    if texts:
        parts.append(TextPart("\n".join(texts)))
    return parts


def normalize_schema(schema: object) -> dict[str, Any]:
    """An MCP input schema as a valid object schema: servers send ``None``, ``{}`` or an
    object without ``properties``, which function-calling APIs reject."""
    if not isinstance(schema, dict) or not schema:
        return {"type": "object", "properties": {}}
    out = dict(schema)
    out.setdefault("type", "object")
    if out.get("type") == "object" and not isinstance(out.get("properties"), dict):
        out["properties"] = {}
    out.pop("title", None)  # the SDK's generated "fooArguments" says nothing to a model
    return out
