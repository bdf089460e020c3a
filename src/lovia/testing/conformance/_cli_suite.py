"""The suites ``python -m lovia.testing.conformance`` runs: the factories come from
``--lovia-session`` / ``--lovia-checkpointer``."""

from __future__ import annotations

from .suite import CheckpointerSuite, SessionSuite

__all__ = ["TestCheckpointer", "TestSession"]


class TestSession(SessionSuite):
    """The session named by --lovia-session."""


class TestCheckpointer(CheckpointerSuite):
    """The checkpointer named by --lovia-checkpointer."""
