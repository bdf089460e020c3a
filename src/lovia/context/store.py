"""The result stores under the module path lovia 0.9.119 used (``lovia.context.store``).

They live in ``lovia.context.results``; this module only names them where programs written
for 0.9.119 import them from.
"""

from __future__ import annotations

from .results import FileResultStore, InMemoryResultStore, ResultStore

__all__ = ["FileResultStore", "InMemoryResultStore", "ResultStore"]
