"""The model lovia 0.9.119's Settings -> Models wrote: ``config.json`` in ``./.lovia/``
(project scope) or ``~/.lovia/`` (user scope; the project's wins). Its ``models`` are
profiles (``id``, ``model``, ``api_key``, ``base_url``, ``vision``...); ``roles.chat`` (or
``roles.default``) names the one to chat with, else the first is taken."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import UserError

__all__ = ["config_paths", "configured_model", "model_of", "settings_path"]


def config_paths() -> list[Path]:
    """Where ``config.json`` is looked for, the first found wins."""
    return [Path(".lovia") / "config.json", Path.home() / ".lovia" / "config.json"]


def _profile(doc: Any, where: Path) -> dict[str, Any] | None:
    models = doc.get("models") if isinstance(doc, dict) else None
    if not isinstance(models, list) or not models:
        return None
    profiles = [m for m in models if isinstance(m, dict) and isinstance(m.get("model"), str)]
    if not profiles:
        raise UserError(
            f"{where}: no model profile has a 'model' string",
            hint='each entry of "models" needs e.g. "model": "openai:gpt-4.1"',
        )
    roles = doc.get("roles") if isinstance(doc.get("roles"), dict) else {}
    wanted = roles.get("chat") or roles.get("default")
    for profile in profiles:
        if wanted is not None and profile.get("id") == wanted:
            return profile
    return profiles[0]


_VISION = {"on": True, "off": False}


def settings_path() -> Path:
    """The ``config.json`` Settings writes: the one found, else the project's."""
    for path in config_paths():
        if path.is_file():
            return path
    return config_paths()[0]


def model_of(doc: Any, where: Path) -> Any:
    """The provider of the chat profile of ``doc`` (a ``config.json``), or ``None``."""
    profile = _profile(doc, where)
    if profile is None:
        return None
    from ..providers.registry import provider_from_string

    vision = profile.get("vision")
    extra = profile.get("extra_body")
    options: dict[str, Any] = {"extra_body": extra} if isinstance(extra, dict) and extra else {}
    return provider_from_string(
        profile["model"],
        api_key=profile.get("api_key") or None,
        base_url=profile.get("base_url") or None,
        supports_vision=vision if isinstance(vision, bool) else _VISION.get(str(vision)),
        **options,
    )


def configured_model() -> Any:
    """The provider of the chat profile of the first ``config.json`` found, or ``None``."""
    for path in config_paths():
        if not path.is_file():
            continue
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise UserError(
                f"cannot read {path}: {exc}",
                hint="fix the file (JSON), or move it away and set LOVIA_MODEL",
            ) from None
        found = model_of(doc, path)
        if found is not None:
            return found
    return None
