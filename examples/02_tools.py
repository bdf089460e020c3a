"""Tools: the model calls two typed functions in one turn; they run concurrently.

Run: python examples/02_tools.py
"""

from __future__ import annotations

import asyncio
from typing import Annotated

from lovia import Agent, RunContext, Runner, tool
from lovia.events import ToolCallCompleted, ToolCallStarted
from lovia.testing import ScriptedProvider, batch, text


@tool
async def weather(city: Annotated[str, "City name, e.g. 'Paris'"]) -> dict[str, object]:
    """Look up the current weather of a city."""
    await asyncio.sleep(0.05)  # stands for an HTTP call
    return {"city": city, "celsius": 21}


@tool
def convert(celsius: float, ctx: RunContext[None]) -> str:
    """Convert Celsius to Fahrenheit.

    Args:
        celsius: The temperature in degrees Celsius.
    """
    return f"{celsius * 9 / 5 + 32:.1f}F (turn {ctx.turn})"


async def main() -> str:
    model = ScriptedProvider(
        [
            batch(("weather", {"city": "Paris"}), ("convert", {"celsius": 21})),
            text("It is 21C (69.8F) in Paris."),
        ]
    )
    agent = Agent("weather", instructions="Answer briefly.", model=model, tools=[weather, convert])
    handle = Runner.stream(agent, "How warm is Paris, in Fahrenheit?")
    async for event in handle:
        if isinstance(event, ToolCallStarted):
            print(f"-> {event.call.name}({event.call.arguments})")
        elif isinstance(event, ToolCallCompleted):
            print(f"<- {event.call.name}: {event.output}")
    result = await handle.result()
    print(result.output)
    return str(result.output)


if __name__ == "__main__":
    asyncio.run(main())
