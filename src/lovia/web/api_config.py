"""The Settings routes (``/api/config/...``): the model profiles, role assignments, web-search
backend and skill directories of a ``config.json`` as lovia 0.9.119's Settings writes it.

They exist when the app is given a :class:`ConfigFile` (``lovia web`` without ``--app``
does). Every write validates the whole document first (a refused one changes nothing), then
replaces the file atomically (a temporary file in the same folder, renamed over it, readable
by its owner only), then rebuilds the served agent when the file's owner asked for that. Keys
are write-only: a read shows whether a key is set and its first and last characters."""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from ..errors import LoviaError
from .errors import WebError

if TYPE_CHECKING:
    from ..agent import Agent
    from .deps import RouterDeps

__all__ = ["ConfigFile", "config_routes", "mask"]

DEFAULT_SKILL_DIRS = [".agents/skills", "~/.agents/skills"]
RESERVED_BODY_FIELDS = frozenset({"model", "messages", "system", "stream", "tools"})
ROLES = ("chat", "aux", "vision")
_NO_STORE = {"Cache-Control": "no-store"}


def mask(secret: Any) -> dict[str, Any]:
    """What a read shows of a key: whether it is set, and a hint too short to use."""
    if not isinstance(secret, str) or not secret:
        return {"set": False, "hint": None}
    if len(secret) <= 8:
        return {"set": True, "hint": "…"}
    return {"set": True, "hint": f"{secret[:3]}…{secret[-4:]}"}


@dataclass
class ConfigFile:
    """One ``config.json`` the Settings routes read and write.

    ``rebuild`` (optional) is called with the new document after each write and returns the
    agent to serve under ``agent_name`` from then on (or ``None`` while nothing is
    configured); a run already going keeps the agent it started with."""

    path: Path
    agent_name: str = "lovia"
    rebuild: Callable[[dict[str, Any]], Agent | None] | None = None

    def read(self) -> dict[str, Any]:
        if not self.path.is_file():
            return {}
        try:
            doc = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise WebError(
                500,
                "invalid_config",
                f"cannot read {self.path.name}: {exc}",
                "fix the file (JSON) or move it away",
            ) from None
        return doc if isinstance(doc, dict) else {}

    def write(self, doc: dict[str, Any]) -> None:
        """Replace the file with ``doc`` at once: a reader sees the old or the new, whole."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".config-", suffix=".json", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(doc, out, indent=2, ensure_ascii=False)
                out.write("\n")
                out.flush()
                os.fsync(out.fileno())
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


class ProfileBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str | None = Field(default=None, max_length=100)
    name: str | None = Field(default=None, max_length=200)
    model: str = Field(min_length=1, max_length=300)
    base_url: str | None = Field(default=None, max_length=2000)
    api_key: str | None = Field(default=None, max_length=4000)
    vision: Literal["auto", "on", "off"] | None = None
    extra_body: dict[str, Any] | None = None


class RolesBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    chat: str | None = Field(default=None, max_length=100)
    aux: str | None = Field(default=None, max_length=100)
    vision: str | None = Field(default=None, max_length=100)


class SearchBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    backend: Literal["auto", "tavily", "ddg", "off"] | None = None
    tavily_api_key: str | None = Field(default=None, max_length=4000)


class SkillsBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    dirs: list[str] = Field(max_length=100)


def _bad(message: str, hint: str | None = None) -> WebError:
    return WebError(400, "invalid_request", message, hint)


def _slug(text: str, taken: set[str]) -> str:
    base = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "model"
    found, n = base, 1
    while found in taken:
        n += 1
        found = f"{base}-{n}"
    return found


def _profiles(doc: dict[str, Any]) -> list[dict[str, Any]]:
    models = doc.get("models")
    return [m for m in models if isinstance(m, dict)] if isinstance(models, list) else []


def _roles(doc: dict[str, Any]) -> dict[str, Any]:
    roles = doc.get("roles")
    return dict(roles) if isinstance(roles, dict) else {}


def _find(doc: dict[str, Any], profile_id: str) -> dict[str, Any]:
    for profile in _profiles(doc):
        if profile.get("id") == profile_id:
            return profile
    raise WebError(
        404, "model_not_found", f"no model profile {profile_id!r}", "GET /api/config lists them"
    )


def validate(doc: dict[str, Any]) -> None:
    """Refuse a document the server could not serve (400, naming what is wrong)."""
    ids: set[str] = set()
    for profile in _profiles(doc):
        pid = profile.get("id")
        if not isinstance(pid, str) or not pid:
            raise _bad("models: every profile needs an 'id'")
        if pid in ids:
            raise _bad(f"models: the id {pid!r} is used twice")
        ids.add(pid)
        extra = profile.get("extra_body") or {}
        reserved = sorted(RESERVED_BODY_FIELDS & set(extra))
        if reserved:
            raise _bad(
                f"models.{pid}.extra_body: {', '.join(reserved)} belong to lovia",
                "extra request fields cannot replace what every request sends",
            )
        from ..providers.registry import provider_from_string

        try:
            provider_from_string(
                profile["model"],
                api_key=profile.get("api_key") or "unchecked",
                base_url=profile.get("base_url") or None,
            )
        except LoviaError as exc:
            raise _bad(f"models.{pid}: {exc.message}", exc.hint) from None
        except (ValueError, TypeError) as exc:
            raise _bad(f"models.{pid}: {exc}") from None
    roles = _roles(doc)
    for role in ROLES:
        ref = roles.get(role)
        if ref is not None and ref not in ids:
            raise _bad(f"roles.{role}: no model profile {ref!r}", "GET /api/config lists them")
    if ids and roles.get("chat") is None:
        raise _bad("roles.chat: the chat role needs a model profile")
    dirs = (doc.get("skills") or {}).get("dirs", DEFAULT_SKILL_DIRS)
    if not isinstance(dirs, list) or not all(isinstance(d, str) and d.strip() for d in dirs):
        raise _bad("skills.dirs: each directory must be a non-empty path")


def view(doc: dict[str, Any], where: ConfigFile) -> dict[str, Any]:
    """The document as a read shows it: keys masked."""
    profiles = []
    for profile in _profiles(doc):
        shown = {k: v for k, v in profile.items() if k != "api_key"}
        shown["api_key"] = mask(profile.get("api_key"))
        shown.setdefault("name", profile.get("model"))
        shown.setdefault("extra_body", {})
        profiles.append(shown)
    roles = _roles(doc)
    found = doc.get("search")
    search: dict[str, Any] = found if isinstance(found, dict) else {}
    found = doc.get("skills")
    skills: dict[str, Any] = found if isinstance(found, dict) else {}
    return {
        "configured": bool(profiles),
        "missing": [] if profiles else ["model"],
        "path": str(where.path),
        "models": profiles,
        "roles": {role: roles.get(role) for role in ROLES},
        "search": {
            "backend": search.get("backend", "auto"),
            "tavily_api_key": mask(search.get("tavily_api_key")),
        },
        "skills": {"dirs": list(skills.get("dirs", DEFAULT_SKILL_DIRS))},
    }


def scan_skills(dirs: list[str]) -> list[dict[str, Any]]:
    """What each skill directory holds: its skills (a name seen earlier is ``shadowed``) and
    the folders whose ``SKILL.md`` cannot be read."""
    from ..plugins.skills.model import check_description, check_skill_name
    from ..plugins.skills.source import split_frontmatter

    seen: set[str] = set()
    roots = []
    for entry in dirs:
        kind = {".agents/skills": "project_default", "~/.agents/skills": "user_default"}
        root = Path(entry).expanduser()
        skills: list[dict[str, Any]] = []
        problems: list[dict[str, str]] = []
        if root.is_dir():
            for sub in sorted(p for p in root.iterdir() if (p / "SKILL.md").is_file()):
                try:
                    meta, _ = split_frontmatter((sub / "SKILL.md").read_text(encoding="utf-8"))
                    name = check_skill_name(meta.get("name"))
                    about = check_description(name, meta.get("description"))
                except (LoviaError, ValueError, OSError) as exc:
                    problems.append({"dir": sub.name, "error": str(exc)})
                    continue
                skills.append({"name": name, "description": about, "shadowed": name in seen})
                seen.add(name)
        roots.append(
            {
                "path": entry,
                "kind": kind.get(entry, "custom"),
                "exists": root.is_dir(),
                "skills": skills,
                "problems": problems,
            }
        )
    return roots


def config_routes(deps: RouterDeps) -> APIRouter:  # noqa: C901 - one closure per route
    router = APIRouter(tags=["config"])
    where: ConfigFile | None = (
        deps.config_runtime if isinstance(deps.config_runtime, ConfigFile) else None
    )
    if where is None:
        return router
    cfg = where

    def commit(doc: dict[str, Any]) -> dict[str, Any]:
        validate(doc)
        cfg.write(doc)
        if cfg.rebuild is not None:
            agent = cfg.rebuild(doc)
            if agent is not None:
                deps.agents[cfg.agent_name] = agent
                deps.supervisor.agents[cfg.agent_name] = agent
        profile = next((p for p in _profiles(doc) if p.get("id") == _roles(doc).get("chat")), None)
        deps.bus.emit(
            "config_changed",
            {
                "configured": profile is not None,
                "model": profile and profile.get("model"),
                "profile_id": profile and profile.get("id"),
                "name": profile and (profile.get("name") or profile.get("model")),
            },
        )
        return view(doc, cfg)

    def shown(body: Any, status: int = 200) -> JSONResponse:
        return JSONResponse(body, status_code=status, headers=_NO_STORE)

    @router.get("/api/config", summary="The model, search and skills settings (keys masked)")
    async def get_config() -> JSONResponse:
        return shown(view(cfg.read(), cfg))

    def fields(body: ProfileBody, old: dict[str, Any]) -> dict[str, Any]:
        profile = dict(old)
        profile["model"] = body.model
        for key in ("name", "base_url", "vision"):
            value = getattr(body, key)
            if value is not None:
                profile[key] = value
            else:
                profile.pop(key, None)
        if body.api_key is not None:  # None keeps the key, "" clears it
            profile["api_key"] = body.api_key or None
        if body.extra_body:
            profile["extra_body"] = body.extra_body
        else:
            profile.pop("extra_body", None)
        return profile

    @router.post("/api/config/models", status_code=201, summary="Add a model profile")
    async def add_model(body: ProfileBody) -> JSONResponse:
        doc = cfg.read()
        profiles = _profiles(doc)
        taken = {str(p.get("id")) for p in profiles}
        pid = body.id or _slug(body.name or body.model, taken)
        if pid in taken:
            raise WebError(409, "model_exists", f"a model profile {pid!r} exists", "PUT it")
        profile = fields(body, {"id": pid})
        doc["models"] = [*profiles, profile]
        roles = _roles(doc)
        roles.setdefault("chat", pid)
        roles["chat"] = roles["chat"] or pid
        doc["roles"] = roles
        commit(doc)
        return shown(view({"models": [profile]}, cfg)["models"][0], 201)

    @router.put("/api/config/models/{profile_id}", summary="Change a model profile")
    async def put_model(profile_id: str, body: ProfileBody) -> JSONResponse:
        doc = cfg.read()
        old = _find(doc, profile_id)
        new = fields(body, old)
        doc["models"] = [new if p is old else p for p in _profiles(doc)]
        return shown(commit(doc))

    @router.post(
        "/api/config/models/{profile_id}/duplicate",
        status_code=201,
        summary="Copy a model profile (its key too)",
    )
    async def duplicate_model(profile_id: str) -> JSONResponse:
        doc = cfg.read()
        old = _find(doc, profile_id)
        taken = {str(p.get("id")) for p in _profiles(doc)}
        pid = f"{profile_id}-copy"
        n = 1
        while pid in taken:
            n += 1
            pid = f"{profile_id}-copy-{n}"
        copy = {**old, "id": pid, "name": f"{old.get('name') or old.get('model')} copy"}
        doc["models"] = [*_profiles(doc), copy]
        commit(doc)
        return shown(view({"models": [copy]}, cfg)["models"][0], 201)

    @router.delete("/api/config/models/{profile_id}", summary="Remove a model profile")
    async def delete_model(profile_id: str) -> JSONResponse:
        doc = cfg.read()
        _find(doc, profile_id)
        roles = _roles(doc)
        if roles.get("chat") == profile_id:
            raise WebError(
                409,
                "model_in_use",
                f"{profile_id!r} is the chat model",
                "assign the chat role to another profile first (PUT /api/config/roles)",
            )
        doc["models"] = [p for p in _profiles(doc) if p.get("id") != profile_id]
        doc["roles"] = {k: (None if v == profile_id else v) for k, v in roles.items()}
        return shown(commit(doc))

    @router.put("/api/config/roles", summary="Assign the chat, aux and vision roles")
    async def put_roles(body: RolesBody) -> JSONResponse:
        doc = cfg.read()
        roles = _roles(doc)
        for role in body.model_fields_set:  # absent keeps, null clears
            roles[role] = getattr(body, role)
        doc["roles"] = roles
        return shown(commit(doc))

    @router.put("/api/config/search", summary="The web-search backend and its key")
    async def put_search(body: SearchBody) -> JSONResponse:
        doc = cfg.read()
        search = dict(doc.get("search") or {})
        if body.backend is not None:
            search["backend"] = body.backend
        if body.tavily_api_key is not None:
            search["tavily_api_key"] = body.tavily_api_key or None
        doc["search"] = search
        return shown(commit(doc))

    @router.put("/api/config/skills", summary="The skill directories, in order")
    async def put_skills(body: SkillsBody) -> JSONResponse:
        doc = cfg.read()
        doc["skills"] = {"dirs": body.dirs}
        return shown({"config": commit(doc)})

    @router.get("/api/config/skills", summary="What each skill directory holds")
    async def get_skills() -> JSONResponse:
        skills = cfg.read().get("skills")
        dirs = skills.get("dirs", DEFAULT_SKILL_DIRS) if isinstance(skills, dict) else None
        dirs = dirs if isinstance(dirs, list) else DEFAULT_SKILL_DIRS
        return shown({"defaults": DEFAULT_SKILL_DIRS, "roots": scan_skills(dirs)})

    return router
