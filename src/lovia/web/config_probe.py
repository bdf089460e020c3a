"""``POST /api/config/test``: whether a model connection works, before it is saved or after.

Settings -> Models asks it with the fields being edited, or a stored profile's id (then the
fields not given come from the profile: a ``null`` key uses the stored one, so the page never
holds it; ``""`` probes without a key). It lists the server's models (``GET <base>/models``,
with the key as the provider sends it) and says ``ok``, ``auth_failed`` (401 / 403),
``unreachable`` (no answer) or ``unverifiable`` (any other answer: many servers do not list
models and still chat). Nothing is written. The probe sends the key to the URL asked for,
so, like every config route, it answers only a local client or one with the token."""

from __future__ import annotations

from typing import Any, Literal

import httpx
from fastapi import APIRouter
from pydantic import BaseModel, Field

from .api_config import ConfigFile, _find
from .deps import RouterDeps
from .errors import WebError

__all__ = ["ProbeRequest", "probe_connection", "probe_routes"]

PROBE_TIMEOUT_S = 10.0
_DEFAULT_URLS = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com/v1"}


class ProbeRequest(BaseModel):
    """The connection to test: free fields, or a stored profile's (``profile_id``)."""

    profile_id: str | None = Field(default=None, max_length=200)
    model: str | None = Field(default=None, max_length=500)
    flavor: Literal["openai", "anthropic"] = "openai"
    base_url: str | None = Field(default=None, max_length=2000)
    api_key: str | None = Field(default=None, max_length=4000)
    context_window: int | None = Field(default=None, ge=1)


def _flavor(model: str, asked: str) -> tuple[str, str]:
    """``(flavor, model name)``: a ``provider:`` prefix on the model wins over ``asked``."""
    prefix, sep, name = model.partition(":")
    if sep and prefix in _DEFAULT_URLS:
        return prefix, name
    return asked, model


async def probe_connection(
    flavor: str, model: str, base_url: str | None, api_key: str | None, context_window: int | None
) -> dict[str, Any]:
    """``{outcome, detail, context_window, window_from_endpoint, models, note}``."""
    base = (base_url or _DEFAULT_URLS[flavor]).rstrip("/")
    headers: dict[str, str] = {}
    if api_key:
        if flavor == "anthropic":
            headers = {"x-api-key": api_key, "anthropic-version": "2023-06-01"}
        else:
            headers = {"Authorization": f"Bearer {api_key}"}
    out: dict[str, Any] = {
        "outcome": "unverifiable",
        "detail": "",
        "context_window": context_window,
        "window_from_endpoint": False,
        "models": None,
        "note": None,
    }
    try:
        async with httpx.AsyncClient(timeout=PROBE_TIMEOUT_S, trust_env=False) as client:
            response = await client.get(f"{base}/models", headers=headers)
    except httpx.HTTPError as exc:
        out.update(outcome="unreachable", detail=f"no answer from {base}: {type(exc).__name__}")
        return out
    if response.status_code in (401, 403):
        out.update(
            outcome="auth_failed",
            detail=f"{base} refused the API key (HTTP {response.status_code})",
        )
        return out
    if not response.is_success:
        out["detail"] = f"{base}/models answered HTTP {response.status_code}; chat may still work"
        return out
    try:
        listed = response.json().get("data")
        names = [str(m["id"]) for m in listed if isinstance(m, dict) and "id" in m]
    except (ValueError, AttributeError, TypeError):
        out["detail"] = f"{base}/models answered something that is not a model list"
        return out
    out.update(outcome="ok", detail=f"{base} answered with {len(names)} models", models=names)
    if names and model not in names:
        out["note"] = f"{model!r} is not in the server's model list; check its name"
    return out


def probe_routes(deps: RouterDeps) -> APIRouter:
    router = APIRouter(tags=["config"])
    cfg = deps.config_runtime
    if not isinstance(cfg, ConfigFile):
        return router
    where = cfg

    @router.post("/api/config/test", summary="Test a model connection (nothing is saved)")
    async def test_connection(body: ProbeRequest) -> dict[str, Any]:
        stored = _find(where.read(), body.profile_id) if body.profile_id else {}
        model = body.model or stored.get("model")
        if not isinstance(model, str) or not model:
            raise WebError(400, "invalid_request", "model is required", "name the model to test")
        flavor, name = _flavor(model, body.flavor)
        key = body.api_key if body.api_key is not None else stored.get("api_key")
        base_url = body.base_url or stored.get("base_url")
        return await probe_connection(
            flavor, name, base_url, key or None, body.context_window or stored.get("context_window")
        )

    return router
