"""The agent ``test_retest.py`` records a run of and re-tests: ``TAX`` is what its tool adds,
so a test (or a process it starts, through ``LOVIA_RETEST_TAX``) can change the tool."""

from __future__ import annotations

import os

from lovia import Agent, tool


@tool
def price(item: str) -> str:
    """The price of an item, tax included."""
    tax = int(os.environ.get("LOVIA_RETEST_TAX", "20"))
    return f"{item}: {100 + tax}"


agent = Agent("shop", instructions="Answer with prices.", tools=[price])
