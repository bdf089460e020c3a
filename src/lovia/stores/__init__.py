"""Durable state: session stores (conversations) and checkpointers (runs).

``open_stores(db)`` opens both on a SQLite path or a ``postgresql://`` URL. The store
classes are importable from here; the PostgreSQL ones load ``psycopg`` only when first
used (``pip install 'lovia[postgres]'``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .memory import InMemoryCheckpointer, InMemorySession
from .open import open_stores

if TYPE_CHECKING:
    from .postgres import PostgresCheckpointer, PostgresSession
    from .sqlite import SQLiteCheckpointer, SQLiteSession

__all__ = [
    "InMemoryCheckpointer",
    "InMemorySession",
    "PostgresCheckpointer",
    "PostgresSession",
    "SQLiteCheckpointer",
    "SQLiteSession",
    "open_stores",
]

_LAZY = {
    "SQLiteCheckpointer": ".sqlite",
    "SQLiteSession": ".sqlite",
    "PostgresCheckpointer": ".postgres",
    "PostgresSession": ".postgres",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'lovia.stores' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value
