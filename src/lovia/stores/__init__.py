"""Durable state: session stores (conversations) and checkpointers (runs).

``open_stores(db)`` opens both on a SQLite path or a ``postgresql://`` URL.
"""

from .open import open_stores

__all__ = ["open_stores"]
