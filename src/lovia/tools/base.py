"""The tool machinery: the ``Tool`` type, the ``@tool`` decorator and running a tool.

``@tool`` reads a function's signature, docstring and annotations once, at decoration time,
and builds a pydantic model for its arguments. The model's JSON arguments are validated
against it before the function runs; a validation error, a timeout or an ordinary exception
becomes an error result the model sees (``is_error=True``), not a failed run.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import re
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar, overload

from pydantic import BaseModel, ValidationError

from ..errors import (
    BudgetExceeded,
    InvalidToolArguments,
    RunCancelled,
    ToolTimeoutError,
    UserError,
    UserTypeError,
)
from ..run_context import RunContext
from ._signature import _arguments_model, _describe, _parse_docstring, strip_titles
from ._text import clip_text, result_to_text, truncate_output, truncate_tool_output
from ._threads import in_thread, within

__all__ = [
    "ApprovalPredicate",
    "FunctionSpec",
    "OnResume",
    "Tool",
    "ToolInvoker",
    "ToolPolicy",
    "ToolResultRenderer",
    "apply_tool_policies",
    "clip_text",
    "make_tool",
    "render_tool_result",
    "result_to_text",
    "run_tool",
    "strip_titles",
    "tool",
    "truncate_output",
    "truncate_tool_output",
]

F = TypeVar("F", bound=Callable[..., Any])
OnResume = Literal["rerun", "fail"] | Callable[..., Any]
ToolInvoker = Callable[[dict[str, Any], "RunContext[Any]"], Awaitable[Any]]
"""``invoke(args, ctx)``: run the tool on already-parsed JSON arguments, return its value."""
ApprovalPredicate = Callable[[dict[str, Any], "RunContext[Any]"], Any]
"""``needs_approval(args, ctx) -> bool`` (sync or async): does this call need a person's OK?"""
ToolResultRenderer = Callable[[Any, "RunContext[Any]"], Any]
"""``renderer(value, ctx) -> str`` (sync or async): the text the model sees for a result."""


class ToolPolicy(Protocol):
    """Wraps one attempt of a tool: ``policy(invoke, args, ctx)`` calls ``invoke`` (or not)."""

    def __call__(
        self, invoke: ToolInvoker, args: dict[str, Any], ctx: RunContext[Any]
    ) -> Awaitable[Any]: ...


_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass
class Tool:
    """Something the model can call. ``@tool`` builds one from a function; build one directly
    for generated schemas (an MCP server's tools, a factory).

    ``invoke(args, ctx)`` receives the parsed arguments and the live ``RunContext``; what it
    returns (or raises) becomes the result the model sees. ``needs_approval`` gates calls
    behind a person's decision; ``retries``/``timeout`` apply per attempt (``None`` inherits
    the agent's default); ``parallel=False`` runs the tool alone; ``on_resume`` says what a
    resumed run does with a call that started before a crash and has no result: ``"rerun"``
    (default), ``"fail"``, or a callable deciding per call. ``idempotent=True`` says the tool
    honours ``ctx.idempotency_key`` (the service it calls deduplicates by it): such a call is
    run again with the same key, never left in doubt.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    invoke: ToolInvoker
    needs_approval: bool | ApprovalPredicate = False
    retries: int | None = None
    timeout: float | None = None
    max_output_chars: int | None = None
    result_renderer: ToolResultRenderer | None = None
    policies: tuple[ToolPolicy, ...] = ()
    parallel: bool = True
    returns_images: bool = False
    on_resume: OnResume = "rerun"
    idempotent: bool = False
    # a handoff's target agent: the loop applies the transfer itself and runs it alone
    handoff_target: Any = field(default=None, repr=False)
    handoff: Any = field(default=None, repr=False)  # the ``Handoff`` it was built from

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME_RE.match(self.name):
            raise UserError(
                f"invalid tool name {self.name!r}",
                hint="tool names are 1-64 letters, digits, '_' or '-'; pass @tool(name=...)",
            )
        if not callable(self.invoke):
            raise UserError(f"tool {self.name!r}: invoke must be an async callable")
        if self.timeout is not None and not self.timeout > 0:
            raise UserError(f"tool {self.name!r}: timeout must be positive, got {self.timeout!r}")
        if self.retries is not None and self.retries < 0:
            raise UserError(f"tool {self.name!r}: retries must be >= 0, got {self.retries!r}")
        if self.on_resume not in ("rerun", "fail") and not callable(self.on_resume):
            raise UserError(
                f"tool {self.name!r}: on_resume must be 'rerun', 'fail' or a callable",
            )
        if self.idempotent and self.on_resume != "rerun":
            raise UserError(
                f"tool {self.name!r}: idempotent=True runs a call in doubt again with its "
                "key, so on_resume cannot say otherwise",
                hint="leave on_resume at its default, or drop idempotent=True",
            )
        self.policies = tuple(self.policies)

    def schema(self) -> dict[str, Any]:
        """The function-calling schema: name, description and JSON-schema parameters."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}

    def openai_schema(self) -> dict[str, Any]:
        """The schema in OpenAI's ``{"type": "function", "function": {...}}`` shape: the form a
        run hands providers in ``stream(tools=...)``, as lovia 0.9.119 did."""
        return FunctionSpec(type="function", function=self.schema())

    def requires_approval(self, args: dict[str, Any], ctx: RunContext[Any]) -> Any:
        """Whether this call needs approval (a bool, or an awaitable of one)."""
        if callable(self.needs_approval):
            return self.needs_approval(args, ctx)
        return bool(self.needs_approval)


async def run_tool(
    tool: Tool,
    args: dict[str, Any],
    ctx: RunContext[Any],
    *,
    default_retries: int = 0,
    default_timeout: float | None = None,
) -> Any:
    """Invoke ``tool`` through its policies, with its timeout per attempt and its retries
    (a short backoff between attempts). Cancellation, budget and argument errors are not
    retried: another attempt cannot fix them."""
    retries = tool.retries if tool.retries is not None else default_retries
    timeout = tool.timeout if tool.timeout is not None else default_timeout
    attempt = 0
    while True:
        attempt += 1
        call = _with_policies(tool.invoke, tool.policies, dict(args), ctx)
        try:
            if timeout is None:
                return await call
            return await within(call, timeout)
        except (RunCancelled, BudgetExceeded, InvalidToolArguments):
            raise
        except asyncio.TimeoutError as exc:
            if attempt > retries:
                raise ToolTimeoutError(
                    f"tool {tool.name!r} timed out after {timeout:g} s", tool_name=tool.name
                ) from exc
        except Exception:
            if attempt > retries:
                raise
        await asyncio.sleep(min(5.0, 0.1 * 2 ** (attempt - 1)))


async def apply_tool_policies(
    invoke: ToolInvoker, policies: Sequence[ToolPolicy], args: dict[str, Any], ctx: RunContext[Any]
) -> Any:
    """Run ``invoke(args, ctx)`` through ``policies``, the first one outermost: one attempt,
    without the retries and timeout that ``run_tool`` adds around it."""
    return await _with_policies(invoke, tuple(policies), args, ctx)


def _with_policies(
    invoke: ToolInvoker, policies: tuple[ToolPolicy, ...], args: dict[str, Any], ctx: Any
) -> Awaitable[Any]:
    chain = invoke
    for policy in reversed(policies):
        chain = functools.partial(_apply_policy, policy, chain)
    return chain(args, ctx)


async def _apply_policy(
    policy: ToolPolicy, inner: ToolInvoker, args: dict[str, Any], ctx: Any
) -> Any:
    return await policy(inner, args, ctx)


@overload
def tool(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    needs_approval: bool | ApprovalPredicate = False,
    retries: int | None = None,
    timeout: float | None = None,
    max_output_chars: int | None = None,
    result_renderer: ToolResultRenderer | None = None,
    policies: Sequence[ToolPolicy] = (),
    parallel: bool = True,
    returns_images: bool = False,
    strict: bool = False,
    on_resume: OnResume = "rerun",
    idempotent: bool = False,
) -> Tool: ...


@overload
def tool(
    fn: None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    needs_approval: bool | ApprovalPredicate = False,
    retries: int | None = None,
    timeout: float | None = None,
    max_output_chars: int | None = None,
    result_renderer: ToolResultRenderer | None = None,
    policies: Sequence[ToolPolicy] = (),
    parallel: bool = True,
    returns_images: bool = False,
    strict: bool = False,
    on_resume: OnResume = "rerun",
    idempotent: bool = False,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    needs_approval: bool | ApprovalPredicate = False,
    retries: int | None = None,
    timeout: float | None = None,
    max_output_chars: int | None = None,
    result_renderer: ToolResultRenderer | None = None,
    policies: Sequence[ToolPolicy] = (),
    parallel: bool = True,
    returns_images: bool = False,
    strict: bool = False,
    on_resume: OnResume = "rerun",
    idempotent: bool = False,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Turn a typed function (sync or async) into a ``Tool``: ``@tool``, ``@tool(...)`` or
    ``tool(fn, name="x")``.

    The JSON schema comes from the signature; the docstring's first paragraph is the
    description and its ``Args:`` section describes parameters. ``Annotated[T, "text"]`` and
    pydantic ``Field(description=...)`` describe parameters too. A parameter annotated
    ``RunContext`` (or ``RunContext[Deps]``) receives the live run context. ``strict=True``
    makes every parameter required and forbids extra ones in the schema. Sync functions run
    in a worker thread.
    """
    options: dict[str, Any] = {
        "name": name,
        "description": description,
        "needs_approval": needs_approval,
        "retries": retries,
        "timeout": timeout,
        "max_output_chars": max_output_chars,
        "result_renderer": result_renderer,
        "policies": tuple(policies),
        "parallel": parallel,
        "returns_images": returns_images,
        "strict": strict,
        "on_resume": on_resume,
        "idempotent": idempotent,
    }
    localns = _caller_locals()
    if fn is not None:
        return make_tool(fn, localns=localns, **options)

    def build(fn: Callable[..., Any]) -> Tool:
        return make_tool(fn, localns=localns, **options)

    return build


def _caller_locals() -> dict[str, Any]:
    """The namespace two frames up: where a tool defined inside a function was declared,
    so annotations naming local classes resolve under ``from __future__ import annotations``."""
    frame = sys._getframe(2)
    return dict(frame.f_locals)


def make_tool(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    strict: bool = False,
    localns: dict[str, Any] | None = None,
    **options: Any,
) -> Tool:
    """Build a ``Tool`` from ``fn`` (the work behind ``@tool``); a ``Tool`` is returned as is."""
    if isinstance(fn, Tool):
        return fn
    if not callable(fn):
        raise UserTypeError(
            f"@tool needs a function, got {type(fn).__name__}",
            hint="decorate a def with @tool, and list functions or Tools in Agent(tools=[...])",
        )
    tool_name: str = name or str(getattr(fn, "__name__", ""))
    if not _NAME_RE.match(tool_name):
        raise UserError(
            f"invalid tool name {tool_name!r}",
            hint="tool names are 1-64 letters, digits, '_' or '-'; pass @tool(name=...)",
        )
    summary, arg_docs = _parse_docstring(inspect.getdoc(fn) or "")
    args_model, context_param = _arguments_model(fn, tool_name, arg_docs, localns)
    return Tool(
        name=tool_name,
        description=description if description is not None else summary,
        parameters=arguments_schema(args_model, strict=strict),
        invoke=_invoker(fn, tool_name, args_model, context_param),
        **options,
    )


def arguments_schema(args_model: type[BaseModel], *, strict: bool = False) -> dict[str, Any]:
    """The JSON schema of a tool's arguments model, as the model is shown it. ``strict``
    makes every argument required and forbids others (OpenAI's strict function calling).
    ``additionalProperties`` comes last, and a function without arguments gets
    ``{"type": "object", "properties": {}, ...}``: the bytes lovia 0.9.119 sent."""
    schema: dict[str, Any] = strip_titles(args_model.model_json_schema())
    closed = schema.pop("additionalProperties", None)
    if not schema.get("properties") and set(schema) <= {"type", "properties"}:
        schema = {"type": "object", "properties": {}}
    if strict:
        closed = False
        schema["required"] = list(schema.get("properties", {}))
    if closed is not None:
        schema["additionalProperties"] = closed
    return schema


class FunctionSpec(dict[str, Any]):
    """A tool spec as providers receive it: ``{"type": "function", "function": {...}}``.

    A plain dict in that shape (``json.dumps`` and ``==`` see only it); ``spec["name"]``,
    ``spec["description"]`` and ``spec["parameters"]`` also read the function's fields.
    """

    def __missing__(self, key: str) -> Any:
        function = dict.get(self, "function")
        if key in ("name", "description", "parameters") and isinstance(function, dict):
            return function[key]
        raise KeyError(key)


def _invoker(
    fn: Callable[..., Any], tool_name: str, args_model: type[BaseModel], context_param: str | None
) -> ToolInvoker:
    is_async = inspect.iscoroutinefunction(fn)

    async def invoke(args: dict[str, Any], ctx: RunContext[Any]) -> Any:
        try:
            parsed = args_model.__pydantic_validator__.validate_python(args)  # model_validate
        except ValidationError as exc:
            raise InvalidToolArguments(
                f"Invalid arguments for tool {tool_name!r}: {_describe(exc)}",
                hint="call the tool again with arguments that match its schema",
                tool_name=tool_name,
            ) from exc
        kwargs = dict(parsed.__dict__)  # the fields by name (extra="forbid": nothing else)
        if context_param is not None:
            kwargs[context_param] = ctx
        if is_async:
            return await fn(**kwargs)
        return await in_thread(fn, kwargs, getattr(ctx, "cancel_token", None))  # off the loop

    invoke.__name__ = f"invoke_{tool_name}"
    invoke.__qualname__ = invoke.__name__
    return invoke


async def render_tool_result(
    tool: Tool,
    value: Any,
    ctx: RunContext[Any],
    *,
    default: ToolResultRenderer | None = None,
) -> str:
    """The text the model sees for ``value``, a result of ``tool``: through the tool's
    ``result_renderer``, else ``default`` (an agent's ``tool_result_renderer``), else
    :func:`result_to_text`. A renderer may be sync or async; what it returns that is not a
    ``str`` is turned into text by :func:`result_to_text`."""
    renderer = tool.result_renderer or default
    if renderer is None:
        return result_to_text(value)
    rendered = renderer(value, ctx)
    if inspect.isawaitable(rendered):
        rendered = await rendered
    return result_to_text(rendered)
