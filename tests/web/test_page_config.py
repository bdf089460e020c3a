"""What the page's HTML carries of ``ChatUI`` (issue 31): a JSON data block no text can
close, the brand's stylesheets and scripts as tags, under the same CSP."""

from __future__ import annotations

import json
import re
from typing import Any

from lovia.demo import DEMO_EXAMPLES, demo_agent
from lovia.web import ChatUI
from lovia.web.page import PAGE_POLICY

from .conftest import web_app


def _config(page: str) -> Any:
    found = re.search(r'<script type="application/json" id="lovia-config">(.*?)</script>', page)
    assert found is not None
    return json.loads(found.group(1))


async def test_chat_ui_reaches_the_page_as_data_no_text_can_close(client_for: Any) -> None:
    title = "</script><script>alert(1)</script> & <!--"
    ui = ChatUI(empty_title=title, empty_examples=["a < b"], default_lang="zh")
    client = client_for(web_app(demo_agent(), ui=ui))
    response = await client.get("/")
    page = response.text
    assert response.headers["content-security-policy"] == PAGE_POLICY
    # every </script> closes one of the page's own tags (the data block, extensions.js,
    # app.js): the title's cannot end the data block early
    assert page.count("</script>") == page.count("<script") == 3
    assert "<script>alert(1)" not in page
    config = _config(page)
    assert config["empty_title"] == title and config["empty_examples"] == ["a < b"]
    assert config["default_lang"] == "zh"


async def test_the_demo_gets_its_prompts_unless_chat_ui_names_some(client_for: Any) -> None:
    demo = await client_for(web_app(demo_agent())).get("/")
    assert _config(demo.text)["empty_examples"] == list(DEMO_EXAMPLES)
    own = await client_for(web_app(demo_agent(), ui=ChatUI(empty_examples=["mine"]))).get("/")
    assert _config(own.text)["empty_examples"] == ["mine"]


async def test_brand_files_are_tags_after_the_bundled_stylesheet(
    client_for: Any, tmp_path: Any
) -> None:
    ui = ChatUI(assets=tmp_path, styles=["a.css", "/x/b.css"], scripts=['c".js'], logo="l.svg")
    page = (await client_for(web_app(demo_agent(), ui=ui)).get("/")).text
    bundled = page.index('href="static/style.css"')
    assert bundled < page.index('<link rel="stylesheet" href="ui/a.css">')
    assert '<link rel="stylesheet" href="/x/b.css">' in page
    assert '<script type="module" src="ui/c&quot;.js"></script>' in page
    assert page.index("ui/c&quot;.js") < page.index("static/app.js")
    assert _config(page)["logo"] == "ui/l.svg"
