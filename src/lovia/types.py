"""Type aliases for JSON data, for annotating what crosses a boundary as JSON: tool
arguments, provider request bodies, stored snapshots, schemas."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

__all__ = ["JsonArray", "JsonObject", "JsonPrimitive", "JsonSchema", "JsonValue"]

JsonPrimitive: TypeAlias = str | int | float | bool | None
"""A JSON scalar."""

JsonValue: TypeAlias = JsonPrimitive | Mapping[str, "JsonValue"] | Sequence["JsonValue"]
"""Any JSON value (read-only containers, so a ``dict[str, int]`` fits)."""

JsonObject: TypeAlias = dict[str, JsonValue]
"""A JSON object."""

JsonArray: TypeAlias = list[JsonValue]
"""A JSON array."""

JsonSchema: TypeAlias = JsonObject
"""A JSON Schema document."""
