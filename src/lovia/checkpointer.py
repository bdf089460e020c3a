"""Run checkpoints under the module path lovia 0.9.119 documents (``lovia.checkpointer``).

The definitions live in ``lovia.stores.checkpoint`` and ``lovia.stores.run_options``; this
module names them where programs written for 0.9.119 import them from.
"""

from __future__ import annotations

from .stores.checkpoint import (
    Checkpointer,
    IfRunExists,
    OnBusy,
    PendingApproval,
    RunHead,
    RunSnapshot,
    RunStatus,
)
from .stores.lease import RunTakenOver
from .stores.run_options import CheckpointOptions
from .transcript import entry_from_dict as entry_from_dict  # names 0.9.119's module held
from .transcript import entry_to_dict as entry_to_dict
from .usage import Usage as Usage

__all__ = [
    "CheckpointOptions",
    "Checkpointer",
    "IfRunExists",
    "OnBusy",
    "PendingApproval",
    "RunHead",
    "RunSnapshot",
    "RunStatus",
    "RunTakenOver",
]
