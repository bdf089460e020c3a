"""Hello, lovia: one agent, one scripted model, no network.

Run: python examples/01_hello.py
"""

from __future__ import annotations

from lovia import Agent, Runner
from lovia.testing import ScriptedProvider, text


def main() -> str:
    model = ScriptedProvider([text("Hello! I am a lovia agent running offline.")])
    agent = Agent("greeter", instructions="Greet the user in one sentence.", model=model)
    result = Runner.run_sync(agent, "Hi there")
    print(result.output)
    print(f"turns={result.turns} tokens={result.usage.total_tokens}")
    return str(result.output)


if __name__ == "__main__":
    main()
