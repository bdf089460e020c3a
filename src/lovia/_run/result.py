"""``RunResult``: what a finished run returns (defined below the runtime)."""

from .._run_types import RunResult

__all__ = ["RunResult"]
