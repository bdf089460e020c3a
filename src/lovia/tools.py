"""Tools: typed Python functions the model can call.

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
import typing
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, overload

import pydantic_core
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from pydantic.fields import FieldInfo

from .errors import InvalidToolArguments, RunCancelled, ToolError, UserError
from .run.context import RunContext

__all__ = ["Tool", "ToolOutcome", "tool"]

F = TypeVar("F", bound=Callable[..., Any])
OnResume = Literal["rerun", "fail"] | Callable[..., Any]

_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """What one tool call produced: the text the model sees and whether it is an error."""

    output: str
    is_error: bool = False


@dataclass(frozen=True)
class Tool:
    """A callable the model can use. Build one with ``@tool``; fields are read-only."""

    name: str
    description: str
    parameters: dict[str, Any]
    function: Callable[..., Any]
    args_model: type[BaseModel]
    context_param: str | None = None
    parallel: bool = True
    timeout: float | None = None
    max_output_chars: int | None = None
    on_resume: OnResume = "rerun"
    is_async: bool = field(default=False)
    # Handoff tools carry their target; the loop treats them as a barrier.
    handoff_target: Any = None

    def schema(self) -> dict[str, Any]:
        """The function-calling schema: name, description and JSON-schema parameters."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}

    async def __call__(self, ctx: RunContext[Any], arguments: str) -> ToolOutcome:
        """Validate ``arguments`` (JSON text), run the function, and describe the outcome."""
        try:
            kwargs = self.parse_arguments(arguments)
        except InvalidToolArguments as exc:
            return ToolOutcome(str(exc), is_error=True)
        if self.context_param is not None:
            kwargs[self.context_param] = ctx
        try:
            value = await self._invoke(kwargs)
        except RunCancelled:
            raise
        except asyncio.TimeoutError:
            return ToolOutcome(
                f"tool {self.name!r} timed out after {self.timeout:g} s", is_error=True
            )
        except Exception as exc:  # the model is told; the run goes on
            return ToolOutcome(f"tool {self.name!r} failed: {type(exc).__name__}: {exc}", True)
        return _render_output(self.name, value)

    def parse_arguments(self, arguments: str) -> dict[str, Any]:
        """The validated keyword arguments for ``arguments``, or ``InvalidToolArguments``."""
        text = arguments.strip() or "{}"
        try:
            parsed = self.args_model.model_validate_json(text)
        except ValidationError as exc:
            raise InvalidToolArguments(
                f"invalid arguments for tool {self.name!r}: {_describe(exc)}",
                hint="call the tool again with arguments that match its schema",
            ) from exc
        return {name: getattr(parsed, name) for name in type(parsed).model_fields}

    async def _invoke(self, kwargs: dict[str, Any]) -> Any:
        if self.is_async:
            call: Awaitable[Any] = self.function(**kwargs)
        else:
            call = asyncio.to_thread(functools.partial(self.function, **kwargs))
        if self.timeout is None:
            return await call
        return await asyncio.wait_for(call, self.timeout)


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        loc = ".".join(str(p) for p in err.get("loc", ())) or "arguments"
        parts.append(f"{loc}: {err.get('msg')}")
    return "; ".join(parts)


def _render_output(name: str, value: Any) -> ToolOutcome:
    if isinstance(value, str):
        return ToolOutcome(value)
    if isinstance(value, BaseModel):
        return ToolOutcome(value.model_dump_json())
    if value is None:
        return ToolOutcome("")
    try:
        return ToolOutcome(pydantic_core.to_json(value).decode())
    except pydantic_core.PydanticSerializationError:
        return ToolOutcome(
            f"tool {name!r} returned a {type(value).__name__}, which cannot be shown to the "
            "model as JSON; return a str, a dict/list of JSON values, or a pydantic model",
            is_error=True,
        )


@overload
def tool(func: F, /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    parallel: bool = True,
    timeout: float | None = None,
    max_output_chars: int | None = None,
    on_resume: OnResume = "rerun",
) -> Callable[[F], Tool]: ...


def tool(
    func: F | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    parallel: bool = True,
    timeout: float | None = None,
    max_output_chars: int | None = None,
    on_resume: OnResume = "rerun",
) -> Tool | Callable[[F], Tool]:
    """Turn a typed function (sync or async) into a ``Tool``.

    The JSON schema comes from the signature; the docstring's first paragraph is the
    description and its ``Args:`` section describes parameters. ``Annotated[T, "text"]`` and
    pydantic ``Field(description=...)`` describe parameters too. A parameter annotated
    ``RunContext`` (or ``RunContext[Deps]``) receives the live run context.
    """

    def build(fn: F) -> Tool:
        return make_tool(
            fn,
            localns=_caller_locals(),
            name=name,
            description=description,
            parallel=parallel,
            timeout=timeout,
            max_output_chars=max_output_chars,
            on_resume=on_resume,
        )

    if func is not None:
        return make_tool(func, localns=_caller_locals())
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
    parallel: bool = True,
    timeout: float | None = None,
    max_output_chars: int | None = None,
    on_resume: OnResume = "rerun",
    localns: dict[str, Any] | None = None,
) -> Tool:
    """Build a ``Tool`` from ``fn`` (the work behind ``@tool``)."""
    if isinstance(fn, Tool):
        return fn
    if not callable(fn):
        raise UserError(f"@tool needs a function, got {type(fn).__name__}")
    tool_name: str = name or str(getattr(fn, "__name__", ""))
    if not _NAME_RE.match(tool_name):
        raise UserError(
            f"invalid tool name {tool_name!r}",
            hint="tool names are 1-64 letters, digits, '_' or '-'; pass @tool(name=...)",
        )
    if timeout is not None and timeout <= 0:
        raise UserError(f"tool {tool_name!r}: timeout must be positive, got {timeout!r}")
    if on_resume not in ("rerun", "fail") and not callable(on_resume):
        raise UserError(
            f"tool {tool_name!r}: on_resume must be 'rerun', 'fail' or a callable",
        )
    summary, arg_docs = _parse_docstring(inspect.getdoc(fn) or "")
    args_model, context_param = _arguments_model(fn, tool_name, arg_docs, localns)
    schema = args_model.model_json_schema()
    schema.pop("title", None)
    return Tool(
        name=tool_name,
        description=description if description is not None else summary,
        parameters=schema,
        function=fn,
        args_model=args_model,
        context_param=context_param,
        parallel=parallel,
        timeout=timeout,
        max_output_chars=max_output_chars,
        on_resume=on_resume,
        is_async=inspect.iscoroutinefunction(fn),
    )


def _arguments_model(
    fn: Callable[..., Any],
    tool_name: str,
    arg_docs: dict[str, str],
    localns: dict[str, Any] | None,
) -> tuple[type[BaseModel], str | None]:
    try:
        hints = typing.get_type_hints(fn, localns=localns, include_extras=True)
    except Exception as exc:
        raise ToolError(
            f"cannot read the type hints of tool {tool_name!r}: {exc}",
            hint="make every annotation importable at decoration time",
        ) from exc
    fields: dict[str, Any] = {}
    context_param: str | None = None
    for pname, param in inspect.signature(fn).parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolError(
                f"tool {tool_name!r} takes *{pname}; tools need named parameters",
                hint="replace *args/**kwargs with typed parameters",
            )
        annotation = hints.get(pname, Any)
        if _is_run_context(annotation):
            context_param = pname
            continue
        annotation, info = _field_for(annotation, param, arg_docs.get(pname))
        fields[pname] = (annotation, info)
    model = create_model(
        f"{tool_name}_arguments",
        __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=False),
        **fields,
    )
    return model, context_param


def _field_for(annotation: Any, param: inspect.Parameter, doc: str | None) -> tuple[Any, FieldInfo]:
    description = doc
    if typing.get_origin(annotation) is typing.Annotated:
        base, *extras = typing.get_args(annotation)
        texts = [e for e in extras if isinstance(e, str)]
        others = [e for e in extras if not isinstance(e, str)]
        if texts:
            description = texts[0]
        if others:
            params = (base, *others)
            annotation = typing.Annotated[params]
        else:
            annotation = base
    default = param.default
    if isinstance(default, FieldInfo):
        info = default
        if info.description is None and description:
            info = Field(default=info.default, description=description)  # keep it simple
            info = FieldInfo.merge_field_infos(default, info)
        return annotation, info
    kwargs: dict[str, Any] = {}
    if description:
        kwargs["description"] = description
    if default is inspect.Parameter.empty:
        return annotation, Field(**kwargs)
    return annotation, Field(default=default, **kwargs)


def _is_run_context(annotation: Any) -> bool:
    target = typing.get_origin(annotation) or annotation
    if target is typing.Annotated:
        target = typing.get_args(annotation)[0]
        target = typing.get_origin(target) or target
    return isinstance(target, type) and issubclass(target, RunContext)


_SECTION_RE = re.compile(
    r"^(Args|Arguments|Parameters|Returns|Raises|Yields|Examples?|Notes?):\s*$"
)
_ARG_RE = re.compile(r"^\s*(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The first paragraph, and the ``Args:`` section's descriptions by parameter name."""
    lines = doc.splitlines()
    summary_lines: list[str] = []
    for line in lines:
        if not line.strip() or _SECTION_RE.match(line.strip()):
            break
        summary_lines.append(line.strip())
    args: dict[str, str] = {}
    in_args = False
    current: str | None = None
    for line in lines:
        stripped = line.strip()
        header = _SECTION_RE.match(stripped)
        if header:
            in_args = header.group(1) in ("Args", "Arguments", "Parameters")
            current = None
            continue
        if not in_args or not stripped:
            continue
        match = _ARG_RE.match(line)
        indent = len(line) - len(line.lstrip())
        if match and (current is None or indent <= _indent_of(lines, current)):
            current = match.group(1).lstrip("*")
            args[current] = match.group(2).strip()
        elif current is not None:
            args[current] = (args[current] + " " + stripped).strip()
    return " ".join(summary_lines), args


def _indent_of(lines: list[str], name: str) -> int:
    for line in lines:
        m = _ARG_RE.match(line)
        if m and m.group(1).lstrip("*") == name:
            return len(line) - len(line.lstrip())
    return 0


def truncate_output(output: str, limit: int) -> str:
    """Cut ``output`` to ``limit`` characters, ending with a marker that says what was cut."""
    if len(output) <= limit:
        return output
    cut = len(output) - limit
    return f"{output[:limit]}\n[lovia: output truncated, {cut} of {len(output)} characters cut]"
