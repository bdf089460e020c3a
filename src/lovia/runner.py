"""``lovia.runner``: ``Runner``, ``RunHandle`` and ``RunResult``."""

from __future__ import annotations

from ._run.handle import RunHandle
from ._run.result import RunResult
from ._run.runner import Runner

__all__ = ["RunHandle", "RunResult", "Runner"]
