"""Tools the provider tests give their agents."""

from __future__ import annotations

from lovia import tool


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b
