"""The Settings routes (``/api/config/...``) on a real ``config.json``: every write is checked
whole before the file is replaced (a refused one leaves the file's bytes as they were), keys
never come back in full, the served agent follows the chat role, and the routes sit behind the
same token and loopback rules as the rest of the API."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import httpx

from lovia import Agent
from lovia.testing import ScriptedProvider, text
from lovia.web.api_config import ConfigFile

from .conftest import web_app

SECRET = "sk-secret-1234567890"


def settings(tmp_path: Path) -> tuple[Any, Path]:
    path = tmp_path / ".lovia" / "config.json"

    def rebuild(doc: dict[str, Any]) -> Agent | None:
        if not doc.get("models"):
            return None
        chat = next(m for m in doc["models"] if m["id"] == doc["roles"]["chat"])
        return Agent("assistant", model=ScriptedProvider([text(f"{chat['model']} here")] * 3))

    app = web_app({}, config_runtime=ConfigFile(path=path, agent_name="assistant", rebuild=rebuild))
    return app, path


def model(**fields: Any) -> dict[str, Any]:
    return {
        "model": "openai:gpt-4.1",
        "base_url": "https://gw.example/v1",
        "api_key": SECRET,
    } | fields


async def test_the_first_model_is_saved_masked_and_served(client_for: Any, tmp_path: Path) -> None:
    app, path = settings(tmp_path)
    c = client_for(app)
    empty = await c.get("/api/config")
    assert (empty.json()["configured"], empty.json()["missing"]) == (False, ["model"])
    assert not path.exists()  # reading never writes
    added = await c.post("/api/config/models", json=model(name="Main"))
    assert added.status_code == 201
    assert added.json()["id"] == "main"
    saved = json.loads(path.read_text())
    assert saved["models"][0]["api_key"] == SECRET and saved["roles"]["chat"] == "main"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir()] == ["config.json"]  # no temporary left
    shown = await c.get("/api/config")
    assert shown.headers["cache-control"] == "no-store"
    assert shown.json()["models"][0]["api_key"] == {"set": True, "hint": "sk-…7890"}
    assert SECRET not in shown.text and SECRET not in added.text
    assert (await c.get("/api/info")).json()["agents"] == ["assistant"]
    answer = await c.post("/api/chat", json={"message": "hi"})
    assert answer.json()["output"] == "openai:gpt-4.1 here"


async def test_a_refused_write_changes_nothing(client_for: Any, tmp_path: Path) -> None:
    app, path = settings(tmp_path)
    c = client_for(app)
    await c.post("/api/config/models", json=model(id="one"))
    await c.post("/api/config/models", json=model(id="two", model="openai:gpt-4.1-mini"))
    before = path.read_bytes()
    refusals = [
        (await c.post("/api/config/models", json=model(id="one")), 409, "model_exists"),
        (
            await c.put("/api/config/models/one", json=model(model="nosuch:m")),
            400,
            "invalid_request",
        ),
        (
            await c.post("/api/config/models", json=model(extra_body={"messages": []})),
            400,
            "invalid_request",
        ),
        (await c.put("/api/config/models/zzz", json=model()), 404, "model_not_found"),
        (await c.delete("/api/config/models/one"), 409, "model_in_use"),
        (await c.put("/api/config/roles", json={"chat": "zzz"}), 400, "invalid_request"),
        (await c.put("/api/config/roles", json={"chat": None}), 400, "invalid_request"),
        (await c.put("/api/config/skills", json={"dirs": ["  "]}), 400, "invalid_request"),
    ]
    for response, status, code in refusals:
        assert (response.status_code, response.json()["detail"]["code"]) == (status, code)
        assert response.json()["detail"]["message"]
    assert path.read_bytes() == before


async def test_keys_are_kept_replaced_or_cleared(client_for: Any, tmp_path: Path) -> None:
    app, path = settings(tmp_path)
    c = client_for(app)
    await c.post("/api/config/models", json=model(id="m"))

    def key() -> Any:
        return json.loads(path.read_text())["models"][0].get("api_key")

    plain = {"model": "openai:gpt-4.1"}
    assert (await c.put("/api/config/models/m", json=plain)).status_code == 200
    assert key() == SECRET  # absent keeps
    await c.put("/api/config/models/m", json=plain | {"api_key": "sk-other-000011112222"})
    assert key() == "sk-other-000011112222"
    await c.put("/api/config/models/m", json=plain | {"api_key": ""})
    assert key() is None
    search = await c.put(
        "/api/config/search", json={"backend": "tavily", "tavily_api_key": "tvly-abcdef-99"}
    )
    assert search.json()["search"] == {
        "backend": "tavily",
        "tavily_api_key": {"set": True, "hint": "tvl…f-99"},
    }
    assert "tvly-abcdef-99" not in search.text


async def test_the_chat_role_switches_the_served_model(client_for: Any, tmp_path: Path) -> None:
    app, path = settings(tmp_path)
    c = client_for(app)
    await c.post("/api/config/models", json=model(id="a"))
    await c.post("/api/config/models", json=model(id="b", model="openai:gpt-4.1-mini"))
    copy = await c.post("/api/config/models/b/duplicate")
    assert (copy.status_code, copy.json()["id"]) == (201, "b-copy")
    assert json.loads(path.read_text())["models"][2]["api_key"] == SECRET  # copied server-side
    await c.put("/api/config/roles", json={"chat": "b", "vision": "b-copy"})
    answer = await c.post("/api/chat", json={"message": "hi"})
    assert answer.json()["output"] == "openai:gpt-4.1-mini here"
    gone = await c.delete("/api/config/models/b-copy")
    assert gone.json()["roles"] == {"chat": "b", "aux": None, "vision": None}


async def test_skill_directories_are_listed_with_what_they_hold(
    client_for: Any, tmp_path: Path
) -> None:
    app, path = settings(tmp_path)
    c = client_for(app)
    for root, name, about in [
        (tmp_path / ".agents" / "skills", "greet", "description: Says hello."),
        (tmp_path / ".agents" / "skills", "broken", ""),
        (tmp_path / "team", "greet", "description: Another hello."),
    ]:
        (root / name).mkdir(parents=True)
        (root / name / "SKILL.md").write_text(f"---\nname: {name}\n{about}\n---\nBody.\n")
    unset = (await c.get("/api/config/skills")).json()
    assert [r["path"] for r in unset["roots"]] == [".agents/skills", "~/.agents/skills"]
    dirs = [".agents/skills", str(tmp_path / "team"), "nowhere"]
    assert (await c.put("/api/config/skills", json={"dirs": dirs})).status_code == 200
    roots = (await c.get("/api/config/skills")).json()["roots"]
    assert [(r["path"], r["kind"], r["exists"]) for r in roots] == [
        (".agents/skills", "project_default", True),
        (str(tmp_path / "team"), "custom", True),
        ("nowhere", "custom", False),
    ]
    assert roots[0]["skills"] == [
        {"name": "greet", "description": "Says hello.", "shadowed": False}
    ]
    assert [p["dir"] for p in roots[0]["problems"]] == ["broken"]
    assert roots[1]["skills"][0]["shadowed"] is True
    assert json.loads(path.read_text())["skills"] == {"dirs": dirs}


async def test_settings_need_the_token_and_a_local_caller(tmp_path: Path) -> None:
    path = tmp_path / ".lovia" / "config.json"
    guarded = web_app({}, config_runtime=ConfigFile(path=path), token="tok-123")
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=guarded), base_url="http://127.0.0.1"
    ) as c:
        assert (await c.get("/api/config")).status_code == 401
        assert (await c.post("/api/config/models", json=model())).status_code == 401
        assert not path.exists()
        allowed = await c.get("/api/config", headers={"Authorization": "Bearer tok-123"})
        assert allowed.status_code == 200
    open_app = web_app({}, config_runtime=ConfigFile(path=path))
    far = httpx.ASGITransport(app=open_app, client=("10.1.2.3", 4000))
    async with httpx.AsyncClient(transport=far, base_url="http://127.0.0.1") as c:
        assert (await c.post("/api/config/models", json=model())).status_code in (400, 403)
        assert (await c.get("/api/config")).status_code in (400, 403)
    assert not path.exists()


async def test_an_app_without_settings_has_no_config_routes(client_for: Any) -> None:
    c = client_for(web_app(Agent("bot", model=ScriptedProvider([text("hi")]))))
    assert (await c.get("/api/config")).status_code == 404
    assert (await c.get("/api/info")).json()["features"]["model_config"] is False
