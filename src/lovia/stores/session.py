"""``lovia.stores.session``, the module path lovia 0.9.119 used for the session stores.

Programs written for 0.9.119 import ``InMemorySession`` and ``SQLiteSession`` from here, and
``Session`` / ``Segment`` with them. The protocol lives in ``lovia.stores.session_protocol``
and the stores in ``lovia.stores.memory`` / ``lovia.stores.sqlite``; nothing in lovia imports
this module, so it ties no store to another.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..transcript import ToolResultEntry as ToolResultEntry  # names 0.9.119's module held
from ..transcript import drop_dangling_tool_calls as drop_dangling_tool_calls
from ..transcript import entry_from_dict as entry_from_dict
from ..transcript import entry_to_dict as entry_to_dict
from .session_protocol import Segment, Session

if TYPE_CHECKING:
    from .memory import InMemorySession
    from .sqlite_session import SQLiteSession

__all__ = ["InMemorySession", "SQLiteSession", "Segment", "Session"]


def __getattr__(name: str) -> Any:
    """The stores load when first named, as ``lovia.stores`` does."""
    if name == "InMemorySession":
        from .memory import InMemorySession

        return InMemorySession
    if name == "SQLiteSession":
        from .sqlite_session import SQLiteSession

        return SQLiteSession
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
