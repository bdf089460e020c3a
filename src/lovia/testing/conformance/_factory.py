"""What the two processes of a conformance check share: opening and closing the store a
factory makes, and the names they agree on (the file that starts the writers at once, the
probe session). ``_kit`` runs the checks, ``_worker`` is the second process; both stand on
this module, and neither imports the other's process code."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...errors import UserError

__all__ = ["GO", "PROBE", "Factory", "close_store", "load_factory", "open_store"]

Factory = Callable[[Path], Any]
"""Takes a fresh directory and returns a new, empty store (or an awaitable of one)."""

GO = ".lovia-kit-go"
"""The file whose appearance starts every concurrent writer at the same moment."""

PROBE = "lovia-kit-probe"
"""The session (or run) the second process writes to show whether it shares the store."""


def load_factory(spec: str) -> Factory:
    """``MODULE:ATTR`` as the callable it names; a ``UserError`` with a hint otherwise."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise UserError(
            f"a store factory is named MODULE:FACTORY, got {spec!r}",
            hint="e.g. --session mystore.testing:make_session",
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UserError(
            f"cannot import {module_name!r} for the factory {spec!r}: {exc}",
            hint="run from the directory that holds the module, or set PYTHONPATH",
        ) from exc
    target: Any = module
    for part in attr.split("."):
        target = getattr(target, part, None)
    if not callable(target):
        raise UserError(
            f"{spec!r} is not a callable in {module_name!r}",
            hint="name a function that takes a pathlib.Path and returns a new empty store",
        )
    factory: Factory = target
    return factory


async def open_store(factory: Factory, path: Path) -> Any:
    store = factory(path)
    if inspect.isawaitable(store):
        store = await store
    return store


async def close_store(store: Any) -> None:
    close = getattr(store, "close", None)
    if close is None:
        return
    done = close()
    if inspect.isawaitable(done):
        await done
