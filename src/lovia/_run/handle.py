"""``RunHandle``: a streamed run (defined below the runtime)."""

from .._run_types import RunHandle

__all__ = ["RunHandle"]
