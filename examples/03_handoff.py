"""Handoffs: a triage agent hands the conversation to a specialist, who sees all of it.

Run: python examples/03_handoff.py
"""

from __future__ import annotations

from lovia import Agent, Runner
from lovia.messages import Message
from lovia.testing import ScriptedProvider, call, text


def main() -> str:
    model = ScriptedProvider(
        [
            call("transfer_to_billing", {}),
            text("Billing here: your refund of 20 EUR is on its way."),
        ]
    )
    billing = Agent("billing", instructions="You handle refunds.", model=model)
    triage = Agent(
        "triage",
        instructions="Route the user to the right team.",
        model=model,
        handoffs=[billing],
    )
    result = Runner.run_sync(triage, "I want my 20 EUR back.")
    print(f"[{result.final_agent.name}] {result.output}")
    # the specialist saw the whole body with its own system prompt
    assert model.calls[1][0] == Message(role="system", content="You handle refunds.")
    return str(result.output)


if __name__ == "__main__":
    main()
