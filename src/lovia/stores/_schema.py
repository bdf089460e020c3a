"""The schema migrator, written once for the SQLite (sync) and PostgreSQL (async) stores.

``migrate`` is the logic as a generator of ``Step``s: read the component's version from the
meta table, refuse a newer one, run each missing migration in order, record the new version.
Each backend runs the steps on its own connection (sync or async), inside the transaction (and
lock) it already holds, and hands a reading step's first row back as ``reply``.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["MetaSql", "Migration", "Migrations", "Step", "migrate", "version_of"]

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


class Migration:
    """The steps of one migration: iterate them, run each, and set ``reply`` to the first
    row of a ``fetch`` step before asking for the next."""

    def __init__(self, steps: Generator[Step, Any, None]) -> None:
        self._steps = steps
        self.reply: Any = None

    def __iter__(self) -> Iterator[Step]:
        while True:
            try:
                step = self._steps.send(self.reply)
            except StopIteration:
                return
            self.reply = None
            yield step


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

    def steps() -> Generator[Step, Any, None]:
        key = f"schema:{component}"
        current = version_of((yield Step(meta.read, (key,), fetch=True)))
        if current > version:
            raise too_new(current)
        for step in range(current + 1, version + 1):
            for statement in migrations[step]:
                yield Step(statement)
        if current != version:
            yield Step(meta.write, (key, str(version)))

    return Migration(steps())
