"""``web_fetch``: read one URL and give the model its content.

HTML comes back as Markdown that keeps headings, lists, links, code, tables and images; JSON
compacted; text as is; binary as a line naming its type and size. The model sees three
arguments (``url``, ``images``, ``offset``); budgets are the operator's, set on the factory
and on the reader. ``HttpReader`` makes one plain GET (no JavaScript); any object with an
``async read(url, *, images=False) -> Page`` method can stand in for it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Annotated, Any, Protocol

from pydantic import Field

from ..errors import UserError
from ..run_context import RunContext
from ._fetch import (
    MAX_RESPONSE_BYTES,
    USER_AGENT,
    RawResponse,
    check_url,
    compact_json,
    decode_text,
    fetch,
    payload_text,
    shown_media_type,
)
from ._html import parse_html
from .base import Tool, result_to_text, tool
from .fence import FENCE_NOTE, fence

__all__ = ["HttpReader", "Page", "PageImage", "PageReader", "html_to_markdown", "web_fetch"]

_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
_ERROR_PAGE_CHARS = 500  # a 4xx/5xx page is a template, not worth a full budget
_SHOWN_IMAGES = 50
_LINE_BREAK_WINDOW = 200  # a clip backs up this far at most to end on a line break
_PARSE_INLINE_BYTES = 64_000  # larger bodies are converted in a worker thread


@dataclass
class PageImage:
    """An image a page references: its absolute URL and alt text."""

    url: str
    alt: str = ""


@dataclass
class Page:
    """One fetched page as the model reads it.

    ``url`` is where the content came from after redirects; ``text`` is Markdown for HTML,
    compact JSON, or plain text; ``images`` is filled when asked for; ``size_capped`` says
    the download stopped at the byte cap (no offset reaches the rest); ``next_offset`` is the
    ``offset`` to continue from, ``None`` at the end.
    """

    url: str
    status_code: int
    media_type: str
    title: str | None = None
    text: str = ""
    images: list[PageImage] = field(default_factory=list)
    size_capped: bool = False
    next_offset: int | None = None


class PageReader(Protocol):
    """A page-reading backend for ``web_fetch``; it must allow concurrent calls and should
    return the whole body (the tool clips it to its character budget)."""

    async def read(self, url: str, *, images: bool = False) -> Page: ...


def html_to_markdown(html: str, *, base_url: str = "") -> str:
    """Markdown for an HTML document: structure and links kept, scripts and styles dropped.

    Relative links and images resolve against ``base_url`` (and the document's
    ``<base href>``); without one they are dropped, their text kept."""
    return parse_html(html, base_url=base_url).markdown


def _looks_like_html(body: bytes) -> bool:
    head = body[:512].lstrip().lower()
    return head.startswith((b"<!doctype html", b"<html")) or b"<html" in head


def _page(raw: RawResponse, images: bool) -> Page:
    page = Page(raw.url, raw.status_code, raw.media_type, size_capped=raw.size_capped)
    if "html" in raw.media_type or (not raw.media_type and _looks_like_html(raw.body)):
        html = decode_text(raw.body, raw.charset, sniff_meta=True)
        doc = parse_html(html, base_url=raw.url, collect_images=images)
        page.title = doc.title
        page.text = doc.markdown or html  # markup beats nothing when the extraction is empty
        page.images = [PageImage(url, alt) for url, alt in doc.images]
    elif "json" in raw.media_type:
        page.text = compact_json(decode_text(raw.body, raw.charset))
    else:
        page.text = payload_text(raw)
    return page


class HttpReader:
    """The bundled reader: one GET per URL, parsed with the standard library.

    - ``timeout``: seconds for the whole exchange, body included.
    - ``max_bytes``: the most bytes read (after decompression); past it the page is marked
      ``size_capped``.
    - ``cache_ttl`` / ``cache_size``: responses are kept per URL this many seconds (``0``:
      never), at most this many, so that reading on with ``offset`` sees the same version.
    - ``max_redirects``: redirect hops followed before the fetch fails.
    - ``allow_private``: ``False`` refuses hosts that resolve to loopback, private,
      link-local or other non-public addresses, on every hop. The default, ``True``, reaches
      whatever the host can, as lovia 0.9.119 does.
    """

    def __init__(
        self,
        *,
        timeout: float = 30.0,
        max_bytes: int = MAX_RESPONSE_BYTES,
        user_agent: str | None = None,
        cache_ttl: float = 300.0,
        cache_size: int = 32,
        max_redirects: int = 20,
        allow_private: bool = True,
    ) -> None:
        if timeout <= 0 or max_bytes <= 0 or max_redirects < 0:
            raise UserError(
                "HttpReader needs timeout > 0, max_bytes > 0 and max_redirects >= 0",
                hint=f"got timeout={timeout!r}, max_bytes={max_bytes!r}, "
                f"max_redirects={max_redirects!r}",
            )
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.user_agent = user_agent or USER_AGENT
        self.cache_ttl = cache_ttl
        self.cache_size = max(1, cache_size)
        self.max_redirects = max_redirects
        self.allow_private = allow_private
        self._cache: OrderedDict[str, tuple[float, RawResponse]] = OrderedDict()

    async def read(self, url: str, *, images: bool = False) -> Page:
        raw = await self._response(url)
        if len(raw.body) < _PARSE_INLINE_BYTES:
            return _page(raw, images)
        # converting a large page takes a while: do it off the event loop
        return await asyncio.to_thread(_page, raw, images)

    async def _response(self, url: str) -> RawResponse:
        now = time.monotonic()
        cached = self._cache.get(url)
        if cached is not None and now - cached[0] <= self.cache_ttl:
            self._cache.move_to_end(url)
            return cached[1]
        self._cache.pop(url, None)
        raw = await fetch(
            url,
            headers={"Accept": _ACCEPT, "User-Agent": self.user_agent},
            timeout=self.timeout,
            max_bytes=self.max_bytes,
            max_redirects=self.max_redirects,
            allow_private=self.allow_private,
        )
        if self.cache_ttl > 0:
            self._cache[url] = (time.monotonic(), raw)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return raw


def _clip(text: str, offset: int, limit: int) -> tuple[str, int | None]:
    rest = text[offset:]
    if len(rest) <= limit:
        return rest, None
    cut = rest.rfind("\n", max(0, limit - _LINE_BREAK_WINDOW), limit)
    if cut <= 0:
        cut = limit
    return rest[:cut], offset + cut


def _cap_label(max_bytes: int) -> str:
    if max_bytes >= 100_000:
        return f"{max_bytes / 1e6:.1f}MB"
    return f"{max_bytes} bytes"


def _renderer(max_bytes: int) -> Any:
    def render(result: Any, ctx: RunContext[Any]) -> str:
        if not isinstance(result, Page):
            return result_to_text(result)
        status = f"HTTP {result.status_code} · {shown_media_type(result.media_type)}"
        if result.size_capped:
            status += (
                f" · download capped at {_cap_label(max_bytes)} "
                "(the rest of the page was never fetched)"
            )
        lines = [f"URL: {result.url}", status]
        content: list[str] = []
        if result.title:
            content += [f"Title: {result.title}", ""]
        if result.text:
            content += [result.text, ""]
        if result.images:
            shown = result.images[:_SHOWN_IMAGES]
            count = str(len(shown))
            if len(result.images) > len(shown):
                count += f" of {len(result.images)}"
            content.append(f"Images ({count}):")
            for n, image in enumerate(shown, 1):
                content.append(f"{n}. {image.url}" + (f" — {image.alt}" if image.alt else ""))
        while content and not content[-1]:
            content.pop()
        if content:
            lines += ["", fence("\n".join(content))]
        if result.next_offset is not None:
            lines += ["", f"[... truncated. Continue with offset={result.next_offset}.]"]
        return "\n".join(lines)

    return render


_DESCRIPTION = (
    "Fetch a URL and return its content: web pages as Markdown, JSON compacted, plain text "
    "as-is.\n"
    "- Headings, lists, links and images are kept, so [text](url) in the result is a real "
    "URL you can fetch next.\n"
    "- images=true also lists every image the page references, deduplicated, including those "
    "Markdown cannot show inline (srcset, <picture>, og:image).\n"
    "- Long content is cut short; the notice at the end gives the offset to continue from.\n"
    "- GET only, no custom headers, and no JavaScript runs: a page built in the browser may "
    "come back nearly empty.\n"
    f"- {FENCE_NOTE}"
)


def web_fetch(
    impl: PageReader | None = None, *, name: str = "web_fetch", max_chars: int = 20_000
) -> Tool:
    """A tool reading one URL per call through ``impl`` (a fresh ``HttpReader`` by default,
    so no two tools share a cache). ``max_chars`` bounds the text per call; the rest stays
    reachable with ``offset``. Network failures are retried twice (it only ever GETs)."""
    if max_chars <= 0:
        raise UserError(f"web_fetch: max_chars must be > 0, got {max_chars!r}")
    reader: PageReader = impl if impl is not None else HttpReader()
    cap = reader.max_bytes if isinstance(reader, HttpReader) else MAX_RESPONSE_BYTES

    @tool(name=name, description=_DESCRIPTION, retries=2, result_renderer=_renderer(cap))
    async def fetch_page(
        url: Annotated[str, "Absolute http:// or https:// URL."],
        images: Annotated[bool, "Also list every image the page references."] = False,
        offset: Annotated[
            int, Field(ge=0, description="Resume reading at this character offset.")
        ] = 0,
    ) -> Page:
        check_url(url)
        page = await reader.read(url, images=images)
        ok = 200 <= page.status_code < 300
        text, next_offset = _clip(
            page.text, offset, max_chars if ok else min(max_chars, _ERROR_PAGE_CHARS)
        )
        # a copy: a custom reader may hand out a page it keeps
        return dataclasses.replace(page, text=text, next_offset=next_offset)

    return fetch_page
