"""The store contract as pytest test classes: subclass one in your own suite.

::

    from lovia.testing.conformance.suite import CheckpointerSuite, SessionSuite

    class TestRedisSession(SessionSuite):
        session_factory = "mystore.testing:make_session"  # or the function itself

    class TestRedisCheckpointer(CheckpointerSuite):
        checkpointer_factory = "mystore.testing:make_checkpointer"

A factory takes a fresh directory (``pathlib.Path``) and returns a new, empty store, or an
awaitable of one. Each test runs its check in its own event loop (``asyncio.run``), so the
suite needs no pytest-asyncio. A class without a factory takes the one named on the command
line (``--lovia-session`` / ``--lovia-checkpointer``, options of the plugin
``-p lovia.testing.conformance``), and skips when there is none.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest

from ._checkpoint_checks import CHECKPOINT_CHECKS
from ._kit import Check, Kind, Kit, NotOffered
from ._session_checks import SESSION_CHECKS

__all__ = ["CheckpointerSuite", "SessionSuite", "run_check"]


def run_check(kind: Kind, factory: Any, path: Path, check: Check) -> None:
    """Run one check on a new store from ``factory`` in ``path``; a store that does not
    offer what it needs skips it with the reason."""

    async def body() -> None:
        kit = Kit(kind, factory, path)
        try:
            await kit.start()
            await check.run(kit)
        finally:
            await kit.close()

    try:
        asyncio.run(body())
    except NotOffered as exc:
        pytest.skip(str(exc))


def _factory(request: pytest.FixtureRequest, attr: str, option: str) -> Any:
    factory = getattr(request.cls, attr, None)
    if factory is None:
        factory = request.config.getoption(option, default=None)
    if factory is None:
        pytest.skip(f"no {attr}: set it on the class, or pass --{option.replace('_', '-')}")
    return factory


def _test(kind: Kind, attr: str, option: str, check: Check) -> Callable[..., None]:
    def test(self: Any, tmp_path: Path, request: pytest.FixtureRequest) -> None:
        run_check(kind, _factory(request, attr, option), tmp_path, check)

    test.__name__ = test.__qualname__ = f"test_{check.name}"
    test.__doc__ = check.doc or None
    return test


class SessionSuite:
    """Every promise of the session contract, one test each."""

    session_factory: ClassVar[Any] = None


class CheckpointerSuite:
    """Every promise of the checkpointer contract, one test each."""

    checkpointer_factory: ClassVar[Any] = None


for _check in SESSION_CHECKS:
    setattr(
        SessionSuite,
        f"test_{_check.name}",
        _test("session", "session_factory", "lovia_session", _check),
    )
for _check in CHECKPOINT_CHECKS:
    setattr(
        CheckpointerSuite,
        f"test_{_check.name}",
        _test("checkpointer", "checkpointer_factory", "lovia_checkpointer", _check),
    )
