"""Multi-agent: a handoff (``transfer_to_<name>``) makes another agent the active one in the
same run; an agent as a tool (``ask_<name>``) runs another agent on its own and returns its
answer."""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import UserError
from .tools import Tool

if TYPE_CHECKING:
    from .agent import Agent
    from .context import ContextPolicy
    from .reliability import RunBudget
    from .run_context import RunContext
    from .settings import RetryPolicy

__all__ = ["Handoff", "HandoffCallback", "agent_tool", "handoff_tool"]


HandoffCallback = Callable[[dict[str, Any], "RunContext[Any]"], Any]
"""``on_handoff(args, ctx)`` (sync or async): called with the model's arguments (``reason``)
while ``ctx.agent`` is still the agent handing off."""

_PREFIX = "transfer_to_"
_NAME_MAX = 64  # what the providers accept for a tool name


class _Target:
    """``Handoff.target``: the agent, or a function of no arguments returning it, called each
    time the target is needed (at run time). The function is how two agents hand over to
    each other: ``Agent("billing", handoffs=[Handoff(lambda: triage)])`` before ``triage``."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._slot = "_" + name

    def __get__(self, obj: Any, owner: type | None = None) -> Agent:
        if obj is None:
            raise AttributeError(self._slot[1:])  # a required field: no default
        from .agent import Agent

        value = obj.__dict__[self._slot]
        if isinstance(value, Agent):
            return value
        found = value()
        if not isinstance(found, Agent):
            raise UserError(
                f"a handoff's target function returned {type(found).__name__}, not an Agent",
                hint="Handoff(lambda: other_agent) must return the agent to hand over to",
            )
        return found

    def __set__(self, obj: Any, value: Any) -> None:
        from .agent import Agent

        if not isinstance(value, Agent) and not callable(value):
            raise UserError(
                f"cannot hand off to {type(value).__name__}",
                hint="Handoff(agent) or Handoff(lambda: agent) for an agent defined later",
            )
        obj.__dict__[self._slot] = value


@dataclass(frozen=True)
class Handoff:
    """Hand the conversation to ``target``. The body carries over; the system prompt changes.

    ``target`` is the agent, or a function of no arguments returning it (for an agent defined
    later, as in a cycle of handoffs). ``name`` replaces the whole tool name (default
    ``transfer_to_<slug of target.name>``); ``description`` is what the model routes on;
    ``on_handoff(args, ctx)`` runs when the model takes this handoff, before the transfer (if
    it raises, the call is a tool error and no transfer happens).
    """

    target: _Target = _Target()  # a descriptor, and still a required field (see _Target)
    name: str | None = None
    description: str | None = None
    on_handoff: HandoffCallback | None = None

    @property
    def tool_name(self) -> str:
        return self.name or _PREFIX + slug(self.target.name, _NAME_MAX - len(_PREFIX))


def slug(text: str, limit: int = _NAME_MAX) -> str:
    """``text`` as a provider-legal tool name part: lower-case ASCII letters, digits and
    ``_`` (spaces and ``-`` become ``_``, anything else is dropped). A name with nothing left,
    or longer than ``limit``, gets a short digest so distinct names stay distinct."""
    kept = "".join(
        "_" if ch in " -" else ch
        for ch in text.lower()
        if ch in " -" or (ch.isascii() and (ch.isalnum() or ch == "_"))
    )
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]
    if not kept:
        return f"agent_{digest}" if text else "agent"
    if len(kept) > limit:
        return f"{kept[: limit - 9]}_{digest}"
    return kept


def _on_handoff(handoff: Handoff) -> Callable[[dict[str, Any], Any], Awaitable[Any]]:
    """The handoff tool's ``invoke``: runs ``on_handoff``; the loop itself makes the transfer."""

    async def invoke(args: dict[str, Any], ctx: Any) -> Any:
        if handoff.on_handoff is None:
            return None
        result = handoff.on_handoff(args, ctx)
        if inspect.isawaitable(result):
            result = await result
        return result

    return invoke


def as_handoff(item: Any) -> Handoff:
    from .agent import Agent

    if isinstance(item, Handoff):
        return item
    if isinstance(item, Agent):
        return Handoff(item)
    raise UserError(
        f"cannot use {type(item).__name__} as a handoff",
        hint="list agents or Handoff(agent, ...) in Agent(handoffs=[...])",
    )


def handoff_tool(handoff: Handoff) -> Tool:
    """The tool the model calls to hand off; the loop treats it as a barrier."""
    target = handoff.target
    description = handoff.description or (
        f"Hand the conversation to the agent {target.name!r}."
        + (f" {target.handoff_description}" if target.handoff_description else "")
    )
    return Tool(
        name=handoff.tool_name,
        description=description,
        parameters={
            "type": "object",
            "properties": {
                "reason": {"type": "string", "description": "Why the conversation moves on."}
            },
            "required": [],
            "additionalProperties": False,
        },
        invoke=_on_handoff(handoff),
        parallel=False,
        handoff_target=target,
        handoff=handoff,
    )


def agent_tool(
    agent: Agent,
    *,
    name: str | None = None,
    description: str | None = None,
    max_turns: int = 50,
    budget: RunBudget | None = None,
    retry: RetryPolicy | None = None,
    context_policy: ContextPolicy | None = None,
) -> Tool:
    """``agent`` as a tool (``Agent.as_tool``): the model sends ``input``, a run of ``agent``
    on it alone (none of the caller's history) answers with its output.

    The sub-run gets the caller's ``deps``, cancel token and tracer; its tokens count in the
    caller's usage as they are spent. ``budget`` is copied per call, so each sub-run gets the
    limits afresh. A failed sub-run (over its budget, out of turns) is a tool error the model
    sees; only a cancellation ends the caller's run.
    """
    tool_name = name or "ask_" + slug(agent.name, _NAME_MAX - len("ask_"))

    async def invoke(args: dict[str, Any], ctx: RunContext[Any]) -> Any:
        from .agent import _runtime  # the runtime is a layer above: reached through its hook

        result = await _runtime().run(
            agent,
            str(args.get("input") or ""),
            deps=ctx.deps,
            max_turns=max_turns,
            budget=_fresh(budget),
            cancel_token=ctx.cancel_token,
            retry=retry,
            context_policy=context_policy,
            tracer=ctx.tracer,
            _parent_usage=ctx.usage,
        )
        return result.output

    return Tool(
        name=tool_name,
        description=description or f"Ask the agent {agent.name!r} to do a task; get its answer.",
        parameters={
            "type": "object",
            "properties": {
                "input": {"type": "string", "description": "The task or question for the agent."}
            },
            "required": ["input"],
            "additionalProperties": False,
        },
        invoke=invoke,
    )


def _fresh(budget: RunBudget | None) -> RunBudget | None:
    """The same limits with fresh counters."""
    if budget is None:
        return None
    return type(budget)(
        max_input_tokens=budget.max_input_tokens,
        max_output_tokens=budget.max_output_tokens,
        max_total_tokens=budget.max_total_tokens,
        max_tool_calls=budget.max_tool_calls,
        max_seconds=budget.max_seconds,
    )
