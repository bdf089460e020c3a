"""Moved to ``lovia.chats.book`` (it needs no FastAPI); kept so old imports work."""

from __future__ import annotations

from ..chats.book import *  # noqa: F403
from ..chats.book import __all__ as __all__
