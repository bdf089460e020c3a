"""Moved to ``lovia.chats.supervisor`` (it needs no FastAPI); kept so old imports work."""

from __future__ import annotations

from ..chats.supervisor import *  # noqa: F403
from ..chats.supervisor import __all__ as __all__
