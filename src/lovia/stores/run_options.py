"""``CheckpointOptions``: how one run is checkpointed (a run option, not part of a store).

It names the checkpointer, the run id and what an existing run means, and the lease the run
holds. It sits beside the store protocol rather than in it, because it builds an in-memory
checkpointer when the caller resumes a snapshot without one.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from ..errors import UserError, UserTypeError
from .checkpoint import Checkpointer, IfRunExists, OnBusy, RunSnapshot, conforms, validate_id

__all__ = ["INPUT_KEPT", "CheckpointOptions"]

INPUT_KEPT: ContextVar[bool] = ContextVar("lovia_run_input_kept", default=False)
"""Set by a caller that keeps a new run's input itself until the run ends (a queued run's
job row does, and its retry starts the run again from it): the run's first save then comes
after its first model turn, with the input in it, instead of before the model is called.
Tools' calls are still saved before they run and their results before the next step."""

_POLICIES: tuple[str, ...] = ("resume", "restart", "fail", "resume_only")


@dataclass(frozen=True)
class CheckpointOptions:
    """Checkpoint a run in ``checkpointer`` under ``run_id`` (generated when ``None``).

    ``if_run_exists`` decides what an existing run id means: ``"resume"`` (continue it, or
    replay it when completed), ``"restart"``, ``"fail"`` or ``"resume_only"``.

    With a ``run_id`` and a checkpointer that supports leases (every built-in one), the run
    holds a lease on its id while it runs, renewed every ``lease_ttl / 3`` seconds, so no
    other worker drives it at the same time. A run whose id is leased by a live worker waits
    for it (``on_busy="wait"``, at most ``wait_timeout`` seconds when set) or raises
    ``RunBusy`` at once (``on_busy="fail"``). A holder that stops renewing loses the lease
    after ``lease_ttl`` seconds and the next run takes the run over. ``lease=False`` opts out.

    ``resume_from`` continues (or replays) a ``RunSnapshot`` the caller holds; without a
    checkpointer the run's progress is then kept in memory only.
    """

    checkpointer: Checkpointer
    run_id: str | None = None
    if_run_exists: IfRunExists = "resume"
    delete_on_success: bool = False
    resume_from: RunSnapshot | None = None
    lease: bool = True
    lease_ttl: float = 30.0
    on_busy: OnBusy = "wait"
    wait_timeout: float | None = None

    def __init__(
        self,
        checkpointer: Checkpointer | None = None,
        run_id: str | None = None,
        if_run_exists: IfRunExists = "resume",
        delete_on_success: bool = False,
        resume_from: RunSnapshot | None = None,
        *,
        lease: bool = True,
        lease_ttl: float = 30.0,
        on_busy: OnBusy = "wait",
        wait_timeout: float | None = None,
    ) -> None:
        _check_lease_options(lease_ttl, on_busy, wait_timeout)
        if if_run_exists not in _POLICIES:
            raise UserError(
                "if_run_exists must be one of ['fail', 'restart', 'resume', 'resume_only'], "
                f"got {if_run_exists!r}",
                hint="use one of 'resume', 'restart', 'fail', 'resume_only'",
            )
        if checkpointer is None:
            if resume_from is None:
                raise UserError(
                    "CheckpointOptions needs a checkpointer",
                    hint="pass a checkpointer such as SQLiteCheckpointer(path), or resume_from=",
                )
            from .memory import InMemoryCheckpointer  # only this run's own record

            checkpointer = InMemoryCheckpointer()
        if isinstance(checkpointer, type):  # the class has the methods, unbound
            raise UserError(
                f"checkpointer is the class {checkpointer.__name__}, not a checkpointer",
                hint=f"create one: CheckpointOptions({checkpointer.__name__}(...), run_id)",
            )
        if not conforms(checkpointer, Checkpointer):
            raise UserError(
                f"{type(checkpointer).__name__} is not a checkpointer",
                hint="pass SQLiteCheckpointer(path) or an object with append/load/delete",
            )
        if resume_from is not None:
            if not isinstance(resume_from, RunSnapshot):
                raise UserTypeError(
                    "resume_from must be a RunSnapshot (from checkpointer.load), "
                    f"got {type(resume_from).__name__}",
                    hint="pass await checkpointer.load(run_id), or only a run_id to resume it",
                )
            if run_id is not None and run_id != resume_from.run_id:
                raise UserError(
                    f"checkpoint run_id {run_id!r} does not match resume_from.run_id "
                    f"{resume_from.run_id!r}",
                    hint="omit run_id when you pass resume_from",
                )
            run_id = resume_from.run_id
        if run_id is not None:
            validate_id(run_id, "checkpoint run_id")
            if not run_id.strip():
                raise UserError(
                    f"checkpoint run_id must be a non-empty string, got {run_id!r} (blank)",
                    hint="pass a generated id such as uuid4().hex, or omit run_id",
                )
        set_ = object.__setattr__
        set_(self, "checkpointer", checkpointer)
        set_(self, "run_id", run_id)
        set_(self, "if_run_exists", if_run_exists)
        set_(self, "delete_on_success", bool(delete_on_success))
        set_(self, "resume_from", resume_from)
        set_(self, "lease", bool(lease))
        set_(self, "lease_ttl", float(lease_ttl))
        set_(self, "on_busy", on_busy)
        set_(self, "wait_timeout", None if wait_timeout is None else float(wait_timeout))

    @property
    def resolved_run_id(self) -> str | None:
        """The run id this run is stored under (``resume_from``'s when that is given)."""
        if self.run_id is not None:
            return self.run_id
        return None if self.resume_from is None else self.resume_from.run_id


def _check_lease_options(ttl: Any, on_busy: Any, wait_timeout: Any) -> None:
    def positive(value: Any) -> bool:
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        return number and value > 0 and value != float("inf")

    if not positive(ttl):
        raise UserError(
            f"lease_ttl must be a positive number of seconds, got {ttl!r}",
            hint="pass lease_ttl=30.0; a crashed worker's run is taken over after that long",
        )
    if on_busy not in ("wait", "fail"):
        raise UserError(f"unknown on_busy {on_busy!r}", hint="use on_busy='wait' or 'fail'")
    if wait_timeout is not None and not positive(wait_timeout):
        raise UserError(
            f"wait_timeout must be a positive number of seconds or None, got {wait_timeout!r}",
            hint="pass wait_timeout=None to wait as long as the other worker runs",
        )
