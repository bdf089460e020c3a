"""``Subagents``: children that run in the background while the parent keeps working.

A child is a run of its own. Its report reaches the parent once: pushed into the parent's
mailbox (a user message at the next turn), or taken back out of it by ``wait_subagents``
when the model asks first. With ``checkpointer=`` each child is a checkpointed run
(``<parent run id>.<child id>``): a parent resumed after a crash finds the children its
transcript started and not yet reported, resumes each from its checkpoint (a finished one
answers from it without calling the model again) and reports it, once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from typing import Any

from ...agent import Agent, _runtime
from ...errors import RunCancelled, UserError
from ...handoffs import _fresh
from ...reliability import RunBudget
from ...run_context import RunContext
from ...stores.checkpoint import Checkpointer
from ...stores.run_options import CheckpointOptions
from ...usage import Usage
from ..base import PluginInstance
from ._recover import highest_number, pending_children
from ._tools import subagent_tools
from .model import Child, ChildSpec, DeliverFn, RunChildFn, SubagentReport, report_text

__all__ = ["Subagents"]

log = logging.getLogger("lovia.plugins.subagents")

_BOUNDED = (
    "## Background subagents\n"
    "`spawn_subagent(prompt)` starts a helper on a task of its own and returns at once; the "
    "helper sees only the prompt you give it, so make it self-contained. Its report comes "
    "to you as a message at a later turn, or straight away through `wait_subagents`. "
    "`send_to_subagent` adds an instruction to a running helper, `cancel_subagent` stops "
    "one. While helpers run, never finish your reply: wait for them with `wait_subagents` "
    "or cancel them, because they stop when you finish."
)
_DETACHED = (
    "## Background subagents\n"
    "`spawn_subagent(prompt)` starts a helper on a task of its own and returns at once; the "
    "helper sees only the prompt you give it, so make it self-contained. Helpers keep "
    "working after your reply and their reports arrive later, so you may finish your reply "
    "while they run. `wait_subagents` collects a report now, `send_to_subagent` adds an "
    "instruction to a running helper, `cancel_subagent` stops one."
)


class Subagents:
    """Background children for an agent: ``Subagents([researcher, coder])`` spawns those
    (by name), ``Subagents()`` clones the running agent without plugins or handoffs.

    ``deliver=None`` (bounded): reports go to the run's mailbox and children still running
    when the run ends are cancelled. With ``deliver`` (detached): every report goes to it
    and children may outlive the run. ``run_child`` replaces how a child runs;
    ``checkpointer`` makes every child a checkpointed run that survives a crash.
    """

    def __init__(
        self,
        agents: Agent | Sequence[Agent] = (),
        deliver: DeliverFn | None = None,
        run_child: RunChildFn | None = None,
        max_concurrent: int = 4,
        max_turns: int = 50,
        budget: RunBudget | None = None,
        max_result_chars: int | None = 16_000,
        instructions: str | None = None,
        name: str = "subagents",
        *,
        checkpointer: Checkpointer | None = None,
    ) -> None:
        catalog = [agents] if isinstance(agents, Agent) else list(agents)
        names = [a.name for a in catalog]
        twins = sorted({n for n in names if names.count(n) > 1})
        if twins:
            raise UserError(
                f"Subagents: two child agents named {twins[0]!r}",
                hint="the model picks a child by name: give each a name of its own",
            )
        if max_concurrent < 1:
            raise UserError("Subagents(max_concurrent=...) must be 1 or more")
        self.agents = catalog
        self.deliver = deliver
        self.run_child = run_child
        self.max_concurrent = max_concurrent
        self.max_turns = max_turns
        self.budget = budget
        self.max_result_chars = max_result_chars
        self.instructions = instructions
        self.name = name
        self.checkpointer = checkpointer
        self._detached: set[asyncio.Task[None]] = set()

    def __repr__(self) -> str:
        return f"Subagents({[a.name for a in self.agents]!r})"

    async def setup(self, ctx: RunContext[Any]) -> PluginInstance:
        run = _ParentRun(self, ctx)
        run.recover()  # a resumed run's entries are loaded before its plugins are set up
        guide = self.instructions
        if guide is None:
            guide = _BOUNDED if self.deliver is None else _DETACHED
        return PluginInstance(
            tools=subagent_tools(run),
            view_injectors=[run.remind],
            instructions=guide or None,
            aclose=run.close,
        )


class _ParentRun:
    """The children of one parent run."""

    def __init__(self, plugin: Subagents, ctx: RunContext[Any]) -> None:
        self.plugin = plugin
        self.ctx = ctx
        self.children: dict[str, Child] = {}
        self.recovered = False
        self.count = 0  # the n of the last tn started

    # -- choosing and starting ------------------------------------------------------------

    def agent_names(self) -> list[str]:
        """The catalog's names (none when children are clones of the parent)."""
        return [a.name for a in self.plugin.agents]

    def agent_named(self, name: str | None) -> Agent | str:
        """The agent to spawn, or the refusal text."""
        catalog = self.plugin.agents
        if not catalog:
            parent = self.ctx.agent
            return parent.clone(name=f"{parent.name}-sub", plugins=(), handoffs=())
        if name is None or name == "":
            return catalog[0]
        for agent in catalog:
            if agent.name == name:
                return agent
        listed = ", ".join(a.name for a in catalog)
        return f"Nothing spawned: unknown subagent {name!r}. Available: {listed}."

    @property
    def max_concurrent(self) -> int:
        return self.plugin.max_concurrent

    def running(self) -> list[Child]:
        return [c for c in self.children.values() if c.report is None and not c.cancelled]

    def start(self, agent: Agent, prompt: str, task_id: str | None = None) -> Child:
        if task_id is None:
            self.count += 1
            task_id = f"t{self.count}"
        child = Child(id=task_id, agent=agent, prompt=prompt)
        self.children[child.id] = child
        task = asyncio.get_running_loop().create_task(self._run(child))
        child.task = task
        if self.plugin.deliver is not None:
            self.plugin._detached.add(task)
            task.add_done_callback(self.plugin._detached.discard)
        return child

    def spec(self, child: Child) -> ChildSpec:
        return ChildSpec(
            id=child.id,
            agent=child.agent,
            prompt=child.prompt,
            token=child.token,
            parent_session_id=self.ctx.session_id,
            max_turns=self.plugin.max_turns,
            budget=_fresh(self.plugin.budget),
            mailbox=child.mailbox,
        )

    async def _execute(self, child: Child) -> Any:
        spec = self.spec(child)
        if self.plugin.run_child is not None:
            return await self.plugin.run_child(spec)
        agent = spec.agent
        if agent.approval_handler is None:  # headless: nobody can answer an approval
            agent = agent.clone(approval_handler=_deny)
        options: dict[str, Any] = {
            "deps": self.ctx.deps,
            "max_turns": spec.max_turns,
            "budget": spec.budget,
            "cancel_token": spec.token,
            "mailbox": spec.mailbox,
            "tracer": self.ctx.tracer,
            "_parent_usage": _Tally(self.ctx),
        }
        if self.plugin.checkpointer is not None and self.ctx.run_id:
            run_id = f"{self.ctx.run_id}.{child.id}"
            options["checkpoint"] = CheckpointOptions(self.plugin.checkpointer, run_id)
        return await _runtime().run(agent, spec.prompt, **options)

    async def _run(self, child: Child) -> None:
        limit = self.plugin.max_result_chars
        started = time.monotonic()
        try:
            result = await self._execute(child)
        except (RunCancelled, asyncio.CancelledError):
            child.cancelled = True
            return
        except Exception as exc:
            log.warning("subagent %s (%s) failed: %r", child.id, child.agent.name, exc)
            text = report_text(
                child.id,
                child.agent.name,
                f"{type(exc).__name__}: {exc}",
                failed=True,
                limit=limit,
                elapsed=time.monotonic() - started,
            )
            child.report = self._report(child, None, exc, text)
        else:
            text = report_text(
                child.id,
                child.agent.name,
                str(result.output),
                failed=False,
                limit=limit,
                elapsed=time.monotonic() - started,
            )
            child.report = self._report(child, result, None, text)
        await self._hand_over(child)

    def _report(
        self, child: Child, result: Any, error: BaseException | None, text: str
    ) -> SubagentReport:
        return SubagentReport(
            id=child.id,
            agent=child.agent.name,
            prompt=child.prompt,
            session_id=self.ctx.session_id,
            result=result,
            error=error,
            text=text,
        )

    async def _hand_over(self, child: Child) -> None:
        assert child.report is not None
        if self.plugin.deliver is not None:
            try:
                await self.plugin.deliver(child.report)
            except Exception:
                log.warning("subagent %s: deliver() failed", child.id, exc_info=True)
            return
        if not child.collected:
            child.queued = self.ctx.mailbox.push(child.report.text)

    # -- the run's side -------------------------------------------------------------------

    def collect(self, children: list[Child]) -> tuple[list[str], list[str], list[str]]:
        """For ``wait_subagents``: the text for each child, the ids now settled, and the
        ids still running. A report still queued in the mailbox is taken back out and
        returned here instead, so the model reads it once."""
        parts: list[str] = []
        settled: list[str] = []
        still: list[str] = []
        for child in children:
            if child.cancelled:
                parts.append(f"{child.id} was cancelled; no report.")
                settled.append(child.id)
            elif child.report is None:
                still.append(child.id)
            elif child.collected or (
                child.queued is not None and not self.ctx.mailbox.remove(child.queued)
            ):
                parts.append(f"{child.id}: report already delivered (see the conversation).")
            else:
                child.collected = True
                child.queued = None
                parts.append(child.report.text)
                settled.append(child.id)
        return parts, settled, still

    def recover(self) -> None:
        """Once, when the run's entries are there: restart the children this run's
        transcript started and has not heard back from (a resumed run after a crash)."""
        if self.recovered:
            return
        self.recovered = True
        self.count = max(self.count, highest_number(self.ctx.entries, self.ctx.run_id))
        for task_id, agent_name, prompt in pending_children(self.ctx.entries, self.ctx.run_id):
            if task_id in self.children:
                continue
            found = self.agent_named(agent_name)
            if isinstance(found, str):
                log.warning("subagent %s: its agent %r is gone; not resumed", task_id, agent_name)
                continue
            log.info("subagent %s: resumed after the parent run restarted", task_id)
            self.start(found, prompt, task_id)

    def remind(self, ctx: RunContext[Any]) -> list[Any] | None:
        from ...transcript import InputEntry

        self.recover()
        running = self.running()
        if not running or self.plugin.deliver is not None:
            return None
        lines = "\n".join(f"- {c.id} {c.agent.name}: {_preview(c.prompt)}" for c in running)
        text = (
            "<system-reminder>\nBackground subagents running:\n"
            f"{lines}\nDo not finish your reply while they run: call `wait_subagents` for "
            "their reports, or `cancel_subagent` the ones you no longer need.\n"
            "</system-reminder>"
        )
        return [InputEntry(role="user", content=text)]

    async def close(self) -> None:
        """At the run's end: bounded children are cancelled and awaited; detached ones go
        on."""
        if self.plugin.deliver is not None:
            return
        tasks = [c.task for c in self.children.values() if c.task is not None and not c.task.done()]
        for child in self.running():
            child.token.cancel()
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)


class _Tally:
    """Where a child's tokens go: the parent run's usage as it stands when they are counted.
    The parent takes a new ``Usage`` value each turn, so one read at the spawn would miss
    every token of a child still running when the parent's next turn ends."""

    def __init__(self, ctx: RunContext[Any]) -> None:
        self.ctx = ctx

    def add(self, usage: Usage) -> None:
        self.ctx._count(usage)


def _deny(call: Any, ctx: Any) -> str:
    return "deny"


def _preview(prompt: str) -> str:
    flat = " ".join(prompt.split())
    return flat if len(flat) <= 80 else flat[:79] + "…"
