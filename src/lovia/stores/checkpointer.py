"""The checkpointers under the module path lovia 0.9.119 used (``lovia.stores.checkpointer``).

The classes live in ``lovia.stores.memory`` and ``lovia.stores.sqlite``; this module only
names them where programs written for 0.9.119 import them from.
"""

from __future__ import annotations

from .memory import InMemoryCheckpointer
from .sqlite_checkpoint import SQLiteCheckpointer

__all__ = ["InMemoryCheckpointer", "SQLiteCheckpointer"]
