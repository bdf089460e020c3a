"""Shared fixtures. Tests never call a real model: the scripted provider stands in."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(autouse=True)
def _no_real_models(monkeypatch: pytest.MonkeyPatch) -> None:
    """A test that forgets to pass a model must not reach a real endpoint."""
    for name in ("LOVIA_MODEL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        if not os.environ.get("LOVIA_LIVE_TESTS"):
            monkeypatch.delenv(name, raising=False)
