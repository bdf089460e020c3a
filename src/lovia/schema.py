"""JSON schemas from Python types and functions, and validation against them: what ``@tool``
and ``output_type`` use, for code that builds tools or checks outputs by hand.

::

    schema, names = function_args_schema(search)      # the tool schema @tool would send
    kwargs = validate_args(search, {"query": "x", "limit": "5"})   # {"query": "x", "limit": 5}
    point = coerce_output(Point, '{"x": 1, "y": 2}')
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import TypeAdapter

from .output import output_schema
from .tools._signature import _arguments_model, _parse_docstring
from .tools.base import arguments_schema
from .types import JsonSchema

__all__ = [
    "build_args_validator",
    "coerce_output",
    "function_args_schema",
    "model_json_schema",
    "validate_args",
]


def model_json_schema(tp: Any) -> JsonSchema:
    """The JSON schema of ``tp`` (a pydantic model, dataclass, ``TypedDict``, or any type
    pydantic reads), without the titles pydantic derives from names: the schema
    structured output shows the model."""
    schema: JsonSchema = output_schema(tp)
    return schema


def function_args_schema(
    fn: Callable[..., Any], *, strict: bool = False
) -> tuple[JsonSchema, list[str]]:
    """``(schema, names)``: the JSON schema of ``fn``'s arguments as ``@tool`` builds it, and
    the names of the arguments the model gives, in order. A parameter annotated
    ``RunContext`` is left out (the run passes it). ``strict`` makes every argument required
    and forbids others."""
    model = _model_for(fn)
    return arguments_schema(model, strict=strict), list(model.model_fields)


def build_args_validator(fn: Callable[..., Any]) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    """A function that checks a JSON object of arguments against ``fn``'s signature and
    returns the keyword arguments to call ``fn`` with: values converted to the annotated
    types (``"3"`` for an ``int`` is ``3``), defaults filled in, a parameter annotated with
    a pydantic model or dataclass given an instance. The signature is read once, here.
    Arguments that do not fit raise ``pydantic.ValidationError``."""
    model = _model_for(fn)
    names = list(model.model_fields)

    def validate(data: Mapping[str, Any]) -> dict[str, Any]:
        parsed = model.model_validate(dict(data))
        return {name: getattr(parsed, name) for name in names}

    return validate


def validate_args(fn: Callable[..., Any], data: Mapping[str, Any]) -> dict[str, Any]:
    """``build_args_validator(fn)(data)``, for one call; build the validator once to check
    many."""
    return build_args_validator(fn)(data)


def coerce_output(tp: Any, data: Any) -> Any:
    """``data`` (parsed JSON, or a JSON string) as a ``tp``; ``str`` takes anything as its
    text. Data that does not fit raises ``pydantic.ValidationError``."""
    if tp is str:
        return data if isinstance(data, str) else str(data)
    adapter: TypeAdapter[Any] = TypeAdapter(tp)
    if isinstance(data, (str, bytes)):
        return adapter.validate_json(data)
    return adapter.validate_python(data)


def _model_for(fn: Callable[..., Any]) -> Any:
    name = str(getattr(fn, "__name__", "") or "function")
    _, arg_docs = _parse_docstring(inspect.getdoc(fn) or "")
    model, _context = _arguments_model(fn, name, arg_docs, None)
    return model
