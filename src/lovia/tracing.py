"""Tracing: the ``Tracer`` protocol the run loop reports spans to (placeholder, replaced by
the full module)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager as ContextManager
from contextlib import contextmanager
from typing import Any, Protocol

__all__ = ["NoopTracer", "Span", "Tracer"]


class Span(Protocol):
    def set_attribute(self, key: str, value: object) -> None: ...
    def record_exception(self, exc: BaseException) -> None: ...


class Tracer(Protocol):
    def span(self, name: str, /, **attributes: object) -> ContextManager[Span]: ...


class _NoopSpan:
    def set_attribute(self, key: str, value: object) -> None:
        return None

    def record_exception(self, exc: BaseException) -> None:
        return None


class NoopTracer:
    @contextmanager
    def span(self, name: str, /, **attributes: Any) -> Iterator[Span]:
        yield _NoopSpan()
