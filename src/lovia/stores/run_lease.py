"""The run lease: while a worker drives a run, no other worker drives the same ``run_id``.

``RunLease.for_run`` looks at the run's ``CheckpointOptions``; when the run has an id and its
checkpointer supports leases (``lovia.stores.lease.LeaseStore``), ``acquire`` takes the lease
before the snapshot is loaded (waiting or failing fast with ``RunBusy`` per ``on_busy``), a
heartbeat task renews it every ``ttl / 3`` seconds, and ``release`` gives it up when the run
ends. A holder that dies stops renewing, so its lease expires after ``ttl`` seconds and the
next worker takes the run over and resumes it from its checkpoint.

Before every checkpoint save the recorder calls ``confirm``: when the last renewal is older
than ``ttl`` (this worker stalled, or the database was away) it renews first, and if the
lease was taken over meanwhile the save raises ``RunBusy`` instead of writing, so a stale
worker does not write over the new holder's progress.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
import uuid
from contextvars import ContextVar
from typing import Any, cast

from ..errors import RunBusy
from .checkpoint import RunSnapshot, conforms
from .lease import LeaseStore, hold_lease
from .run_options import CheckpointOptions
from .session_version import SessionHistory

__all__ = ["RELEASED_LATER", "LeaseHandOff", "RunLease", "default_owner", "holder_is_dead"]

log = logging.getLogger("lovia.stores.lease")
_MAX_POLL_S = 1.0
RELEASE_WAIT_S = 5.0
"""How long giving a lease up may take (a locked SQLite file, a stalled link); past that the
run returns anyway and its lease expires after its ``ttl``."""


class LeaseHandOff:
    """A caller's promise to give up the leases its run releases in its own next statement
    (a queued run's lease goes with its job's end): ``release`` records ``(run_id, owner)``
    here instead of writing; ``flush`` writes what the caller could not."""

    def __init__(self) -> None:
        self.owners: dict[str, str] = {}

    async def flush(self, store: Any) -> None:
        owners, self.owners = self.owners, {}
        for run_id, owner in owners.items():
            await store.release_lease(run_id, owner)


RELEASED_LATER: ContextVar[LeaseHandOff | None] = ContextVar("lovia_released_later", default=None)
"""The ``LeaseHandOff`` a run's lease is given up through instead of the store, or ``None``."""


def default_owner() -> str:
    """``host/pid/random``: unique per run attempt, readable in the lease table."""
    return f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex[:8]}"


def holder_is_dead(owner: str) -> bool:
    """True when ``owner`` (``host/pid/...``) names a process of this host that has ended."""
    host, _, rest = owner.partition("/")
    pid_text = rest.partition("/")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False  # another host (or a custom owner): only the ttl can tell
    pid = int(pid_text)
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # alive, owned by another user
    try:  # a killed child its parent has not reaped yet is a zombie: dead for our purpose
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rpartition(")")[2].split()[0] == "Z"
    except (OSError, IndexError):
        return False


class RunLease:
    """The lease one run attempt holds on its ``run_id`` (a no-op when leasing is off)."""

    def __init__(
        self,
        store: LeaseStore | None,
        run_id: str | None,
        *,
        ttl: float = 30.0,
        on_busy: str = "wait",
        wait_timeout: float | None = None,
        owner: str | None = None,
    ) -> None:
        self.store = store if run_id is not None else None
        self.run_id = run_id or ""
        self.ttl = ttl
        self.on_busy = on_busy
        self.wait_timeout = wait_timeout
        self.owner = owner or default_owner()
        self.held = False
        self.lost = False
        self._renewed_at = 0.0
        self._heartbeat: asyncio.Task[None] | None = None
        self.history: SessionHistory | None = None  # read with the lease (see below)

    @classmethod
    def for_run(cls, options: CheckpointOptions | None) -> RunLease:
        """The lease these options ask for; inactive without an id, or lease support."""
        if options is None or not options.lease or options.run_id is None:
            return cls(None, None)
        store = options.checkpointer
        if not conforms(store, LeaseStore):
            return cls(None, None)  # a custom checkpointer: runs go unguarded, as documented
        return cls(
            cast(LeaseStore, store),
            options.run_id,
            ttl=options.lease_ttl,
            on_busy=options.on_busy,
            wait_timeout=options.wait_timeout,
        )

    @property
    def active(self) -> bool:
        return self.store is not None

    async def acquire(self) -> None:
        """Take the lease, waiting or failing per ``on_busy``; then start the heartbeat."""
        store = self.store
        if store is None:
            return
        started = time.monotonic()
        pause = 0.05
        while not await store.acquire_lease(self.run_id, self.owner, self.ttl):
            if await self._free_if_holder_died(store):
                continue
            waited = time.monotonic() - started
            if self.on_busy == "fail" or (
                self.wait_timeout is not None and waited + pause > self.wait_timeout
            ):
                raise RunBusy(
                    f"run {self.run_id!r} is being driven by another worker"
                    + (f" (waited {waited:.1f} s)" if waited >= 0.05 else ""),
                    hint="let that worker finish, then submit the run again (it replays), "
                    "or pass CheckpointOptions(..., on_busy='wait'); a crashed worker's lease "
                    f"expires after lease_ttl={self.ttl:g} s",
                )
            await asyncio.sleep(pause)
            pause = min(pause * 2, _MAX_POLL_S, self.ttl / 3)
        self._held()

    async def try_acquire_loading(
        self, session: Any = None, session_id: str | None = None
    ) -> tuple[bool, RunSnapshot | None] | None:
        """One try at the lease together with the run's load, when the store does both in
        one round trip (``acquire_lease_and_load``): ``(taken, snapshot)`` (the heartbeat
        started when taken), or ``None`` when it cannot (then ``acquire``, then load). Given
        the run's session, a PostgreSQL session on the store's pool is read in that round
        trip too: ``history`` holds it when the lease was taken."""
        both = getattr(self.store, "acquire_lease_and_load", None)
        if both is None:
            return None
        history = None
        with_history = getattr(self.store, "acquire_lease_load_and_history", None)
        if with_history is not None and session is not None and session_id is not None:
            taken, snap, history = await with_history(
                self.run_id, self.owner, self.ttl, session, session_id
            )
        else:
            taken, snap = await both(self.run_id, self.owner, self.ttl)
        if taken:
            self.history = history
            self._held()
        return bool(taken), snap

    def _held(self) -> None:
        self.held = True
        self._renewed_at = time.monotonic()
        self._heartbeat = asyncio.ensure_future(self._beat())

    async def _free_if_holder_died(self, store: LeaseStore) -> bool:
        """Free a lease whose holder was a process on this host that no longer runs.

        A crashed worker re-submitted on the same host then resumes at once instead of
        waiting ``ttl`` seconds. The release is a compare-and-delete on the dead owner, so
        of several re-submitters only one acquires.
        """
        holder = await store.lease_holder(self.run_id)
        if holder is None or not holder_is_dead(holder):
            return False
        log.warning("run %s: its lease holder %s is gone; taking the run over", self.run_id, holder)
        await store.release_lease(self.run_id, holder)
        return True

    async def confirm(self) -> None:
        """Raise ``RunBusy`` unless this worker still holds the lease: it must not write."""
        if not self.held:
            return
        if not self.lost and time.monotonic() - self._renewed_at > self.ttl:
            await self._renew()  # stale: someone may have taken over in the meantime
        if self.lost:
            raise RunBusy(
                f"run {self.run_id!r} was taken over by another worker: this worker stopped "
                f"renewing its lease for longer than lease_ttl={self.ttl:g} s",
                hint="raise lease_ttl above the longest pause a worker can have (a blocking "
                "tool, a GC stall); the other worker carries the run on",
            )

    async def release(self) -> None:
        """Stop the heartbeat and give the lease up; a failure is logged, never raised.

        A cancellation that arrives meanwhile still propagates, and a store that does not
        answer within ``RELEASE_WAIT_S`` is left behind; the lease then simply expires after
        ``ttl`` seconds.
        """
        beat, self._heartbeat = self._heartbeat, None
        if beat is not None:
            beat.cancel()
        try:
            later = RELEASED_LATER.get()
            if self.store is not None and self.held and later is not None:
                self.held = False  # the caller's next statement gives it up
                later.owners[self.run_id] = self.owner
                hold_lease(self.run_id, self.owner, None)
            elif self.store is not None and self.held:
                self.held = False
                try:
                    await asyncio.wait_for(
                        self.store.release_lease(self.run_id, self.owner), RELEASE_WAIT_S
                    )
                except Exception as exc:  # it expires on its own; the run's result stands
                    log.warning("could not release the lease on run %s: %r", self.run_id, exc)
        finally:
            if beat is not None:
                await asyncio.gather(beat, return_exceptions=True)

    async def _beat(self) -> None:
        while not self.lost:
            await asyncio.sleep(self.ttl / 3)
            await self._renew()

    async def _renew(self) -> None:
        store = self.store
        assert store is not None
        try:
            renewed = await store.renew_lease(self.run_id, self.owner, self.ttl)
        except Exception as exc:  # a blip: try again next beat, until the ttl runs out
            log.warning("could not renew the lease on run %s: %r", self.run_id, exc)
            renewed = time.monotonic() - self._renewed_at < self.ttl
        else:
            if renewed:
                self._renewed_at = time.monotonic()
        if not renewed and not self.lost:
            self.lost = True
            log.warning("lost the lease on run %s to another worker", self.run_id)

    def __repr__(self) -> str:
        state: Any = "held" if self.held else ("lost" if self.lost else "free")
        return f"RunLease({self.run_id!r}, owner={self.owner!r}, {state})"
