"""Run leases: the optional capability that keeps two workers from driving one run at once.

A checkpointer that has ``acquire_lease``, ``renew_lease`` and ``release_lease`` (every
built-in one does) lets the runner hold a lease on a ``run_id`` while it drives that run.
A lease has an owner and an expiry; a holder that stops renewing (it crashed, or lost the
network) loses the lease once it expires, and the next worker takes it over and resumes the
run from its checkpoint. A custom checkpointer without these methods still works; its runs
simply go unguarded.
"""

from __future__ import annotations

import math
import time
from typing import Any, Protocol, runtime_checkable

from ..errors import UserError
from .checkpoint import validate_id

__all__ = ["LeaseStore", "MemoryLeases", "check_lease_args"]


@runtime_checkable
class LeaseStore(Protocol):
    """Leases on run ids. Invariants every implementation keeps:

    - ``acquire_lease(run_id, owner, ttl)`` succeeds (``True``) when nobody holds the run,
      when the holder's lease has expired, or when ``owner`` already holds it (then it is
      extended); otherwise it changes nothing and returns ``False``.
    - ``renew_lease`` extends the lease only while ``owner`` still holds it (``False`` once
      another owner took it over); ``release_lease`` frees it only for its owner.
    - At most one owner holds an unexpired lease on a run id at any moment.
    """

    async def acquire_lease(self, run_id: str, owner: str, ttl: float) -> bool: ...

    async def renew_lease(self, run_id: str, owner: str, ttl: float) -> bool: ...

    async def release_lease(self, run_id: str, owner: str) -> None: ...

    async def lease_holder(self, run_id: str) -> str | None:
        """The owner of the unexpired lease on ``run_id`` (``None`` when it is free)."""
        ...


def check_lease_args(run_id: Any, owner: Any, ttl: Any) -> None:
    """``UserError`` for a bad run id, an empty owner or a ttl that is not a positive number."""
    validate_id(run_id, "run_id")
    validate_id(owner, "lease owner")
    if (
        isinstance(ttl, bool)
        or not isinstance(ttl, (int, float))
        or not math.isfinite(ttl)
        or ttl <= 0
    ):
        raise UserError(
            f"a lease ttl must be a positive number of seconds, got {ttl!r}",
            hint="pass lease_ttl=30.0 (a heartbeat renews the lease every ttl/3)",
        )


class MemoryLeases:
    """Leases in a dict, for the in-memory checkpointer (one process, so one clock)."""

    _lease_table: dict[str, tuple[str, float]]

    def _leases(self) -> dict[str, tuple[str, float]]:
        table = self.__dict__.get("_lease_table")
        if table is None:
            table = self.__dict__["_lease_table"] = {}
        return table

    async def acquire_lease(self, run_id: str, owner: str, ttl: float) -> bool:
        """Take the lease on ``run_id`` for ``ttl`` seconds: free, expired or already ours."""
        check_lease_args(run_id, owner, ttl)
        table = self._leases()
        now = time.monotonic()
        held = table.get(run_id)
        if held is not None and held[0] != owner and held[1] > now:
            return False
        table[run_id] = (owner, now + ttl)
        return True

    async def renew_lease(self, run_id: str, owner: str, ttl: float) -> bool:
        """Extend our lease by ``ttl`` seconds; ``False`` when another owner has taken it."""
        check_lease_args(run_id, owner, ttl)
        table = self._leases()
        held = table.get(run_id)
        if held is None or held[0] != owner:
            return False
        table[run_id] = (owner, time.monotonic() + ttl)
        return True

    async def lease_holder(self, run_id: str) -> str | None:
        """The owner of the unexpired lease on ``run_id``, or ``None``."""
        check_lease_args(run_id, "reader", 1.0)
        held = self._leases().get(run_id)
        return held[0] if held is not None and held[1] > time.monotonic() else None

    async def release_lease(self, run_id: str, owner: str) -> None:
        """Give the lease up (a no-op when ``owner`` no longer holds it)."""
        check_lease_args(run_id, owner, 1.0)
        table = self._leases()
        held = table.get(run_id)
        if held is not None and held[0] == owner:
            del table[run_id]
