"""The session protocol under the module path lovia 0.9.119 documents (``lovia.session``).

The definitions live in ``lovia.stores.session_protocol``; the ``*_META_KEY`` names are the keys the
run loop keeps in a finished run's segment ``meta``.
"""

from __future__ import annotations

from .stores.maintenance import SessionHistory
from .stores.session_protocol import Segment, Session

__all__ = [
    "NOTICE_META_KEY",
    "STATE_META_KEY",
    "TIMING_META_KEY",
    "Segment",
    "Session",
    "SessionHistory",
]

STATE_META_KEY = "context_state"
"""The context policy's state carried from one run to the next."""
NOTICE_META_KEY = "context_notice"
"""A note on the run's last compaction, for interfaces that show it."""
TIMING_META_KEY = "timing"
"""``{"started_at", "finished_at"}`` of the run, in Unix seconds."""
