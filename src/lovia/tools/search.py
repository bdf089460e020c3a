"""``web_search``: one search tool over a pluggable backend.

Any object with ``async search(query, *, max_results=5, time_range=None) ->
list[SearchResult]`` is a backend (the ``WebSearch`` protocol). Two are bundled, both over
httpx (already a core dependency): ``DuckDuckGoSearch`` searches through the ``ddgs``
package when it is installed (the ``ddg`` extra) and reads DuckDuckGo's keyless HTML endpoint
otherwise; ``TavilySearch`` calls the Tavily JSON API with a key. Each takes ``endpoint=`` so
it can be pointed at a mirror, a proxy, or a local server speaking the same wire format.
Each answer is bounded like a fetch: the timeout covers the whole exchange, and at most
``MAX_SEARCH_BYTES`` are read after decompression.
"""

from __future__ import annotations

import asyncio
import logging
import os
import zlib
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import TYPE_CHECKING, Annotated, Any, Literal, Protocol
from urllib.parse import parse_qs, urljoin, urlsplit

from .._current_call import idempotency_headers
from ..errors import ToolError, UserError
from ..http_config import resolve_verify
from ..run_context import RunContext
from ._fetch import USER_AGENT, Inflater
from .base import Tool, result_to_text, tool
from .fence import FENCE_NOTE, fence

__all__ = [
    "DUCKDUCKGO_ENDPOINT",
    "MAX_SEARCH_BYTES",
    "TAVILY_ENDPOINT",
    "DuckDuckGoSearch",
    "SearchResult",
    "TavilySearch",
    "WebSearch",
    "duckduckgo_search",
    "tavily_search",
    "web_search",
]

DUCKDUCKGO_ENDPOINT = "https://html.duckduckgo.com/html/"
TAVILY_ENDPOINT = "https://api.tavily.com/search"
_NETWORK_HINT = "network or proxy problem, not a bad query."
_LIMIT_HINT = "Tavily plan/usage limit reached."
MAX_SEARCH_BYTES = 5_000_000
"""The most bytes a search endpoint's answer may take, after decompression."""
_TAVILY_HINTS = {401: "Check TAVILY_API_KEY.", 432: _LIMIT_HINT, 433: _LIMIT_HINT}

log = logging.getLogger("lovia.tools")

if TYPE_CHECKING:  # imported when a search runs: `import lovia` stays light
    import httpx


@dataclass
class SearchResult:
    """One hit: its title, its URL and a snippet of its text."""

    title: str
    url: str
    snippet: str = ""


class WebSearch(Protocol):
    """A search backend for ``web_search``; it must allow concurrent calls. ``time_range``
    is ``"d"``, ``"w"``, ``"m"``, ``"y"`` (past day, week, month, year) or ``None``."""

    async def search(
        self, query: str, *, max_results: int = 5, time_range: str | None = None
    ) -> list[SearchResult]: ...


async def _send(host: str, timeout: float, **request: Any) -> httpx.Response:
    """One request to a search endpoint, bounded like a fetch: ``timeout`` seconds for the
    whole exchange and ``MAX_SEARCH_BYTES`` of body after decompression."""
    import httpx

    request["headers"] = {
        "Accept-Encoding": "gzip, deflate",
        **idempotency_headers(),
        **request.get("headers", {}),
    }
    try:
        async with httpx.AsyncClient(timeout=timeout, verify=resolve_verify()) as client:
            return await asyncio.wait_for(_read_capped(client, host, request), timeout)
    except (asyncio.TimeoutError, httpx.TimeoutException) as exc:
        raise ToolError(f"{host} did not answer within {timeout:g} s", hint=_NETWORK_HINT) from exc
    except zlib.error as exc:
        raise ToolError(f"{host} sent a corrupt compressed body: {exc}") from exc
    except httpx.HTTPError as exc:
        reason = str(exc) or type(exc).__name__
        raise ToolError(f"could not reach {host}: {reason}", hint=_NETWORK_HINT) from exc


async def _read_capped(
    client: httpx.AsyncClient, host: str, request: dict[str, Any]
) -> httpx.Response:
    import httpx

    async with client.stream(**request) as resp:
        encoding = resp.headers.get("content-encoding", "identity").strip().lower()
        inflater = Inflater(encoding)
        body = bytearray()
        async for chunk in resp.aiter_raw():
            body += inflater.feed(chunk, MAX_SEARCH_BYTES + 1 - len(body))
            if len(body) > MAX_SEARCH_BYTES or inflater.pending():
                raise ToolError(f"{host} answered with more than {MAX_SEARCH_BYTES} bytes")
        kept = [
            (k, v)
            for k, v in resp.headers.multi_items()
            if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")
        ]
        return httpx.Response(
            resp.status_code, headers=kept, content=bytes(body), request=resp.request
        )


class _DuckDuckGoPage(HTMLParser):
    """The hits on a DuckDuckGo HTML results page, ads left out."""

    def __init__(self, base: str) -> None:
        super().__init__(convert_charrefs=True)
        self.base = base
        self.hits: list[dict[str, Any]] = []
        self._title: list[str] | None = None  # collecting a hit's title
        self._snippet: list[str] | None = None  # collecting a hit's snippet
        self._snippet_tag = ""
        self._snippet_depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        classes = values.get("class", "").split()
        if tag == "a" and "result__a" in classes:
            self.hits.append({"url": self._target(values.get("href", "")), "title": ""})
            self._title = []
        elif "result__snippet" in classes and self.hits:
            self._snippet, self._snippet_tag, self._snippet_depth = [], tag, 1
        elif self._snippet is not None and tag == self._snippet_tag:
            self._snippet_depth += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._title is not None:
            self.hits[-1]["title"] = " ".join("".join(self._title).split())
            self._title = None
        elif self._snippet is not None and tag == self._snippet_tag:
            self._snippet_depth -= 1
            if not self._snippet_depth:
                self.hits[-1]["snippet"] = " ".join("".join(self._snippet).split())
                self._snippet = None

    def handle_data(self, data: str) -> None:
        if self._title is not None:
            self._title.append(data)
        elif self._snippet is not None:
            self._snippet.append(data)

    def _target(self, href: str) -> str:
        """The hit's own URL: DuckDuckGo may wrap it in a ``/l/?uddg=`` redirect."""
        url = urljoin(self.base, href)
        parts = urlsplit(url)
        if parts.path.startswith("/l/"):
            wrapped = parse_qs(parts.query).get("uddg")
            if wrapped:
                return wrapped[0]
        return url

    def results(self) -> list[SearchResult]:
        out = []
        for hit in self.hits:
            parts = urlsplit(hit["url"])
            if parts.path.startswith("/y.js") or parts.scheme not in ("http", "https"):
                continue  # an ad, or nothing a model can open
            out.append(SearchResult(hit["title"], hit["url"], hit.get("snippet", "")))
        return out


class DuckDuckGoSearch:
    """Keyless search through DuckDuckGo.

    With the ``ddg`` extra installed (``pip install 'lovia[ddg]'``, the ``ddgs`` package) and
    no ``endpoint``, it searches through ``ddgs``, as lovia 0.9.119 did; ``proxy`` goes to
    it. Otherwise (or with ``endpoint``, a local server in tests) it reads DuckDuckGo's HTML
    results page over httpx. DuckDuckGo limits how often one address may ask; when it does,
    the tool reports it as an error the model sees."""

    def __init__(
        self,
        *,
        endpoint: str | None = None,
        timeout: float = 30.0,
        proxy: str | None = None,
    ) -> None:
        self.timeout = timeout
        self.proxy = proxy
        self.backend = "html" if endpoint is not None else _ddgs_or_html()
        self.endpoint = endpoint or DUCKDUCKGO_ENDPOINT

    async def search(
        self, query: str, *, max_results: int = 5, time_range: str | None = None
    ) -> list[SearchResult]:
        if self.backend == "ddgs":
            return await asyncio.to_thread(self._ddgs, query, max_results, time_range)
        form = {"q": query, "b": ""}
        if time_range is not None:
            form["df"] = time_range
        host = urlsplit(self.endpoint).netloc or self.endpoint
        resp = await _send(
            host,
            self.timeout,
            method="POST",
            url=self.endpoint,
            data=form,
            headers={"User-Agent": USER_AGENT, "Referer": self.endpoint},
        )
        if resp.status_code == 202 or resp.status_code == 429:
            raise ToolError(
                f"DuckDuckGo refused the search for now (HTTP {resp.status_code})",
                hint="It limits how often one address may search: wait a minute, or use "
                "tavily_search() / your own WebSearch backend.",
            )
        if resp.status_code != 200:
            raise ToolError(f"DuckDuckGo search failed (HTTP {resp.status_code})")
        page = _DuckDuckGoPage(str(resp.url))
        page.feed(resp.text)
        page.close()
        return page.results()[:max_results]

    def _ddgs(self, query: str, max_results: int, time_range: str | None) -> list[SearchResult]:
        from ddgs import DDGS
        from ddgs.exceptions import DDGSException

        try:
            with DDGS(proxy=self.proxy, timeout=int(self.timeout)) as engine:
                rows = engine.text(query, max_results=max_results, timelimit=time_range)
        except DDGSException as exc:
            if str(exc).strip().lower().startswith("no results found"):
                return []  # every engine answered, with nothing: an answer, not a failure
            raise ToolError(f"DuckDuckGo search failed: {exc}", hint=_NETWORK_HINT) from exc
        return [
            SearchResult(
                str(r.get("title", "")),
                str(r.get("href") or r.get("url") or ""),
                str(r.get("body", "")),
            )
            for r in rows or []
            if isinstance(r, dict)
        ][:max_results]


def _ddgs_or_html() -> str:
    """``"ddgs"`` when the ``ddgs`` package can be imported, else ``"html"``."""
    try:
        import ddgs  # noqa: F401
    except ImportError:
        log.info("ddgs is not installed: DuckDuckGo search reads its HTML results page")
        return "html"
    return "ddgs"


class TavilySearch:
    """Search through the Tavily API. The key is ``api_key`` or ``TAVILY_API_KEY``; without
    one, construction raises ``UserError``. ``endpoint`` points elsewhere (a local server in
    tests, a gateway)."""

    def __init__(
        self,
        *,
        api_key: str | None = None,
        timeout: float = 30.0,
        endpoint: str = TAVILY_ENDPOINT,
    ) -> None:
        key = api_key or os.environ.get("TAVILY_API_KEY")
        if not key:
            raise UserError(
                "TavilySearch requires an API key.", hint="Set TAVILY_API_KEY or pass api_key=..."
            )
        self._api_key = key
        self.timeout = timeout
        self.endpoint = endpoint

    async def search(
        self, query: str, *, max_results: int = 5, time_range: str | None = None
    ) -> list[SearchResult]:
        payload: dict[str, Any] = {"query": query, "max_results": max_results}
        if time_range is not None:
            payload["time_range"] = time_range
        host = urlsplit(self.endpoint).netloc or self.endpoint
        resp = await _send(
            host,
            self.timeout,
            method="POST",
            url=self.endpoint,
            json=payload,
            headers={"Authorization": f"Bearer {self._api_key}"},
        )
        if resp.status_code != 200:
            raise ToolError(
                f"Tavily search failed (HTTP {resp.status_code}): {_tavily_reason(resp)}",
                hint=_TAVILY_HINTS.get(resp.status_code),
            )
        try:
            body = resp.json()
        except ValueError as exc:
            raise ToolError(f"Tavily search failed: non-JSON response from {host}.") from exc
        rows = body.get("results") if isinstance(body, dict) else None
        return [
            SearchResult(str(r.get("title", "")), str(r.get("url", "")), str(r.get("content", "")))
            for r in rows or []
            if isinstance(r, dict)
        ]


def _tavily_reason(resp: httpx.Response) -> str:
    """Tavily's error text (``{"detail": {"error": ...}}``), else the start of the body."""
    try:
        body = resp.json()
    except ValueError:
        return resp.text[:200]
    detail = body.get("detail") if isinstance(body, dict) else None
    if isinstance(detail, dict):
        return str(detail.get("error"))
    return str(detail) if detail is not None else resp.text[:200]


def _render_hits(result: Any, ctx: RunContext[Any]) -> str:
    if not isinstance(result, list):
        return result_to_text(result)
    if not result:
        return "No results."
    blocks = []
    for n, hit in enumerate(result, 1):
        lines = [f"{n}. {(hit.get('title') or '').strip() or '(untitled)'}"]
        lines += [
            v for v in ((hit.get("url") or "").strip(), (hit.get("snippet") or "").strip()) if v
        ]
        blocks.append("\n".join(lines))
    return fence("\n\n".join(blocks))


_DESCRIPTION = f"Search the web and return a list of ``{{title, url, snippet}}``.\n{FENCE_NOTE}"


def web_search(impl: WebSearch, *, name: str = "web_search") -> Tool:
    """A search tool over ``impl``. The model gives ``query``, ``max_results`` (clamped to
    1-20, default 5) and an optional ``time_range``; hits come back fenced, one numbered
    title/URL/snippet block each. Failures are retried twice."""

    @tool(name=name, description=_DESCRIPTION, retries=2, result_renderer=_render_hits)
    async def search(
        query: Annotated[str, "Search query."],
        max_results: Annotated[int, "Max results (1-20)."] = 5,
        time_range: Annotated[
            Literal["d", "w", "m", "y"] | None,
            "Optional recency filter: 'd'=past day, 'w'=week, 'm'=month, 'y'=year. "
            "Omit for no time limit.",
        ] = None,
    ) -> list[dict[str, str]]:
        count = max(1, min(int(max_results), 20))
        hits = await impl.search(query, max_results=count, time_range=time_range)
        return [{"title": h.title, "url": h.url, "snippet": h.snippet} for h in hits]

    return search


def duckduckgo_search(
    *, name: str = "web_search", endpoint: str | None = None, proxy: str | None = None
) -> Tool:
    """``web_search`` over :class:`DuckDuckGoSearch` (keyless; ``ddgs`` when installed)."""
    return web_search(DuckDuckGoSearch(endpoint=endpoint, proxy=proxy), name=name)


def tavily_search(
    *, api_key: str | None = None, name: str = "web_search", endpoint: str = TAVILY_ENDPOINT
) -> Tool:
    """``web_search`` over :class:`TavilySearch`; raises ``UserError`` now if no key is set."""
    return web_search(TavilySearch(api_key=api_key, endpoint=endpoint), name=name)
