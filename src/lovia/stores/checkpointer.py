"""The checkpointers under the module path lovia 0.9.119 used (``lovia.stores.checkpointer``).

The classes live in ``lovia.stores.memory`` and ``lovia.stores.sqlite``; this module only
names them where programs written for 0.9.119 import them from.
"""

from __future__ import annotations

from ..transcript import entry_from_dict as entry_from_dict  # names 0.9.119's module held
from ..transcript import entry_to_dict as entry_to_dict
from .checkpoint import RunHead as RunHead
from .checkpoint import RunSnapshot as RunSnapshot
from .memory import InMemoryCheckpointer
from .sqlite_checkpoint import SQLiteCheckpointer

__all__ = ["InMemoryCheckpointer", "SQLiteCheckpointer"]
