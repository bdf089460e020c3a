"""``lovia web init-ui``: starter files for ``ChatUI(assets=...)`` that change nothing until
edited, list the page's own colour tokens, and never overwrite a file without ``--force``."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
import uvicorn

from lovia import Agent
from lovia.testing import ScriptedProvider, text
from lovia.web import ChatStore, ChatUI, create_app

LOVIA = str(Path(sys.executable).with_name("lovia"))


def init_ui(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [LOVIA, "web", "init-ui", *args], cwd=cwd, capture_output=True, text=True, timeout=60
    )


def test_it_writes_the_starters_and_keeps_what_exists(tmp_path: Path) -> None:
    done = init_ui("brand", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    theme = (tmp_path / "brand" / "theme.css").read_text()
    script = (tmp_path / "brand" / "extension.js").read_text()
    page_css = (
        Path(__import__("lovia").__file__).parent / "web" / "static" / "style.css"
    ).read_text()
    tokens = set(re.findall(r"(--[a-z0-9-]+)\s*:", page_css.split("}")[0]))
    assert tokens and tokens <= set(re.findall(r"(--[a-z0-9-]+):", theme))
    # every token commented out (the selectors stay, empty: the files alone change nothing)
    bare = re.sub(r"/\*.*?\*/", "", theme, flags=re.S)
    assert "--" not in bare
    assert [b.strip() for b in re.findall(r"\{([^{}]*)\}", bare)] == ["", "", ""]
    code = [line for line in script.splitlines() if line.strip() and not line.startswith("//")]
    assert code == ["const { lovia } = window;"]
    # its editor types: this install's lovia.d.ts, which declares window.lovia
    (types,) = re.findall(r'^/// <reference path="([^"]+)" />$', script, re.M)
    assert Path(types).name == "lovia.d.ts"
    assert "readonly lovia: Lovia.Api" in Path(types).read_text()

    (tmp_path / "brand" / "theme.css").write_text(":root { --accent: red; }\n")
    again = init_ui("brand", cwd=tmp_path)
    assert again.returncode == 1  # as 0.9.119's init-ui (other errors: 2)
    assert "theme.css" in again.stderr and "--force" in again.stderr
    assert (tmp_path / "brand" / "theme.css").read_text() == ":root { --accent: red; }\n"
    forced = init_ui("brand", "--force", cwd=tmp_path)
    assert forced.returncode == 0
    assert (tmp_path / "brand" / "theme.css").read_text() == theme


async def test_the_page_loads_them(tmp_path: Path) -> None:
    assert init_ui(cwd=tmp_path).returncode == 0  # ./ui by default
    ui = ChatUI(assets=tmp_path / "ui", styles=["theme.css"], scripts=["extension.js"])
    agent = Agent("bot", model=ScriptedProvider([text("hi")]))
    app = create_app(agent, store=ChatStore.in_memory(), titles=False, ui=ui)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
        page = (await c.get("/")).text
        assert 'href="ui/theme.css"' in page and 'src="ui/extension.js"' in page
        served = await c.get("/ui/theme.css")
        assert served.text == (tmp_path / "ui" / "theme.css").read_text()


def test_its_index_html_is_the_page_in_a_real_server(tmp_path: Path) -> None:
    # the starter template extends the bundled page with every block commented out: a server
    # given the folder serves the page as it serves the bundled one, and an edited block shows
    assert init_ui(cwd=tmp_path).returncode == 0
    template = (tmp_path / "ui" / "index.html").read_text()
    assert template.startswith('{% extends "lovia/index.html" %}')
    for block in (
        "head",
        "sidebar_header",
        "sidebar_nav",
        "sidebar_footer",
        "topbar_actions",
        "composer_actions",
        "welcome",
        "body_end",
    ):
        assert f"{{% block {block} %}}" in template

    def page(assets: Path | None) -> str:
        ui = ChatUI(assets=assets) if assets else ChatUI()
        agent = Agent("bot", model=ScriptedProvider([text("hi")]))
        app = create_app(agent, store=ChatStore.in_memory(), titles=False, ui=ui)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
        )
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        try:
            for _ in range(200):
                if server.started:
                    break
                time.sleep(0.05)
            response = httpx.get(f"http://127.0.0.1:{port}/", timeout=10)
            assert response.status_code == 200, response.text
            return response.text
        finally:
            server.should_exit = True
            thread.join(10)

    bundled = page(None)
    starter = page(tmp_path / "ui")
    assert 'id="composer"' in starter and "Help center" not in starter
    assert starter == bundled

    edited = template.replace("{% block sidebar_nav %}", "#}{% block sidebar_nav %}", 1).replace(
        "Help center</a>{% endblock %}", "Help center</a>{% endblock %}{#", 1
    )
    (tmp_path / "ui" / "index.html").write_text(edited)
    filled = page(tmp_path / "ui")
    assert '<a href="/help">Help center</a>' in filled and 'id="composer"' in filled


def test_the_0_9_119_entry_points_write_the_same_starters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """0.9.119's programs call ``lovia.web.scaffold.init_ui(dir)`` and
    ``lovia.web.__main__.main(argv)``: the same files, in order, and the same refusal."""
    from lovia.web.__main__ import main as web_main
    from lovia.web.scaffold import init_ui

    written = init_ui(tmp_path / "ui")
    assert [p.name for p in written] == ["index.html", "theme.css", "extension.js"]
    assert all(p.is_file() and p.parent == tmp_path / "ui" for p in written)
    assert written[0].read_text(encoding="utf-8").startswith('{% extends "lovia/index.html" %}')
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "theme.css").write_text("kept", encoding="utf-8")
    with pytest.raises(FileExistsError, match=r"refusing to overwrite theme\.css"):
        init_ui(mine)
    assert web_main(["init-ui", str(mine)]) == 1
    assert "refusing to overwrite" in capsys.readouterr().err
    assert (mine / "theme.css").read_text(encoding="utf-8") == "kept"
    assert not (mine / "index.html").exists()
    assert web_main(["init-ui", str(tmp_path / "fresh")]) == 0
    assert "ChatUI(assets=" in capsys.readouterr().out
    assert (tmp_path / "fresh" / "extension.js").is_file()
