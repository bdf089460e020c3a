"""duckduckgo_search() goes through the ddgs package when the ddg extra is installed (as in
0.9.119) and reads DuckDuckGo's HTML page without it; a failed search is an error result
the model reads (issue 29)."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from lovia import Agent, Runner, ToolResultEntry
from lovia.testing import ScriptedProvider, call, text
from lovia.tools import DuckDuckGoSearch, duckduckgo_search

pytest.importorskip("ddgs")


def _refused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_ddgs_is_the_backend_when_installed() -> None:
    assert DuckDuckGoSearch().backend == "ddgs"
    assert DuckDuckGoSearch(endpoint="http://127.0.0.1:1/html/").backend == "html"


def test_without_ddgs_the_html_page_is_read() -> None:
    code = (
        "import sys; sys.modules['ddgs'] = None\n"
        "from lovia.tools import DuckDuckGoSearch\n"
        "print(DuckDuckGoSearch().backend)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "html"


async def test_an_unreachable_search_is_an_error_the_model_reads() -> None:
    search = duckduckgo_search(proxy=f"http://127.0.0.1:{_refused_port()}")
    model = ScriptedProvider([call("web_search", {"query": "barn owls"}), text("no luck")])
    result = await Runner.run(Agent(name="s", model=model, tools=[search]), "owls?")
    entry = next(e for e in result.entries if isinstance(e, ToolResultEntry))
    assert entry.is_error
    assert "DuckDuckGo search failed" in entry.output and "network" in entry.output
    assert result.output == "no luck"
