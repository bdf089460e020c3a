"""Fixtures: every test in this folder asking for ``session`` or ``session_backend`` runs once
per backend of ``backends.BACKENDS``."""

from __future__ import annotations

from .backends import session, session_backend

__all__ = ["session", "session_backend"]  # fixtures used by name
