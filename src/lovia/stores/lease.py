"""Run leases: the optional capability that keeps two workers from driving one run at once.

A checkpointer that has ``acquire_lease``, ``renew_lease`` and ``release_lease`` (every
built-in one does) lets the runner hold a lease on a ``run_id`` while it drives that run.
A lease has an owner and an expiry; a holder that stops renewing (it crashed, or lost the
network) loses the lease once it expires, and the next worker takes it over and resumes the
run from its checkpoint. A custom checkpointer without these methods still works; its runs
simply go unguarded.

Fencing: each lease row carries a token that grows whenever a new owner takes the run (a
takeover, or an acquire after a release). ``acquire_lease`` remembers the owner and token it
got in the caller's context, and every built-in checkpointer checks them in the same
transaction as each ``append``: a worker whose lease was taken over cannot write, whatever
its clock says, and gets ``RunTakenOver``. Expiry is judged by a clock a wall-clock step
cannot move: the database server's for PostgreSQL, the host's monotonic boot clock for
SQLite and the in-memory store.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any, Protocol, runtime_checkable

from ..errors import RunBusy, UserError
from .checkpoint import validate_id

__all__ = [
    "LeaseClock",
    "LeaseStore",
    "MemoryLeases",
    "RunTakenOver",
    "check_fence",
    "check_lease_args",
    "held_lease",
    "hold_lease",
    "lease_clock",
]


class RunTakenOver(RunBusy):
    """This worker's lease on the run was taken over by another worker: it must not write."""


# run_id -> (owner, token) of the leases this task holds; replaced, never mutated, so a
# task created later sees the leases its creator held then and nothing after
_HELD: ContextVar[Mapping[str, tuple[str, int]] | None] = ContextVar(
    "lovia_leases_held", default=None
)


def hold_lease(run_id: str, owner: str, token: int | None) -> None:
    """Remember (``token`` set) or forget (``None``) the lease this task holds on ``run_id``."""
    held = dict(_HELD.get() or {})
    if token is None:
        held.pop(run_id, None)
    else:
        held[run_id] = (owner, token)
    _HELD.set(held)


def held_lease(run_id: str) -> tuple[str, int] | None:
    """The ``(owner, token)`` this task acquired on ``run_id``, or ``None``."""
    return (_HELD.get() or {}).get(run_id)


def check_fence(run_id: str, held: tuple[str, int] | None, row: tuple[str, int] | None) -> None:
    """Refuse a save by a worker whose lease (``held``) is no longer the stored one (``row``).

    Nothing to check when this task took no lease, or the store has no lease on the run.
    """
    if held is None or row is None or (row[0], int(row[1])) == held:
        return
    raise RunTakenOver(
        f"run {run_id!r} was taken over by another worker ({row[0]}); this worker's save "
        "was refused and nothing was written",
        hint="the other worker carries the run on; raise lease_ttl above the longest pause "
        "a worker can have (a blocking tool, a GC stall, a suspended VM)",
    )


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            return f.read().strip()
    except OSError:
        return ""


_BOOT_ID = _boot_id()
_CLOCK = getattr(time, "CLOCK_BOOTTIME", None)


def lease_clock() -> tuple[str, float]:
    """``(boot id, seconds)`` on a clock every process of this host shares and a wall-clock
    step does not move (it counts from boot, suspended time included); a lease stamped in
    another boot has expired. Without a boot id (not Linux) it is the wall clock."""
    if not _BOOT_ID:
        return "", time.time()
    if _CLOCK is not None:
        return _BOOT_ID, time.clock_gettime(_CLOCK)
    return _BOOT_ID, time.monotonic()


class LeaseClock:
    """The clock a checkpointer judges lease expiry by, ``offset`` seconds ahead of the real
    one: the host's boot clock (SQLite), its monotonic clock (in memory) or the database
    server's clock (PostgreSQL). A checkpointer takes one (``clock=``; its own by default);
    stores sharing one storage should share one clock. ``advance`` moves it on, as waiting
    would, so a test can let a lease run out without sleeping."""

    __slots__ = ("offset",)

    def __init__(self, offset: float = 0.0) -> None:
        self.offset = float(offset)

    def advance(self, seconds: float) -> None:
        """Move the clock ``seconds`` ahead."""
        self.offset += float(seconds)

    def host(self) -> tuple[str, float]:
        """``lease_clock()`` moved by the offset."""
        boot, now = lease_clock()
        return boot, now + self.offset

    def monotonic(self) -> float:
        """``time.monotonic()`` moved by the offset."""
        return time.monotonic() + self.offset

    def __repr__(self) -> str:
        return f"LeaseClock(offset={self.offset!r})"


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

    _lease_table: dict[str, tuple[str, float, int]]  # run_id -> (owner, expires, token)
    _clock: LeaseClock

    def _leases(self) -> dict[str, tuple[str, float, int]]:
        table = self.__dict__.get("_lease_table")
        if table is None:
            table = self.__dict__["_lease_table"] = {}
        return table

    async def acquire_lease(self, run_id: str, owner: str, ttl: float) -> bool:
        """Take the lease on ``run_id`` for ``ttl`` seconds: free, expired or already ours."""
        check_lease_args(run_id, owner, ttl)
        table = self._leases()
        now = self._clock.monotonic()
        held = table.get(run_id)
        if held is not None and held[0] != owner and held[1] > now:
            return False
        token = 1 if held is None else (held[2] if held[0] == owner else held[2] + 1)
        table[run_id] = (owner, now + ttl, token)
        hold_lease(run_id, owner, token)
        return True

    async def renew_lease(self, run_id: str, owner: str, ttl: float) -> bool:
        """Extend our lease by ``ttl`` seconds; ``False`` when another owner has taken it."""
        check_lease_args(run_id, owner, ttl)
        table = self._leases()
        held = table.get(run_id)
        if held is None or held[0] != owner or held[1] == float("-inf"):
            return False  # taken over, or released
        table[run_id] = (owner, self._clock.monotonic() + ttl, held[2])
        return True

    async def lease_holder(self, run_id: str) -> str | None:
        """The owner of the unexpired lease on ``run_id``, or ``None``."""
        check_lease_args(run_id, "reader", 1.0)
        held = self._leases().get(run_id)
        return held[0] if held is not None and held[1] > self._clock.monotonic() else None

    async def release_lease(self, run_id: str, owner: str) -> None:
        """Give the lease up (a no-op when ``owner`` no longer holds it)."""
        check_lease_args(run_id, owner, 1.0)
        table = self._leases()
        held = table.get(run_id)
        if held is not None and held[0] == owner:
            table[run_id] = (owner, float("-inf"), held[2])  # the token outlives the lease
        if (held_lease(run_id) or ("",))[0] == owner:
            hold_lease(run_id, owner, None)

    def _check_fence(self, run_id: str) -> None:
        row = self._leases().get(run_id)
        check_fence(run_id, held_lease(run_id), None if row is None else (row[0], row[2]))
