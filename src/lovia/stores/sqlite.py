"""SQLite stores: ``SQLiteSession`` and ``SQLiteCheckpointer`` (they may share one file)."""

from .sqlite_checkpoint import SQLiteCheckpointer
from .sqlite_session import SQLiteSession

__all__ = ["SQLiteCheckpointer", "SQLiteSession"]
