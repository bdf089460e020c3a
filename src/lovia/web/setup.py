"""Moved to ``lovia.chats.setup`` (it needs no FastAPI); kept so old imports work."""

from __future__ import annotations

from ..chats.setup import *  # noqa: F403
from ..chats.setup import __all__ as __all__
