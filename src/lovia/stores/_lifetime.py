"""``ClosingStore``: ``close()`` and ``async with`` for stores that own a database handle."""

from __future__ import annotations

from types import TracebackType
from typing import Protocol, TypeVar

__all__ = ["ClosingStore"]

S = TypeVar("S", bound="ClosingStore")


class _Closable(Protocol):
    async def close(self) -> None: ...


class ClosingStore:
    """Closes ``self._db`` on ``close()`` and at the end of an ``async with`` block."""

    _db: _Closable

    async def close(self) -> None:
        """Close the store (and what it opened: a file, a pool); it cannot be used afterwards."""
        await self._db.close()

    async def __aenter__(self: S) -> S:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
