"""``lovia.runner``: ``Runner``, ``RunHandle`` and ``RunResult``."""

from __future__ import annotations

from .run.handle import RunHandle
from .run.result import RunResult
from .run.runner import Runner

__all__ = ["RunHandle", "RunResult", "Runner"]
