"""``lovia web`` (and ``lovia chat``) without ``--app`` or ``LOVIA_MODEL`` take the model lovia
0.9.119's Settings -> Models saved in ``config.json``: the project's ``./.lovia/`` first,
then the user's ``~/.lovia/``; its chat role picks the profile; a broken file is a clear
error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lovia.cli.common import load_agents
from lovia.errors import UserError


def _write(root: Path, doc: dict[str, Any]) -> None:
    (root / ".lovia").mkdir(parents=True, exist_ok=True)
    (root / ".lovia" / "config.json").write_text(json.dumps(doc), encoding="utf-8")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("LOVIA_MODEL", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    return tmp_path / "home"


def _profile(model: str, url: str) -> dict[str, Any]:
    return {"id": model, "model": f"openai:{model}", "api_key": "sk-x", "base_url": url}


def test_the_user_scope_model_is_served(home: Path) -> None:
    _write(home, {"version": 1, "models": [_profile("gpt-x", "http://127.0.0.1:9/v1")]})
    (agent,) = load_agents(None, False).values()
    assert (agent.model.model, agent.model.base_url) == ("gpt-x", "http://127.0.0.1:9/v1")


def test_the_project_scope_wins_and_the_chat_role_picks(home: Path, tmp_path: Path) -> None:
    _write(home, {"version": 1, "models": [_profile("user-model", "http://127.0.0.1:9/v1")]})
    _write(
        tmp_path,
        {
            "version": 1,
            "models": [
                _profile("a", "http://127.0.0.1:7/v1"),
                _profile("b", "http://127.0.0.1:8/v1"),
            ],
            "roles": {"chat": "b"},
        },
    )
    (agent,) = load_agents(None, False).values()
    assert agent.model.model == "b"


def test_an_environment_model_still_comes_first(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(home, {"version": 1, "models": [_profile("gpt-x", "http://127.0.0.1:9/v1")]})
    monkeypatch.setenv("LOVIA_MODEL", "openai:from-env")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    (agent,) = load_agents(None, False).values()
    assert agent.model == "openai:from-env"


def test_a_broken_file_is_an_error_that_names_it(home: Path) -> None:
    (home / ".lovia").mkdir(parents=True)
    (home / ".lovia" / "config.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(UserError, match=r"config\.json"):
        load_agents(None, False)


def test_no_file_and_no_variable_serves_nothing(home: Path) -> None:
    assert load_agents(None, False) == {}


async def test_settings_edit_the_file_lovia_web_serves_from(home: Path) -> None:
    import httpx

    from lovia.cli import build_parser
    from lovia.cli.web import settings
    from lovia.cli.web_options import resolve
    from lovia.web import ChatStore, create_app

    _write(home, {"version": 1, "models": [_profile("gpt-x", "http://127.0.0.1:9/v1")]})
    args = build_parser().parse_args(["web"])
    resolve(args)
    agents = load_agents(None, False)
    app = create_app(
        agents, store=ChatStore.in_memory(), titles=False, config_runtime=settings(args, agents)
    )
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
        added = await c.post(
            "/api/config/models",
            json={"id": "y", "model": "openai:gpt-y", "api_key": "sk-yyyyyyyyyy"},
        )
        assert added.status_code == 201
        assert (await c.put("/api/config/roles", json={"chat": "y"})).status_code == 200
    saved = json.loads((home / ".lovia" / "config.json").read_text())  # the scope it was read from
    assert [m["id"] for m in saved["models"]] == ["gpt-x", "y"]
    assert app.state.deps.agents["lovia"].model.model == "gpt-y"
    # with --app, LOVIA_MODEL or --demo the agent is not the file's: no settings routes
    assert settings(build_parser().parse_args(["web", "--demo"]), agents) is None
