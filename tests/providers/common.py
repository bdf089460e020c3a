"""Tools the provider tests give their agents. They are async: the calls of one turn then
finish in the order the model asked, which the tests compare. (Sync tools run on worker threads
and may finish in any order: results pair with calls by id, not by position.)"""

from __future__ import annotations

from lovia import tool


@tool
async def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@tool
async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b
