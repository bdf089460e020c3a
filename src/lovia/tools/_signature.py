"""From a Python function to a tool's JSON schema: its parameters as a pydantic model, their
descriptions from the docstring, ``Annotated`` texts and ``Field``s, and the one parameter
that receives the ``RunContext``."""

from __future__ import annotations

import functools
import inspect
import operator
import re
import types
import typing
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, model_validator
from pydantic.fields import FieldInfo

from ..errors import ToolError, UserError
from ..run_context import RunContext


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        loc = ".".join(str(p) for p in err.get("loc", ())) or "arguments"
        parts.append(f"{loc}: {err.get('msg')}")
    return "; ".join(parts)


def strip_titles(schema: Any) -> Any:
    """``schema`` without the ``title`` pydantic derives from every class and field name: the
    model reads the names already, and each title costs prompt tokens. A property that is
    itself called ``title`` stays (its value is a schema, not a string)."""
    if isinstance(schema, dict):
        return {
            k: strip_titles(v)
            for k, v in schema.items()
            if not (k == "title" and isinstance(v, str))
        }
    if isinstance(schema, list):
        return [strip_titles(v) for v in schema]
    return schema


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
            if context_param is not None:
                raise UserError(
                    f"tool {tool_name!r} can take at most one RunContext parameter,"
                    f" got {context_param!r} and {pname!r}",
                    hint="keep one RunContext parameter and reach anything else through ctx.deps",
                )
            context_param = pname
            continue
        annotation, info = _field_for(annotation, param, arg_docs.get(pname))
        fields[pname] = (annotation, info)
    model = create_model(
        f"{tool_name}_arguments",
        __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=False),
        __validators__={"_known_only": typing.cast(Callable[..., Any], _KNOWN_ONLY)},
        **fields,
    )
    return model, context_param


def _known_only(cls: type[BaseModel], data: Any) -> Any:
    """A call's arguments without those the function does not take, as lovia 0.9.119 left
    them out: the schema still forbids others, and a model that adds one costs no turn."""
    if type(data) is not dict:
        return data
    fields = cls.model_fields
    if all(k in fields for k in data):
        return data
    aliases = {f.alias for f in fields.values() if f.alias is not None}
    return {k: v for k, v in data.items() if k in fields or k in aliases}


_KNOWN_ONLY = model_validator(mode="before")(_known_only)


def _hoist_optional(annotation: Any) -> Any:
    """``Optional[Annotated[T, ...]]`` as ``Annotated[Optional[T], ...]``: a description or
    constraint written on the value describes the whole optional argument."""
    if typing.get_origin(annotation) not in (typing.Union, types.UnionType):
        return annotation
    members = typing.get_args(annotation)
    annotated = [m for m in members if typing.get_origin(m) is typing.Annotated]
    if len(annotated) != 1 or type(None) not in members:
        return annotation
    base, *extras = typing.get_args(annotated[0])
    rest = [base if m is annotated[0] else m for m in members]
    params = (functools.reduce(operator.or_, rest), *extras)
    return typing.Annotated[params]


def _field_for(annotation: Any, param: inspect.Parameter, doc: str | None) -> tuple[Any, FieldInfo]:
    description = doc
    annotation = _hoist_optional(annotation)
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
