"""The schema migrator, written once for the SQLite (sync) and PostgreSQL (async) stores.

``migrate`` is the logic as a generator of ``Step``s: read the component's version from the
meta table, refuse a newer one, run each missing migration in order, record the new version.
Each backend drives it on its own connection with ``drive`` or ``drive_async``, inside the
transaction (and lock) it already holds; a step that reads gets its first row sent back.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Migrations", "Step", "drive", "drive_async", "migrate", "version_of"]

Migrations = Mapping[int, Sequence[str]]
"""Schema version -> the statements that bring the previous version to it."""


@dataclass(frozen=True)
class Step:
    """One statement for the backend to run; ``fetch``: send back its first row."""

    sql: str
    params: tuple[Any, ...] = ()
    fetch: bool = False


@dataclass(frozen=True)
class MetaSql:
    """A backend's two statements on its meta table (its own placeholders and table name)."""

    read: str  # the value of one key
    write: str  # insert or replace one key's value


Migration = Generator[Step, Any, None]


def version_of(row: Sequence[Any] | None) -> int:
    """The schema version stored in a meta row (0: none)."""
    return int(row[0]) if row else 0


def migrate(
    component: str,
    version: int,
    migrations: Migrations,
    meta: MetaSql,
    too_new: Callable[[int], Exception],
) -> Migration:
    """Bring ``component``'s tables to ``version``; ``too_new(found)`` is raised for a newer
    schema, before anything is changed."""
    key = f"schema:{component}"
    current = version_of((yield Step(meta.read, (key,), fetch=True)))
    if current > version:
        raise too_new(current)
    for step in range(current + 1, version + 1):
        for statement in migrations[step]:
            yield Step(statement)
    if current != version:
        yield Step(meta.write, (key, str(version)))


def drive(migration: Migration, execute: Callable[[Step], Any]) -> None:
    """Run ``migration`` with a synchronous ``execute(step) -> first row or None``."""
    reply: Any = None
    while True:
        try:
            step = migration.send(reply)
        except StopIteration:
            return
        reply = execute(step)


async def drive_async(migration: Migration, execute: Callable[[Step], Awaitable[Any]]) -> None:
    """Run ``migration`` with an asynchronous ``execute(step) -> first row or None``."""
    reply: Any = None
    while True:
        try:
            step = migration.send(reply)
        except StopIteration:
            return
        reply = await execute(step)
