"""``Agent``: a frozen, shareable configuration with no conversation state."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ._agent_checks import (
    check_guardrails,
    check_hooks_and_retry,
    check_list_field,
    check_timeout,
)
from .context import Compaction, ContextPolicy
from .context.policy import policy_tools
from .errors import UserError
from .guardrails import Guardrail
from .handoffs import Handoff, agent_tool, as_handoff, handoff_tool
from .hooks import AgentHooks
from .output import repair_strategy
from .run_context import RunContext
from .settings import ModelSettings, RetryPolicy
from .tools.base import Tool, make_tool

if TYPE_CHECKING:
    from ._run_types import RunHandle, RunResult
    from .providers.base import Provider
    from .workspace.protocol import WorkspaceLike

__all__ = ["Agent", "Instructions"]

Instructions = str | Callable[[RunContext[Any]], "str | Awaitable[str]"]
ApprovalHandler = Callable[..., Any]
"""``(call: ToolCall, ctx) -> bool | "allow" | "deny" | "ask" | "defer"`` (sync or async)."""

DepsT = TypeVar("DepsT")


@dataclass(frozen=True, eq=False)
class Agent:
    """An agent: instructions, a model, tools and handoffs. Safe to share between runs.

    ``instructions`` is a string or a callable ``(ctx) -> str`` (sync or async) rendered again
    at the start of every run and of every resume. ``model`` is a model string
    (``"openai:gpt-4.1"``, ``"anthropic:claude-sonnet-4-5"``; a bare name means
    OpenAI-compatible), a ``Provider``, or ``None`` for ``LOVIA_MODEL``. ``workspace``
    (``Workspace.local(...)``) gives the agent file and shell tools under a policy; each run
    opens its session (``ctx.workspace``) and closes it when the run ends.
    """

    # 0.9.119's order up to workspace, so a positional Agent(...) from it means the same; the
    # rest are keyword-only.
    name: str
    instructions: Instructions = ""
    model: Any = None
    tools: Sequence[Any] = ()
    output_type: Any = str
    output_repair: Any = True  # True, False or an OutputRepairStrategy (lovia.output)
    handoffs: Sequence[Any] = ()
    settings: ModelSettings = field(default_factory=ModelSettings)
    retry: RetryPolicy | None = field(default_factory=RetryPolicy)
    context_policy: ContextPolicy = field(default_factory=Compaction)
    workspace: WorkspaceLike | None = None
    _: dataclasses.KW_ONLY
    plugins: Sequence[Any] = ()
    hooks: AgentHooks | None = None
    approval_handler: ApprovalHandler | None = None
    input_guardrails: Sequence[Guardrail] = ()
    output_guardrails: Sequence[Guardrail] = ()
    default_tool_retries: int = 0
    default_tool_timeout: float | None = None
    max_tool_output_chars: int | None = 200_000
    tool_result_renderer: Callable[[Any], str] | None = None
    handoff_description: str | None = None
    _fragments: tuple[Callable[..., Any], ...] = field(default=(), repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise UserError("an agent needs a non-empty name", hint="Agent(name='assistant')")
        if not (isinstance(self.instructions, str) or callable(self.instructions)):
            raise UserError(
                f"agent {self.name!r}: instructions must be a string or a callable",
                hint="instructions='You are ...', or a function (ctx) -> str",
            )
        if isinstance(self.model, str):
            from .providers.registry import check_model

            check_model(self.model)  # warns only: a wrong string fails when the agent runs
        limit = self.max_tool_output_chars
        if limit is not None and (not isinstance(limit, int) or limit < 1):
            raise UserError(
                f"agent {self.name!r}: max_tool_output_chars must be an int >= 1 or None",
                hint="None stores every tool output whole; the default is 200_000 characters",
            )
        for name in ("tools", "handoffs", "input_guardrails", "output_guardrails", "plugins"):
            check_list_field(self.name, name, getattr(self, name))
        check_hooks_and_retry(self.name, self.hooks, self.retry)
        check_timeout(self.name, self.default_tool_timeout)
        set_ = object.__setattr__
        # None in a list field means an empty one (0.9.119 built such an agent too)
        set_(self, "tools", tuple(make_tool(t) for t in self.tools or ()))
        set_(self, "handoffs", tuple(as_handoff(h) for h in self.handoffs or ()))
        set_(self, "input_guardrails", tuple(self.input_guardrails or ()))
        set_(self, "output_guardrails", tuple(self.output_guardrails or ()))
        set_(self, "plugins", tuple(self.plugins or ()))
        check_guardrails(self.name, "input_guardrails", self.input_guardrails)
        check_guardrails(self.name, "output_guardrails", self.output_guardrails)
        if not isinstance(self.default_tool_retries, int) or self.default_tool_retries < 0:
            raise UserError(
                f"agent {self.name!r}: default_tool_retries must be an int >= 0",
                hint="default_tool_retries=2 tries a failing tool call twice more; 0: never",
            )
        repair_strategy(self.output_repair)  # a wrong setting fails here, not at a bad answer
        _check_workspace(self.workspace, self.name)
        if self.approval_handler is not None and not callable(self.approval_handler):
            raise UserError(
                f"agent {self.name!r}: approval_handler must be callable",
                hint="approval_handler=lambda call, ctx: 'allow' | 'deny' | 'ask' | 'defer'",
            )

    def instruction(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Decorator: add a dynamic instruction fragment ``(ctx) -> str`` (sync or async),
        rendered after ``instructions`` at the start of every run and resume."""
        if not callable(fn):
            raise UserError("@agent.instruction decorates a function (ctx) -> str")
        object.__setattr__(self, "_fragments", (*self._fragments, fn))
        return fn

    def with_instructions(self, fn: Callable[..., Any]) -> Agent:
        """A copy of this agent with one more dynamic instruction fragment."""
        if not callable(fn):
            raise UserError("with_instructions takes a function (ctx) -> str")
        return dataclasses.replace(self, _fragments=(*self._fragments, fn))

    async def render_system_prompt(
        self, ctx: RunContext[Any], *, extra: Instructions | None = None
    ) -> str:
        """The system prompt this agent gives a run: ``instructions``, then each fragment
        added with ``instruction``/``with_instructions``, then ``extra``, each rendered with
        ``ctx`` and joined by blank lines (empty ones are left out). A run adds its plugins'
        instructions, ``extra_instructions`` and the output format after these."""
        texts = [await _render_instructions(self, source, ctx) for source in self._fragments]
        texts.insert(0, await _render_instructions(self, self.instructions, ctx))
        if extra is not None:
            texts.append(await _render_instructions(self, extra, ctx))
        return "\n\n".join(t for t in texts if t)

    def resolve_provider(self) -> Provider:
        """The ``Provider`` this agent's ``model`` names (``LOVIA_MODEL`` when it is ``None``);
        ``UserError`` with a hint when there is none or it cannot be used."""
        from .providers.registry import resolve_model

        return resolve_model(self.model, self.name)

    def __class_getitem__(cls, item: Any) -> type[Agent]:
        """``Agent[Deps](...)`` is accepted (as in 0.9.119) and builds a plain ``Agent``."""
        return cls

    def clone(self, **overrides: Any) -> Agent:
        """A copy with some fields replaced: ``agent.clone(instructions="...")``."""
        return dataclasses.replace(self, **overrides)

    def all_tools(self, policy: ContextPolicy | None = None) -> list[Tool]:
        """The tools the model sees: own tools, handoff tools, then the context policy's.

        The policy's tools (``recall_tool_result``) come with any tool of the agent's own or
        handoff, and always when the policy can shorten results ahead of time (a window or a
        store is set); an explicit tool of the same name wins over the policy's. (A run also
        adds them after its plugins' tools when the agent has no tool of its own.) Raises
        ``UserError`` when two of the agent's own or handoff tools share a name.
        """
        handoffs: Sequence[Handoff] = self.handoffs
        policy = policy or self.context_policy
        own: list[Tool] = list(self.tools)
        moves = [handoff_tool(h) for h in handoffs] if handoffs else []
        extra = policy_tools(policy)
        offered: list[Tool] = []
        if extra and (own or moves or _marks_ahead(policy)):  # a tool-less agent stays so
            taken = {t.name for t in (*own, *moves)}
            offered = [t for t in extra if t.name not in taken]
        # the policy's last, as in 0.9.119
        tools: list[Tool] = [*own, *moves, *offered] if moves or offered else own
        seen: set[str] = set()
        for i, t in enumerate(tools):
            if t.name in seen:
                if len(own) <= i < len(own) + len(moves):  # 0.9.119 named the handoff too
                    raise UserError(
                        f"Tool name conflict for {t.name!r} from handoff: agent {self.name!r} "
                        "already has a tool or another handoff with that name",
                        hint="give the handoff a name of its own with Handoff(agent, name=...)",
                    )
                raise UserError(
                    f"Tool name conflict for {t.name!r} from agent.tools: agent "
                    f"{self.name!r} has two tools with that name",
                    hint="give one of them another name with @tool(name=...)",
                )
            seen.add(t.name)
        return tools

    def as_tool(
        self,
        *,
        name: str | None = None,
        description: str | None = None,
        max_turns: int = 50,
        budget: Any = None,
        retry: RetryPolicy | None = None,
        context_policy: ContextPolicy | None = None,
    ) -> Tool:
        """This agent as a tool another agent calls: ``ask_<name>`` (or ``name``) takes one
        argument, ``input``, runs this agent on it alone and returns its final output.

        The sub-run inherits the caller's ``deps``, cancel token and tracer, and its tokens
        count in the caller's usage. ``max_turns``, ``budget`` (fresh counters for every call),
        ``retry`` and ``context_policy`` bound the sub-run; the model never sees them. A
        failed sub-run is a tool error the calling model reads.
        """
        return agent_tool(
            self,
            name=name,
            description=description,
            max_turns=max_turns,
            budget=budget,
            retry=retry,
            context_policy=context_policy,
        )

    # -- shorthands for the Runner ----------------------------------------------------------

    async def run(self, input: Any, **kwargs: Any) -> RunResult:
        return await _runtime().run(self, input, **kwargs)

    def run_sync(self, input: Any, **kwargs: Any) -> RunResult:
        return _runtime().run_sync(self, input, **kwargs)

    def stream(self, input: Any, **kwargs: Any) -> RunHandle:
        return _runtime().stream(self, input, **kwargs)

    def __repr__(self) -> str:
        """The agent's shape, in 0.9.119's field order: instructions cut short, tools and
        handoffs by name, a provider by class and model (never its key or settings); the
        other fields only when they are set."""
        parts = [
            f"name={self.name!r}",
            f"instructions={_short_instructions(self.instructions)}",
            f"model={_model_repr(self.model)}",
            f"tools={[getattr(t, 'name', '?') for t in self.tools]!r}",
            f"output_type={_type_repr(self.output_type)}",
            f"handoffs={[h.target.name for h in self.handoffs]!r}",
        ]
        if self.handoff_description is not None:
            parts.append(f"handoff_description={_cut(self.handoff_description)!r}")
        if self.approval_handler is not None:
            parts.append(f"approval_handler={_callable_name(self.approval_handler)}")
        for label, items in (
            ("plugins", self.plugins),
            ("input_guardrails", self.input_guardrails),
            ("output_guardrails", self.output_guardrails),
        ):
            if items:
                parts.append(f"{label}={[_callable_name(i) for i in items]}")
        return f"Agent({', '.join(parts)})"


_REPR_CHARS = 60


def _cut(text: str) -> str:
    return text if len(text) <= _REPR_CHARS else f"{text[:_REPR_CHARS]}... ({len(text)} chars)"


def _short_instructions(value: Any) -> str:
    return repr(_cut(value)) if isinstance(value, str) else _callable_name(value)


def _callable_name(value: Any) -> str:
    if inspect.isroutine(value):
        return f"<function {getattr(value, '__qualname__', '?')}>"
    name, kind = getattr(value, "name", None), type(value).__name__
    return f"<{kind} {name!r}>" if isinstance(name, str) else f"<{kind}>"


def _type_repr(value: Any) -> str:
    return value.__name__ if isinstance(value, type) else repr(value)


def _model_repr(model: Any) -> str:
    if model is None or isinstance(model, str):
        return repr(model)
    name = getattr(model, "model", None)  # a provider: its class and model name, nothing more
    kind = type(model).__name__
    return f"<{kind} model={name!r}>" if isinstance(name, str) else f"<{kind}>"


class Runtime(Protocol):
    """What runs an agent (``lovia._run.runner.Runner``); the shorthands above call it.

    The agent is a layer below the runtime, so it names the runtime's interface and the
    runtime installs itself when it is imported (``import lovia`` imports it)."""

    async def run(self, agent: Agent, input: Any, **options: Any) -> RunResult: ...

    def run_sync(self, agent: Agent, input: Any, **options: Any) -> RunResult: ...

    def stream(self, agent: Agent, input: Any, **options: Any) -> RunHandle: ...


_RUNTIME: list[Runtime] = []


def install_runtime(runtime: Runtime) -> None:
    """Called once by the runtime module as it is imported."""
    _RUNTIME[:] = [runtime]


def _runtime() -> Runtime:
    if not _RUNTIME:  # only if lovia.agent was loaded without the package (not via import)
        raise RuntimeError("lovia's runtime is not loaded: import lovia first")
    return _RUNTIME[0]


def _check_workspace(workspace: Any, agent_name: str) -> None:
    """Refuse, when the agent is built, a ``workspace`` that cannot open sessions."""
    if workspace is None:
        return
    missing = [
        m for m in ("open", "tools", "instructions") if not callable(getattr(workspace, m, None))
    ]
    if missing:
        raise UserError(
            f"agent {agent_name!r}: workspace must be a workspace configuration, got "
            f"{type(workspace).__name__} (it has no {', '.join(missing)})",
            hint="Agent(workspace=Workspace.local('path/to/root'))",
        )


def _marks_ahead(policy: Any) -> bool:
    """Whether ``policy`` may put markers in a view before any overflow."""
    return getattr(policy, "context_window", None) is not None or (
        getattr(policy, "store", None) is not None
    )


async def _render_instructions(agent: Agent, source: Any, ctx: RunContext[Any]) -> str:
    text = source(ctx) if callable(source) else source
    if inspect.isawaitable(text):
        text = await text
    if text is None:
        return ""
    if not isinstance(text, str):
        raise UserError(
            f"instructions of agent {agent.name!r} returned {type(text).__name__}, not str",
            hint="return a string (or '' to add nothing) from an instructions callable",
        )
    return text
