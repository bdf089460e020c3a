"""The model's four subagent tools. Each returns a dict (kept as the result's ``raw``, which
is how a resumed parent finds its children) rendered as text for the model."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any, Protocol

from ...agent import Agent
from ...run_context import RunContext
from ...tools import Tool, tool
from .model import Child

__all__ = ["ParentRun", "subagent_tools"]


class ParentRun(Protocol):
    """What the tools use of one parent run's children: the plugin's bookkeeping hands
    itself over, and this module needs nothing else of the plugin."""

    ctx: RunContext[Any]
    children: dict[str, Child]

    @property
    def max_concurrent(self) -> int: ...

    def recover(self) -> None: ...

    def agent_names(self) -> list[str]: ...

    def agent_named(self, name: str | None) -> Agent | str: ...

    def running(self) -> list[Child]: ...

    def start(self, agent: Agent, prompt: str, task_id: str | None = None) -> Child: ...

    def collect(self, children: list[Child]) -> tuple[list[str], list[str], list[str]]: ...


def _text(value: Any, ctx: RunContext[Any]) -> str:
    return str(value.get("text", "")) if isinstance(value, dict) else str(value)


class _Tools:
    def __init__(self, run: ParentRun) -> None:
        self.run = run

    def answer(self, text: str, **raw: Any) -> dict[str, Any]:
        return {"text": text, "run": self.run.ctx.run_id, **raw}

    async def spawn_subagent(self, prompt: str, agent: str | None = None) -> dict[str, Any]:
        """Start a helper agent on a self-contained task in the background and return at
        once. The helper sees only this prompt. Its report arrives later as a message, or
        through wait_subagents.

        Args:
            prompt: The whole task, with every detail the helper needs.
            agent: Which helper to start, by name.
        """
        self.run.recover()
        if not prompt.strip():
            return self.answer("Nothing spawned: the prompt is empty.")
        chosen = self.run.agent_named(agent)
        if isinstance(chosen, str):
            return self.answer(chosen)
        if len(self.run.running()) >= self.run.max_concurrent:
            return self.answer(
                f"At capacity: {self.run.max_concurrent} subagents are running. Wait "
                "for one with wait_subagents (or cancel one) before spawning another."
            )
        child = self.run.start(chosen, prompt.strip())
        # let the child begin now: the parent's own loop may not yield again before its next
        # turn, and a child that answers at once (a cached or scripted model) then has its
        # report in the mailbox by that turn, as in 0.9.119, instead of being cut off
        await asyncio.sleep(0)
        return self.answer(
            f"Subagent {child.id} (agent={chosen.name}) started in the background. Its "
            "report will arrive as a message; wait_subagents collects it sooner.",
            kind="spawned",
            subagent=child.id,
            agent=chosen.name,
            prompt=child.prompt,
        )

    async def wait_subagents(self, ids: list[str] | None = None, timeout_seconds: int = 60) -> Any:
        """Wait until the given subagents (all of them when no ids are given) finish, or
        the timeout passes, and collect their reports.

        Args:
            ids: The subagent ids to wait for, e.g. ["t1"].
            timeout_seconds: How long to wait at most.
        """
        self.run.recover()
        if not self.run.children:
            return self.answer("No subagents have been spawned in this run.")
        wanted = list(dict.fromkeys(ids)) if ids else list(self.run.children)
        unknown = [i for i in wanted if i not in self.run.children]
        if unknown:
            known = ", ".join(self.run.children)
            return self.answer(f"Unknown subagent id(s) {', '.join(unknown)}. Known: {known}.")
        children = [self.run.children[i] for i in wanted]
        tasks = [c.task for c in children if c.task is not None and not c.task.done()]
        if tasks:
            await asyncio.wait(tasks, timeout=max(0.0, float(timeout_seconds)))
        parts, settled, still = self.run.collect(children)
        if still:
            parts.append(f"Timed out after {timeout_seconds}s; still running: {', '.join(still)}.")
        return self.answer("\n\n".join(parts), settled=settled)

    async def send_to_subagent(self, id: str, message: str) -> dict[str, Any]:
        """Give a running subagent one more instruction; it reads it at its next turn.

        Args:
            id: The subagent's id, e.g. "t1".
            message: What to tell it.
        """
        child = self.run.children.get(id)
        if not message.strip():
            return self.answer("Nothing sent: the message is empty.")
        if child is None:
            return self.answer(f"No subagent {id!r} in this run.")
        if child.report is not None or child.cancelled:
            return self.answer(f"{id} already finished; spawn a new subagent instead.")
        child.mailbox.push(message.strip())
        return self.answer(f"Delivered to {id}; it sees the message at its next turn.")

    async def cancel_subagent(self, id: str) -> dict[str, Any]:
        """Stop a running subagent; it sends no report.

        Args:
            id: The subagent's id, e.g. "t1".
        """
        child = self.run.children.get(id)
        if child is None:
            return self.answer(f"No subagent {id!r} in this run.")
        if child.report is not None:
            return self.answer(f"{id} already finished; nothing to stop.")
        child.token.cancel()
        child.cancelled = True
        return self.answer(f"{id} was asked to stop; it sends no report.", settled=[id])


def _spawn_parameters(generated: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """0.9.119's ``spawn_subagent`` schema: ``agent`` is one of the catalog's names (required
    when there are several to choose from), and absent when children are clones."""
    properties: dict[str, Any] = {"prompt": generated["properties"]["prompt"]}
    if names:
        agent: dict[str, Any] = {"type": "string", "enum": names}
        described = generated["properties"]["agent"].get("description")
        if described:
            agent["description"] = described
        properties["agent"] = agent
    return {
        "type": "object",
        "properties": properties,
        "required": ["agent", "prompt"] if len(names) > 1 else ["prompt"],
        "additionalProperties": False,
    }


def subagent_tools(run: ParentRun) -> list[Tool]:
    tools = _Tools(run)
    spawn = tool(tools.spawn_subagent, result_renderer=_text)
    spawn = dataclasses.replace(
        spawn, parameters=_spawn_parameters(spawn.parameters, run.agent_names())
    )
    return [
        spawn,
        tool(tools.wait_subagents, result_renderer=_text, parallel=False),
        tool(tools.send_to_subagent, result_renderer=_text),
        tool(tools.cancel_subagent, result_renderer=_text),
    ]
