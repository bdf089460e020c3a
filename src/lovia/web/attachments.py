"""Attachments sent with a message: files the page uploaded to the agent's workspace.

Each one's ``path`` is resolved again inside the workspace root (never trusted as sent); one
outside it, missing, or one the agent may not read (its ``denied_paths``: the file panel
refuses those too) is dropped. The run's input is then the text, a note naming each file's
workspace path (the agent reads it with its file tools) and, for a model that can see
images, the images themselves. An agent without a local workspace gets the text alone.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..agent import Agent
    from .schemas import ChatRequest

__all__ = ["user_input", "workspace_root"]

log = logging.getLogger("lovia.web")


def workspace_root(agent: Agent) -> Path | None:
    """The root folder of the agent's local workspace, or ``None`` (no workspace)."""
    workspace = getattr(agent, "workspace", None)
    root = getattr(getattr(workspace, "workspace", workspace), "root", None)
    return None if root is None else Path(root).expanduser().resolve()


def _readable(agent: Agent, root: Path, raw: str) -> Path | None:
    """The file ``raw`` names inside ``root`` when the agent may read it, else ``None``."""
    from ..workspace.paths import resolve_path

    try:
        found = resolve_path(root, raw)
        if not found.inside or not found.abs.is_file():
            return None
    except Exception:  # a NUL, a path the OS cannot resolve
        return None
    config = getattr(agent, "workspace", None)
    policy = getattr(getattr(config, "workspace", config), "policy", None)
    if policy is not None:
        decision = policy.decide_path(rel=found.rel, abs_posix=found.abs_posix, op="read")
        if decision == "deny":
            return None
    return found.abs


async def user_input(body: ChatRequest, agent: Agent) -> Any:
    """The run's input for ``body``: its text, or text and parts with the attachments."""
    root = workspace_root(agent)
    if not body.attachments or root is None:
        return body.message
    from ..parts import ImagePart, TextPart

    parts: list[Any] = [TextPart(body.message)]
    named: list[str] = []
    for item in body.attachments:
        path = _readable(agent, root, item.path)
        if path is None:
            log.warning("an attachment outside the workspace, missing or denied was dropped")
            continue
        rel = path.relative_to(root).as_posix()
        named.append(rel)
        if item.kind == "image" and item.mime.startswith("image/"):
            try:
                parts.append(ImagePart.from_path(path, mime_type=item.mime))
            except (OSError, ValueError) as exc:
                log.warning("could not read the image %s: %s", rel, exc)
    if not named:
        return body.message
    note = "Attached (in the workspace): " + ", ".join(named)
    parts[0] = TextPart(f"{body.message}\n\n{note}")
    return parts
